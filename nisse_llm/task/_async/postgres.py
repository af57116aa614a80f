"""Tasks in PostgreSQL, written once: `AsyncPostgresTaskStore` on psycopg's async
connection; ``_sync/postgres.py`` (`PostgresTaskStore`) is generated from this source by
``tests/gen_sync.py``. `nisse_llm.task.postgres` says what the stores promise.

The record logic is every store's (`AsyncTaskStore`); this module says only how records
are appended, read and leased.
"""

from __future__ import annotations

import os
import socket
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager, suppress
from typing import Any

import psycopg
from pydantic import SecretStr

from nisse_llm.errors import TaskBusy, TaskStoreMisconfigured, TaskStoreUnavailable
from nisse_llm.task._async.store import AsyncTaskStore
from nisse_llm.task._logread import LogRead, check_batch, decode, encode
from nisse_llm.task._pg import (
    CREATE,
    MIGRATIONS,
    SCHEMA_LOCK,
    SCHEMA_VERSION,
    connect_options,
    newer_schema,
    translated,
)
from nisse_llm.task.dsn import redacted_url
from nisse_llm.task.keys import check_task_key
from nisse_llm.task.records import StoredRecord

__all__ = ["AsyncPostgresTaskStore", "connect", "ensure_schema", "task_keys"]

_LAST_SEQ = "SELECT max(seq) FROM nisse_task_records WHERE task = %s"
_LINES = "SELECT record FROM nisse_task_records WHERE task = %s ORDER BY seq"


