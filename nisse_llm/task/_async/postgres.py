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
from typing import Any, Self

import psycopg
from pydantic import SecretStr

from nisse_llm.errors import TaskBusy, TaskStoreMisconfigured, TaskStoreUnavailable
from nisse_llm.task._async.store import AsyncTaskStore
from nisse_llm.task._logread import LogRead, check_batch, decode, encode
from nisse_llm.task._pg import (
    DEFAULT_SCHEMA,
    LOCK_TIMEOUT_S,
    SCHEMA_LOCK,
    SCHEMA_VERSION,
    STATEMENT_TIMEOUT_S,
    Tables,
    connect_options,
    create_sql,
    migration_sql,
    newer_schema,
    translated,
)
from nisse_llm.task.dsn import redacted_url
from nisse_llm.task.keys import check_task_key
from nisse_llm.task.records import StoredRecord

__all__ = [
    "AsyncPostgresTaskStore",
    "connect",
    "ensure_schema",
    "migrate",
    "migrate_database",
    "task_keys",
]


class AsyncPostgresTaskStore(AsyncTaskStore):
    """One task's records in PostgreSQL, keyed by ``key``: the task file's promises, and a
    lease so one driver writes at a time (`TaskBusy` for a second).

    ``key`` is a task key (`check_task_key`: `ConfigError` for another string). ``url`` is a
    ``postgresql://`` URL (its password is a secret: never shown; TLS and other
    options in it pass through to psycopg). ``holder`` names this driver in `TaskBusy` and
    ``nisse-llm task list`` (default: host and process id). The lease is taken by the first
    write, `begin` or `resume`, and held until `aclose`; reading never needs it.

    The tables live in ``schema`` (``nisse``; made by ``nisse-llm task migrate``, or by the
    first use where the role may). Each statement may run ``statement_timeout_s`` and wait
    for a lock ``lock_timeout_s`` (0: no limit) before it fails, the work kept.
    """

    def __init__(
        self,
        url: str | SecretStr,
        key: str,
        *,
        holder: str | None = None,
        schema: str = DEFAULT_SCHEMA,
        statement_timeout_s: float = STATEMENT_TIMEOUT_S,
        lock_timeout_s: float = LOCK_TIMEOUT_S,
    ) -> None:
        super().__init__()
        check_task_key(key)
        secret = url if isinstance(url, SecretStr) else SecretStr(url)
        self._url = secret
        self._tables = Tables(schema)
        self._timeouts = {
            "statement_timeout_s": statement_timeout_s,
            "lock_timeout_s": lock_timeout_s,
        }
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
        """The database URL (as given), the schema and the task's key."""
        return ("postgres", self._url.get_secret_value(), self._tables.schema, self.key)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.url!r}, {self.key!r})"

    @property
    def task_key(self) -> str:
        """The task's key."""
        return self.key

    def sibling(self, key: str) -> Self:
        """Task ``key`` of the same database (a sub-task's store)."""
        return type(self)(
            self._url, key, holder=self.holder, schema=self._tables.schema, **self._timeouts
        )

    async def aclose(self) -> None:
        """Close the connection: the lease ends with it (reopened by the next use)."""
        async with self._lock:
            await self._drop()

    def abandon(self) -> None:
        """End the session, and the lease with it, without a round trip or an await (a
        task dropped open does, from its finalizer, where nothing can be awaited): libpq
        sends its goodbye and closes the socket at once, for the async connection too; the
        server then frees the advisory lock as the session ends (a moment later, not at
        process exit). The next use reconnects."""
        conn = self._conn
        self._conn, self._leased, self._ids, self._known = None, False, None, None
        if conn is not None and not conn.closed:
            conn.pgconn.finish()

    async def lease(self) -> None:
        """Take the task's lease now rather than at the first write (`TaskBusy` naming its
        holder); it is the store's own, held until `aclose`."""
        async with self._exclusive():
            pass

    async def _next_seq(self) -> int:
        async with self._lock, self._translated():
            last = await _one(
                await (await self._connection()).execute(self._last_seq_sql, (self.key,))
            )
        return 0 if last is None else int(last) + 1

    async def read(self) -> LogRead:
        """Every record of the task, in order (an unknown key is an empty log); no lease.
        While this store holds the lease, the records it read or wrote last are not fetched
        again unless the task's last number moved (no one else may replace them)."""
        async with self._lock, self._translated():
            if not self._leased:
                return decode(await self._lines(), self._where)
            last = await _one(
                await (await self._connection()).execute(self._last_seq_sql, (self.key,))
            )
            state = None if last is None else int(last)
            if self._known is None or self._known[0] != state:
                self._known = (state, decode(await self._lines(), self._where))
            return self._known[1]

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
                self._ids, self._known = None, None  # rolled back: nothing of it is known
                raise
            except BaseException:
                self._ids, self._known = None, None
                await self._drop()
                raise
            finally:
                self._last_known = False

    async def _x_check_begun(self) -> None:
        """Nothing to check before the lease: an unknown key reads as an empty log."""

    async def _x_last_seq(self) -> int | None:
        # Read once per transaction: under the lease no one else appends meanwhile.
        if not self._last_known:
            conn = await self._connection()
            last = await _one(await conn.execute(self._last_seq_sql, (self.key,)))
            self._last, self._last_known = None if last is None else int(last), True
        return self._last

    async def _x_state(self) -> object:
        return await self._x_last_seq()

    async def _x_read(self) -> LogRead:
        return decode(await self._lines(), self._where)

    async def _x_first(self) -> StoredRecord:
        cursor = await (await self._connection()).execute(
            f"SELECT record FROM {self._tables.records} WHERE task = %s ORDER BY seq LIMIT 1",
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
                f"INSERT INTO {self._tables.records} (task, seq, record) VALUES (%s, %s, %s)",
                rows,
            )
        self._last = last

    async def _x_clear(self) -> None:
        """Delete the task's records, in the transaction that writes its new ones."""
        await (await self._connection()).execute(
            f"DELETE FROM {self._tables.records} WHERE task = %s", (self.key,)
        )
        self._last, self._last_known = None, True

    async def _x_delete(self) -> None:
        """Delete the task's records and its lease row, in one transaction."""
        await self._x_clear()
        await (await self._connection()).execute(
            f"DELETE FROM {self._tables.leases} WHERE task = %s", (self.key,)
        )

    async def _lines(self) -> list[bytes]:
        cursor = await (await self._connection()).execute(
            f"SELECT record FROM {self._tables.records} WHERE task = %s ORDER BY seq", (self.key,)
        )
        return [str(record).encode() for (record,) in await cursor.fetchall()]

    async def _connection(self) -> psycopg.AsyncConnection[Any]:
        """The store's connection, opened (and the tables made ready) on first use or after
        the last one broke; a broken connection ended the lease with it."""
        if self._conn is not None and self._conn.broken:
            await self._drop()
        if self._conn is None:
            self._conn = await connect(
                self._url, holder=self.holder, schema=self._tables.schema, **self._timeouts
            )
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
                f"SELECT holder, since FROM {self._tables.leases} WHERE task = %s", (self.key,)
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
            f"INSERT INTO {self._tables.leases} (task, holder, since, pid)"
            " VALUES (%s, %s, now(), pg_backend_pid()) ON CONFLICT (task) DO UPDATE"
            " SET holder = excluded.holder, since = excluded.since, pid = excluded.pid",
            (self.key, self.holder),
        )
        self._leased = True

    async def _drop(self) -> None:
        conn, leased = self._conn, self._leased
        self._conn, self._leased, self._ids, self._known = None, False, None, None
        if conn is None:
            return
        if leased and not conn.broken:
            # Unlocked before the close returns: the session's own end comes a moment later.
            with suppress(psycopg.Error):
                await conn.execute(
                    "SELECT pg_advisory_unlock(hashtextextended(%s, 0))", (self.key,)
                )
        await conn.close()

    @property
    def _last_seq_sql(self) -> str:
        return f"SELECT max(seq) FROM {self._tables.records} WHERE task = %s"

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


