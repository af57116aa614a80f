"""The connection pools the async PostgreSQL stores share, written once: one per database,
schema and timeouts (and event loop), so connections grow with concurrent statements, not
with open tasks; ``_sync/pgpool.py`` is generated from this source by ``scripts/gen_sync.py``.

Every connection is autocommit and prepares nothing (``prepare_threshold=None``): no
state outlives a transaction, so a pooler in transaction mode (PgBouncer) may stand
between. A pool's first connection is made here, not by its workers: a refused login or
a server that is down is said at once in the server's words; the tables' version is
checked (`ensure_schema`) on each connection as it is made. A pool whose connection broke is forgotten (closed): the
next use makes a new one, so a restarted server is found again at once.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import psycopg
from psycopg_pool import AsyncConnectionPool, PoolTimeout
from pydantic import SecretStr

from nisse_llm.task._async import io
from nisse_llm.task._async.pgschema import connect, ensure_schema
from nisse_llm.task._pg import POOL_MAX, connect_options, translated

__all__ = ["AsyncStorePool", "close_pools", "store_pool"]

#: How long a statement waits for a free connection when all ``POOL_MAX`` are busy.
_WAIT_S = 30.0
_NAME = "nisse_llm task store"


class AsyncStorePool:
    """A shared `AsyncConnectionPool` and what it was made for."""

    def __init__(self, key: tuple[Any, ...], pool: AsyncConnectionPool[Any]) -> None:
        self._key = key
        self.pool = pool

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
        """A connection of the pool for one statement or transaction; the pool forgotten
        if the connection broke or none came (the caller translates the error)."""
        broken = False
        try:
            async with self.pool.connection() as conn:
                try:
                    yield conn
                except psycopg.OperationalError:
                    broken = conn.broken
                    raise
        except PoolTimeout:
            broken = True
            raise
        finally:
            if broken:
                await self.forget()

    async def forget(self) -> None:
        """Close the pool and make the next use open a new one."""
        pools = io.shared()
        if pools.get(self._key) is self:
            del pools[self._key]
        await self.pool.close(timeout=1.0)


async def store_pool(
    url: SecretStr, schema: str, statement_timeout_s: float, lock_timeout_s: float
) -> AsyncStorePool:
    """The pool the stores of ``url`` and ``schema`` share, made (its tables checked) on
    first use."""
    key = ("task-store", url.get_secret_value(), schema, statement_timeout_s, lock_timeout_s)
    pools = io.shared()
    found: AsyncStorePool | None = pools.get(key)
    if found is not None and not found.pool.closed:
        return found
    timeouts = {"statement_timeout_s": statement_timeout_s, "lock_timeout_s": lock_timeout_s}
    with translated(url):
        first = await connect(url, holder=_NAME, schema=schema, **timeouts)
        await first.close()
    options = connect_options(url, _NAME, **timeouts)

    async def checked(conn: psycopg.AsyncConnection[Any]) -> None:
        await ensure_schema(conn, schema)

    pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
        url.get_secret_value(),
        kwargs={"autocommit": True, "prepare_threshold": None, **options},
        min_size=0,
        max_size=POOL_MAX,
        open=False,
        configure=checked,
        name=_NAME,
        timeout=_WAIT_S,
    )
    await pool.open()
    made = AsyncStorePool(key, pool)
    kept: AsyncStorePool = pools.setdefault(key, made)
    if kept is not made:  # another thread made one meanwhile: use that one
        await pool.close(timeout=0)
    return kept


async def close_pools() -> None:
    """Close every pool the stores of this process (of this event loop, for async stores)
    share; the next use opens new ones (after a fork, or to see a schema change at once)."""
    pools = io.shared()
    for key in [key for key in pools if key[0] == "task-store"]:
        await pools.pop(key).pool.close()
