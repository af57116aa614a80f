# Generated from nisse_llm/task/_async/pgpool.py by scripts/gen_sync.py (unasync); do not edit.
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

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool, PoolTimeout
from pydantic import SecretStr

from nisse_llm.task._pg import POOL_MAX, connect_options, translated
from nisse_llm.task._sync import io
from nisse_llm.task._sync.pgschema import connect, ensure_schema

__all__ = ["StorePool", "close_pools", "store_pool"]

#: How long a statement waits for a free connection when all ``POOL_MAX`` are busy.
_WAIT_S = 30.0
_NAME = "nisse_llm task store"


class StorePool:
    """A shared `ConnectionPool` and what it was made for."""

    def __init__(self, key: tuple[Any, ...], pool: ConnectionPool[Any]) -> None:
        self._key = key
        self.pool = pool

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection[Any]]:
        """A connection of the pool for one statement or transaction; the pool forgotten
        if the connection broke or none came (the caller translates the error)."""
        broken = False
        try:
            with self.pool.connection() as conn:
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
                self.forget()

    def forget(self) -> None:
        """Close the pool and make the next use open a new one."""
        pools = io.shared()
        if pools.get(self._key) is self:
            del pools[self._key]
        self.pool.close(timeout=1.0)


def store_pool(
    url: SecretStr, schema: str, statement_timeout_s: float, lock_timeout_s: float
) -> StorePool:
    """The pool the stores of ``url`` and ``schema`` share, made (its tables checked) on
    first use."""
    key = ("task-store", url.get_secret_value(), schema, statement_timeout_s, lock_timeout_s)
    pools = io.shared()
    found: StorePool | None = pools.get(key)
    if found is not None and not found.pool.closed:
        return found
    timeouts = {"statement_timeout_s": statement_timeout_s, "lock_timeout_s": lock_timeout_s}
    with translated(url):
        first = connect(url, holder=_NAME, schema=schema, **timeouts)
        first.close()
    options = connect_options(url, _NAME, **timeouts)

    def checked(conn: psycopg.Connection[Any]) -> None:
        ensure_schema(conn, schema)

    pool: ConnectionPool[Any] = ConnectionPool(
        url.get_secret_value(),
        kwargs={"autocommit": True, "prepare_threshold": None, **options},
        min_size=0,
        max_size=POOL_MAX,
        open=False,
        configure=checked,
        name=_NAME,
        timeout=_WAIT_S,
    )
    pool.open()
    made = StorePool(key, pool)
    kept: StorePool = pools.setdefault(key, made)
    if kept is not made:  # another thread made one meanwhile: use that one
        pool.close(timeout=0)
    return kept


def close_pools() -> None:
    """Close every pool the stores of this process (of this event loop, for async stores)
    share; the next use opens new ones (after a fork, or to see a schema change at once)."""
    pools = io.shared()
    for key in [key for key in pools if key[0] == "task-store"]:
        pools.pop(key).pool.close()