class AsyncPostgresTaskStore(AsyncTaskStore):
    """One task's records in PostgreSQL, keyed by ``key``: the task file's promises, and a
    lease so one driver writes at a time (`TaskBusy` for a second).

    ``key`` is a task key (`check_task_key`: `ConfigError` for another string). ``url`` is a
    ``postgresql://`` URL (its password is a secret: never shown; TLS and other
    options in it pass through to psycopg). ``holder`` names this driver in `TaskBusy` and
    ``nisse-llm task list`` (default: host and process id). The lease is taken by the first
    write, `begin` or `resume`, and held until `aclose`; reading never needs it.
    """

    def __init__(self, url: str | SecretStr, key: str, *, holder: str | None = None) -> None:
        super().__init__()
        check_task_key(key)
        secret = url if isinstance(url, SecretStr) else SecretStr(url)
        self._url = secret
        self.key = key
        self.holder = holder or f"{socket.gethostname()} pid {os.getpid()}"
        self._conn: psycopg.AsyncConnection[Any] | None = None
        self._leased = False
        # The task's last number, known only inside a transaction (read once there).
        self._last: int | None = None
        self._last_known = False

    @property
    def url(self) -> str:
        """The database URL without its password (what messages show)."""
        return redacted_url(self._url)

    @property
    def _where(self) -> str:
        return f"{self.url} task {self.key!r}"

    @property
    def place(self) -> tuple[str, ...]:
        """The database URL (as given) and the task's key."""
        return ("postgres", self._url.get_secret_value(), self.key)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.url!r}, {self.key!r})"

    async def aclose(self) -> None:
        """Close the connection: the lease ends with it (reopened by the next use)."""
        async with self._lock:
            await self._drop()

    async def lease(self) -> None:
        """Take the task's lease now rather than at the first write (`TaskBusy` naming its
        holder); it is the store's own, held until `aclose`."""
        async with self._exclusive():
            pass

    async def _next_seq(self) -> int:
        async with self._lock, self._translated():
            last = await _one(await (await self._connection()).execute(_LAST_SEQ, (self.key,)))
        return 0 if last is None else int(last) + 1

    async def read(self) -> LogRead:
        """Every record of the task, in order (an unknown key is an empty log); no lease."""
        async with self._lock, self._translated():
            return decode(await self._lines(), self._where)

    async def export_lines(self) -> list[bytes]:
        """Every record's line as stored (no newline), in order: ``task export``."""
        async with self._lock, self._translated():
            lines = await self._lines()
        decode(lines, self._where)
        return lines

    @asynccontextmanager
    async def _exclusive(self) -> AsyncIterator[None]:
        """The lease, then one transaction: committed as the block ends, rolled back (and
        the id cache forgotten) if it raises. A block left by anything but an error of the
        store or of the record logic (a cancellation, an interrupt) drops the connection:
        whatever it was sending is then committed whole or rolled back by the server, and
        the next use reconnects and takes the lease again."""
        async with self._lock, self._translated():
            try:
                conn = await self._connection()
                await self._take_lease(conn)
                async with conn.transaction():
                    yield
            except Exception:
                self._ids = None
                raise
            except BaseException:
                self._ids = None
                await self._drop()
                raise
            finally:
                self._last_known = False

    async def _x_check_begun(self) -> None:
        """Nothing to check before the lease: an unknown key reads as an empty log."""

    async def _x_last_seq(self) -> int | None:
        # Read once per transaction: under the lease no one else appends meanwhile.
        if not self._last_known:
            last = await _one(await (await self._connection()).execute(_LAST_SEQ, (self.key,)))
            self._last, self._last_known = None if last is None else int(last), True
        return self._last

    async def _x_state(self) -> object:
        return await self._x_last_seq()

    async def _x_read(self) -> LogRead:
        return decode(await self._lines(), self._where)

    async def _x_first(self) -> StoredRecord:
        cursor = await (await self._connection()).execute(
            "SELECT record FROM nisse_task_records WHERE task = %s ORDER BY seq LIMIT 1",
            (self.key,),
        )
        return decode([str(await _one(cursor)).encode()], self._where).records[0]

    async def _x_repair(self) -> bytes | None:
        """Nothing to repair: a row is committed whole or not at all."""
        return None

    async def _x_write(
        self, batch: Sequence[StoredRecord], lines: Sequence[bytes] | None = None
    ) -> None:
        last = check_batch(self._where, await self._x_last_seq(), batch)
        encoded = lines if lines is not None else encode(batch)
        rows = [(self.key, r.seq, line.decode()) for r, line in zip(batch, encoded, strict=True)]
        async with (await self._connection()).cursor() as cursor:
            await cursor.executemany(
                "INSERT INTO nisse_task_records (task, seq, record) VALUES (%s, %s, %s)", rows
            )
        self._last = last

    async def _x_clear(self) -> None:
        """Delete the task's records, in the transaction that writes its new ones."""
        await (await self._connection()).execute(
            "DELETE FROM nisse_task_records WHERE task = %s", (self.key,)
        )
        self._last, self._last_known = None, True

    async def _lines(self) -> list[bytes]:
        cursor = await (await self._connection()).execute(_LINES, (self.key,))
        return [str(record).encode() for (record,) in await cursor.fetchall()]

    async def _connection(self) -> psycopg.AsyncConnection[Any]:
        """The store's connection, opened (and the tables made ready) on first use or after
        the last one broke; a broken connection ended the lease with it."""
        if self._conn is not None and self._conn.broken:
            await self._drop()
        if self._conn is None:
            self._conn = await connect(self._url, holder=self.holder)
        return self._conn

    async def _take_lease(self, conn: psycopg.AsyncConnection[Any]) -> None:
        """Hold this task's lease on ``conn``, or raise `TaskBusy` naming its holder."""
        if self._leased:
            return
        got = await _one(
            await conn.execute("SELECT pg_try_advisory_lock(hashtextextended(%s, 0))", (self.key,))
        )
        if not got:
            cursor = await conn.execute(
                "SELECT holder, since FROM nisse_task_leases WHERE task = %s", (self.key,)
            )
            row = await cursor.fetchone()
            holder, since = (None, None) if row is None else (str(row[0]), row[1])
            held = f"held by {holder} since {since:%Y-%m-%d %H:%M:%S %Z}" if row else "held"
            raise TaskBusy(
                f"{self._where}: another driver holds this task ({held}); leave it to that "
                "driver, or resume it once that driver has closed or died",
                task=self.key,
                holder=holder,
                since=since,
            )
        await conn.execute(
            "INSERT INTO nisse_task_leases (task, holder, since, pid)"
            " VALUES (%s, %s, now(), pg_backend_pid()) ON CONFLICT (task) DO UPDATE"
            " SET holder = excluded.holder, since = excluded.since, pid = excluded.pid",
            (self.key, self.holder),
        )
        self._leased = True

    async def _drop(self) -> None:
        conn, leased = self._conn, self._leased
        self._conn, self._leased, self._ids = None, False, None
        if conn is None:
            return
        if leased and not conn.broken:
            # Unlocked before the close returns: the session's own end comes a moment later.
            with suppress(psycopg.Error):
                await conn.execute(
                    "SELECT pg_advisory_unlock(hashtextextended(%s, 0))", (self.key,)
                )
        await conn.close()

    @asynccontextmanager
    async def _translated(self) -> AsyncIterator[None]:
        """`translated`, and a broken connection dropped (the next use reconnects)."""
        try:
            with translated(self._url):
                yield
        except (TaskStoreUnavailable, TaskStoreMisconfigured):
            if self._conn is not None and (self._conn.broken or self._conn.closed):
                await self._drop()
            raise