async def connect(
    url: SecretStr,
    *,
    holder: str = "nisse_llm",
    schema: str = DEFAULT_SCHEMA,
    statement_timeout_s: float = STATEMENT_TIMEOUT_S,
    lock_timeout_s: float = LOCK_TIMEOUT_S,
) -> psycopg.AsyncConnection[Any]:
    """A connection to ``url`` (autocommit; keepalives both ways, a connect timeout and the
    statement and lock timeouts, each unless the URL sets its own), its tables checked
    (`ensure_schema`)."""
    options = connect_options(
        url, holder, statement_timeout_s=statement_timeout_s, lock_timeout_s=lock_timeout_s
    )
    with translated(url):
        conn = await psycopg.AsyncConnection.connect(
            url.get_secret_value(), autocommit=True, **options
        )
        try:
            await ensure_schema(conn, schema)
        except BaseException:
            await conn.close()
            raise
        return conn


async def ensure_schema(conn: psycopg.AsyncConnection[Any], schema: str = DEFAULT_SCHEMA) -> None:
    """Check that the tables in ``schema`` are this version's; in an empty database, make
    them where the role may. Tables of an older layout, or a role that may not make them,
    are `TaskStoreMisconfigured` saying to run ``nisse-llm task migrate``; newer ones are
    refused (`TaskStoreUnavailable`)."""
    tables = Tables(schema)
    version = await _version(conn, tables.version)
    if version == SCHEMA_VERSION:
        return
    if version is not None and version > SCHEMA_VERSION:
        raise newer_schema(version)
    if version is None and await _version(conn, "public.nisse_schema") is None:
        try:
            await migrate(conn, schema)
        except psycopg.errors.InsufficientPrivilege as exc:
            why = f"and this role may not create them ({exc})"
            raise _run_migrate(schema, why, sqlstate=exc.sqlstate) from None
        return
    raise _run_migrate(schema, f"but are of an older layout (version {version or 1})")


async def migrate(conn: psycopg.AsyncConnection[Any], schema: str = DEFAULT_SCHEMA) -> list[str]:
    """Bring the tables in ``schema`` to this version, in one transaction under the schema
    lock: create them in an empty database (``sql/schema.sql``), or apply each numbered
    migration after the version found (the previous layout, version 1, is the tables in
    ``public``). Returns what was done, one line a step (none: already current).

    A session that waited on the lock while another made the tables can still miss them:
    its catalog cache was read when its transaction began, before the wait. The attempt
    then fails as a duplicate, and is made once more in a new transaction, which sees
    them."""
    try:
        return await _migrate_once(conn, schema)
    except (psycopg.errors.DuplicateTable, psycopg.errors.DuplicateSchema):
        return await _migrate_once(conn, schema)


async def _migrate_once(conn: psycopg.AsyncConnection[Any], schema: str) -> list[str]:
    tables = Tables(schema)
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
        version = await _version(conn, tables.version)
        if version is None:
            version = await _version(conn, "public.nisse_schema")
        if version is None:
            await conn.execute(create_sql(schema))
            return [f"created the task tables in schema {schema} (version {SCHEMA_VERSION})"]
        if version > SCHEMA_VERSION:
            raise newer_schema(version)
        done = []
        for step, (name, script) in sorted(migration_sql(schema).items()):
            if version < step <= SCHEMA_VERSION:
                await conn.execute(script)
                done.append(f"applied {name}: version {step - 1} -> {step}")
        return done


async def migrate_database(url: str | SecretStr, *, schema: str = DEFAULT_SCHEMA) -> list[str]:
    """`migrate` the database at ``url`` (``nisse-llm task migrate``): what was done."""
    secret = url if isinstance(url, SecretStr) else SecretStr(url)
    options = connect_options(secret, "nisse-llm task migrate")
    with translated(secret):
        async with await psycopg.AsyncConnection.connect(
            secret.get_secret_value(), autocommit=True, **options
        ) as conn:
            return await migrate(conn, schema)


def _run_migrate(schema: str, why: str, *, sqlstate: str | None = None) -> TaskStoreMisconfigured:
    return TaskStoreMisconfigured(
        f"the task tables in schema {schema} are not this nisse_llm's (version "
        f"{SCHEMA_VERSION}) {why}: run `nisse-llm task migrate` once, as a role that may "
        "create and alter them, then start the workers",
        sqlstate=sqlstate,
    )


async def _version(conn: psycopg.AsyncConnection[Any], table: str) -> int | None:
    """The version row of ``table`` (a qualified name), None where there is no such table."""
    if not await _one(await conn.execute("SELECT to_regclass(%s) IS NOT NULL", (table,))):
        return None
    row = await (await conn.execute(f"SELECT version FROM {table}")).fetchone()
    return None if row is None else int(row[0])


async def task_keys(url: str | SecretStr, *, schema: str = DEFAULT_SCHEMA) -> list[dict[str, Any]]:
    """Every task in the database: key, records, last activity and live lease holder (one
    whose session still holds the lock), ordered by key."""
    secret = url if isinstance(url, SecretStr) else SecretStr(url)
    tables = Tables(schema)
    with translated(secret):
        async with await connect(secret, schema=schema) as conn:
            cursor = await conn.execute(
                "SELECT r.task, count(*), l.holder, l.since,"
                " EXISTS (SELECT 1 FROM pg_locks p WHERE p.locktype = 'advisory'"
                "  AND p.pid = l.pid AND p.granted)"
                f" FROM {tables.records} r LEFT JOIN {tables.leases} l ON l.task = r.task"
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