async def connect(url: SecretStr, *, holder: str = "nisse_llm") -> psycopg.AsyncConnection[Any]:
    """A connection to ``url`` (autocommit; keepalives both ways and a connect timeout,
    each unless the URL sets its own), its tables created or upgraded (`ensure_schema`)."""
    with translated(url):
        conn = await psycopg.AsyncConnection.connect(
            url.get_secret_value(), autocommit=True, **connect_options(url, holder)
        )
        try:
            await ensure_schema(conn)
        except BaseException:
            await conn.close()
            raise
        return conn


async def ensure_schema(conn: psycopg.AsyncConnection[Any]) -> None:
    """Create the tables in an empty database, upgrade older ones; refuse newer ones."""
    if await _schema_version(conn) == SCHEMA_VERSION:
        return
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
        for statement in CREATE:
            await conn.execute(statement)
        row = await (await conn.execute("SELECT version FROM nisse_schema")).fetchone()
        version = None if row is None else int(row[0])
        if version is None:
            await conn.execute("INSERT INTO nisse_schema (version) VALUES (%s)", (SCHEMA_VERSION,))
            return
        if version > SCHEMA_VERSION:
            raise newer_schema(version)
        while version < SCHEMA_VERSION:
            for statement in MIGRATIONS[version]:
                await conn.execute(statement)
            version += 1
        await conn.execute("UPDATE nisse_schema SET version = %s", (version,))


async def _schema_version(conn: psycopg.AsyncConnection[Any]) -> int | None:
    if not await _one(await conn.execute("SELECT to_regclass('nisse_schema') IS NOT NULL")):
        return None
    row = await (await conn.execute("SELECT version FROM nisse_schema")).fetchone()
    return None if row is None else int(row[0])


async def task_keys(url: str | SecretStr) -> list[dict[str, Any]]:
    """Every task in the database: key, records, last activity and live lease holder (one
    whose session still holds the lock), ordered by key."""
    secret = url if isinstance(url, SecretStr) else SecretStr(url)
    with translated(secret):
        async with await connect(secret) as conn:
            cursor = await conn.execute(
                "SELECT r.task, count(*), l.holder, l.since,"
                " EXISTS (SELECT 1 FROM pg_locks p WHERE p.locktype = 'advisory'"
                "  AND p.pid = l.pid AND p.granted)"
                " FROM nisse_task_records r LEFT JOIN nisse_task_leases l ON l.task = r.task"
                " GROUP BY r.task, l.holder, l.since, l.pid ORDER BY r.task"
            )
            rows = await cursor.fetchall()
    return [
        {"key": task, "records": int(count), "holder": holder if live else None, "since": since}
        for task, count, holder, since, live in rows
    ]


async def _one(cursor: psycopg.AsyncCursor[Any]) -> Any:
    row = await cursor.fetchone()
    return None if row is None else row[0]
