# Generated from nisse_llm/task/_async/postgres.py by scripts/gen_sync.py (unasync); do not edit.
"""Tasks in PostgreSQL, written once: `PostgresTaskStore` on psycopg's async
connection; ``_sync/postgres.py`` (`PostgresTaskStore`) is generated from this source by
``tests/gen_sync.py``. `nisse_llm.task.postgres` says what the stores promise.

The record logic is every store's (`TaskStore`); this module says only how records
are appended, read and leased.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import Any, Self

import psycopg
from pydantic import SecretStr

from nisse_llm.errors import TaskBusy, TaskStoreMisconfigured, TaskStoreUnavailable
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
from nisse_llm.task._sync.store import TaskStore
from nisse_llm.task.dsn import redacted_url
from nisse_llm.task.keys import check_task_key
from nisse_llm.task.records import StoredRecord

__all__ = [
    "PostgresTaskStore",
    "connect",
    "ensure_schema",
    "migrate",
    "migrate_database",
    "task_keys",
]


class PostgresTaskStore(TaskStore):
    """One task's records in PostgreSQL, keyed by ``key``: the task file's promises, and a
    lease so one driver writes at a time (`TaskBusy` for a second).

    ``key`` is a task key (`check_task_key`: `ConfigError` for another string). ``url`` is a
    ``postgresql://`` URL (its password is a secret: never shown; TLS and other
    options in it pass through to psycopg). ``holder`` names this driver in `TaskBusy` and
    ``nisse-llm task list`` (default: host and process id). The lease is taken by the first
    write, `begin` or `resume`, and held until `close`; reading never needs it.

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
        self._conn: psycopg.Connection[Any] | None = None
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

    def close(self) -> None:
        """Close the connection: the lease ends with it (reopened by the next use)."""
        with self._lock:
            self._drop()

    def abandon(self) -> None:
        """End the session, and the lease with it, without a round trip or an (a
        task dropped open does, from its finalizer, where nothing can be awaited): libpq
        sends its goodbye and closes the socket at once, for the async connection too; the
        server then frees the advisory lock as the session ends (a moment later, not at
        process exit). The next use reconnects."""
        conn = self._conn
        self._conn, self._leased, self._ids, self._known = None, False, None, None
        if conn is not None and not conn.closed:
            conn.pgconn.finish()

    def lease(self) -> None:
        """Take the task's lease now rather than at the first write (`TaskBusy` naming its
        holder); it is the store's own, held until `close`."""
        with self._exclusive():
            pass

    def _next_seq(self) -> int:
        with self._lock, self._translated():
            last = _one((self._connection()).execute(self._last_seq_sql, (self.key,)))
        return 0 if last is None else int(last) + 1

    def read(self) -> LogRead:
        """Every record of the task, in order (an unknown key is an empty log); no lease.
        While this store holds the lease, the records it read or wrote last are not fetched
        again unless the task's last number moved (no one else may replace them)."""
        with self._lock, self._translated():
            if not self._leased:
                return decode(self._lines(), self._where)
            last = _one((self._connection()).execute(self._last_seq_sql, (self.key,)))
            state = None if last is None else int(last)
            if self._known is None or self._known[0] != state:
                self._known = (state, decode(self._lines(), self._where))
            return self._known[1]

    def export_lines(self) -> list[bytes]:
        """Every record's line as stored (no newline), in order: ``task export``."""
        with self._lock, self._translated():
            lines = self._lines()
        decode(lines, self._where)
        return lines

    @contextmanager
    def _exclusive(self) -> Iterator[None]:
        """The lease, then one transaction: committed as the block ends, rolled back (and
        the id cache forgotten) if it raises. A block left by anything but an error of the
        store or of the record logic (a cancellation, an interrupt) drops the connection:
        whatever it was sending is then committed whole or rolled back by the server, and
        the next use reconnects and takes the lease again."""
        with self._lock, self._translated():
            try:
                conn = self._connection()
                self._take_lease(conn)
                with conn.transaction():
                    yield
            except Exception:
                self._ids, self._known = None, None  # rolled back: nothing of it is known
                raise
            except BaseException:
                self._ids, self._known = None, None
                self._drop()
                raise
            finally:
                self._last_known = False

    def _x_check_begun(self) -> None:
        """Nothing to check before the lease: an unknown key reads as an empty log."""

    def _x_last_seq(self) -> int | None:
        # Read once per transaction: under the lease no one else appends meanwhile.
        if not self._last_known:
            conn = self._connection()
            last = _one(conn.execute(self._last_seq_sql, (self.key,)))
            self._last, self._last_known = None if last is None else int(last), True
        return self._last

    def _x_state(self) -> object:
        return self._x_last_seq()

    def _x_read(self) -> LogRead:
        return decode(self._lines(), self._where)

    def _x_first(self) -> StoredRecord:
        cursor = (self._connection()).execute(
            f"SELECT record FROM {self._tables.records} WHERE task = %s ORDER BY seq LIMIT 1",
            (self.key,),
        )
        return decode([str(_one(cursor)).encode()], self._where).records[0]

    def _x_repair(self) -> bytes | None:
        """Nothing to repair: a row is committed whole or not at all."""
        return None

    def _x_write(self, batch: Sequence[StoredRecord], lines: Sequence[bytes] | None = None) -> None:
        last = check_batch(self._where, self._x_last_seq(), batch)
        encoded = lines if lines is not None else encode(batch)
        rows = [(self.key, r.seq, line.decode()) for r, line in zip(batch, encoded, strict=True)]
        with (self._connection()).cursor() as cursor:
            cursor.executemany(
                f"INSERT INTO {self._tables.records} (task, seq, record) VALUES (%s, %s, %s)",
                rows,
            )
        self._last = last

    def _x_clear(self) -> None:
        """Delete the task's records, in the transaction that writes its new ones."""
        (self._connection()).execute(
            f"DELETE FROM {self._tables.records} WHERE task = %s", (self.key,)
        )
        self._last, self._last_known = None, True

    def _x_delete(self) -> None:
        """Delete the task's records and its lease row, in one transaction."""
        self._x_clear()
        (self._connection()).execute(
            f"DELETE FROM {self._tables.leases} WHERE task = %s", (self.key,)
        )

    def _lines(self) -> list[bytes]:
        cursor = (self._connection()).execute(
            f"SELECT record FROM {self._tables.records} WHERE task = %s ORDER BY seq", (self.key,)
        )
        return [str(record).encode() for (record,) in cursor.fetchall()]

    def _connection(self) -> psycopg.Connection[Any]:
        """The store's connection, opened (and the tables made ready) on first use or after
        the last one broke; a broken connection ended the lease with it."""
        if self._conn is not None and self._conn.broken:
            self._drop()
        if self._conn is None:
            self._conn = connect(
                self._url, holder=self.holder, schema=self._tables.schema, **self._timeouts
            )
        return self._conn

    def _take_lease(self, conn: psycopg.Connection[Any]) -> None:
        """Hold this task's lease on ``conn``, or raise `TaskBusy` naming its holder."""
        if self._leased:
            return
        got = _one(
            conn.execute("SELECT pg_try_advisory_lock(hashtextextended(%s, 0))", (self.key,))
        )
        if not got:
            cursor = conn.execute(
                f"SELECT holder, since FROM {self._tables.leases} WHERE task = %s", (self.key,)
            )
            row = cursor.fetchone()
            holder, since = (None, None) if row is None else (str(row[0]), row[1])
            held = f"held by {holder} since {since:%Y-%m-%d %H:%M:%S %Z}" if row else "held"
            raise TaskBusy(
                f"{self._where}: another driver holds this task ({held}); leave it to that "
                "driver, or resume it once that driver has closed or died",
                task=self.key,
                holder=holder,
                since=since,
            )
        conn.execute(
            f"INSERT INTO {self._tables.leases} (task, holder, since, pid)"
            " VALUES (%s, %s, now(), pg_backend_pid()) ON CONFLICT (task) DO UPDATE"
            " SET holder = excluded.holder, since = excluded.since, pid = excluded.pid",
            (self.key, self.holder),
        )
        self._leased = True

    def _drop(self) -> None:
        conn, leased = self._conn, self._leased
        self._conn, self._leased, self._ids, self._known = None, False, None, None
        if conn is None:
            return
        if leased and not conn.broken:
            # Unlocked before the close returns: the session's own end comes a moment later.
            with suppress(psycopg.Error):
                conn.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", (self.key,))
        conn.close()

    @property
    def _last_seq_sql(self) -> str:
        return f"SELECT max(seq) FROM {self._tables.records} WHERE task = %s"

    @contextmanager
    def _translated(self) -> Iterator[None]:
        """`translated`, and a broken connection dropped (the next use reconnects)."""
        try:
            with translated(self._url):
                yield
        except (TaskStoreUnavailable, TaskStoreMisconfigured):
            if self._conn is not None and (self._conn.broken or self._conn.closed):
                self._drop()
            raise


def connect(
    url: SecretStr,
    *,
    holder: str = "nisse_llm",
    schema: str = DEFAULT_SCHEMA,
    statement_timeout_s: float = STATEMENT_TIMEOUT_S,
    lock_timeout_s: float = LOCK_TIMEOUT_S,
) -> psycopg.Connection[Any]:
    """A connection to ``url`` (autocommit; keepalives both ways, a connect timeout and the
    statement and lock timeouts, each unless the URL sets its own), its tables checked
    (`ensure_schema`)."""
    options = connect_options(
        url, holder, statement_timeout_s=statement_timeout_s, lock_timeout_s=lock_timeout_s
    )
    with translated(url):
        conn = psycopg.Connection.connect(url.get_secret_value(), autocommit=True, **options)
        try:
            ensure_schema(conn, schema)
        except BaseException:
            conn.close()
            raise
        return conn


def ensure_schema(conn: psycopg.Connection[Any], schema: str = DEFAULT_SCHEMA) -> None:
    """Check that the tables in ``schema`` are this version's; in an empty database, make
    them where the role may. Tables of an older layout, or a role that may not make them,
    are `TaskStoreMisconfigured` saying to run ``nisse-llm task migrate``; newer ones are
    refused (`TaskStoreUnavailable`)."""
    tables = Tables(schema)
    version = _version(conn, tables.version)
    if version == SCHEMA_VERSION:
        return
    if version is not None and version > SCHEMA_VERSION:
        raise newer_schema(version)
    if version is None and _version(conn, "public.nisse_schema") is None:
        try:
            migrate(conn, schema)
        except psycopg.errors.InsufficientPrivilege as exc:
            why = f"and this role may not create them ({exc})"
            raise _run_migrate(schema, why, sqlstate=exc.sqlstate) from None
        return
    raise _run_migrate(schema, f"but are of an older layout (version {version or 1})")


def migrate(conn: psycopg.Connection[Any], schema: str = DEFAULT_SCHEMA) -> list[str]:
    """Bring the tables in ``schema`` to this version, in one transaction under the schema
    lock: create them in an empty database (``sql/schema.sql``), or apply each numbered
    migration after the version found (the previous layout, version 1, is the tables in
    ``public``). Returns what was done, one line a step (none: already current).

    A session that waited on the lock while another made the tables can still miss them:
    its catalog cache was read when its transaction began, before the wait. The attempt
    then fails as a duplicate, and is made once more in a new transaction, which sees
    them."""
    try:
        return _migrate_once(conn, schema)
    except (psycopg.errors.DuplicateTable, psycopg.errors.DuplicateSchema):
        return _migrate_once(conn, schema)


def _migrate_once(conn: psycopg.Connection[Any], schema: str) -> list[str]:
    tables = Tables(schema)
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
        version = _version(conn, tables.version)
        if version is None:
            version = _version(conn, "public.nisse_schema")
        if version is None:
            conn.execute(create_sql(schema))
            return [f"created the task tables in schema {schema} (version {SCHEMA_VERSION})"]
        if version > SCHEMA_VERSION:
            raise newer_schema(version)
        done = []
        for step, (name, script) in sorted(migration_sql(schema).items()):
            if version < step <= SCHEMA_VERSION:
                conn.execute(script)
                done.append(f"applied {name}: version {step - 1} -> {step}")
        return done


def migrate_database(url: str | SecretStr, *, schema: str = DEFAULT_SCHEMA) -> list[str]:
    """`migrate` the database at ``url`` (``nisse-llm task migrate``): what was done."""
    secret = url if isinstance(url, SecretStr) else SecretStr(url)
    options = connect_options(secret, "nisse-llm task migrate")
    with (
        translated(secret),
        psycopg.Connection.connect(secret.get_secret_value(), autocommit=True, **options) as conn,
    ):
        return migrate(conn, schema)


def _run_migrate(schema: str, why: str, *, sqlstate: str | None = None) -> TaskStoreMisconfigured:
    return TaskStoreMisconfigured(
        f"the task tables in schema {schema} are not this nisse_llm's (version "
        f"{SCHEMA_VERSION}) {why}: run `nisse-llm task migrate` once, as a role that may "
        "create and alter them, then start the workers",
        sqlstate=sqlstate,
    )


def _version(conn: psycopg.Connection[Any], table: str) -> int | None:
    """The version row of ``table`` (a qualified name), None where there is no such table."""
    if not _one(conn.execute("SELECT to_regclass(%s) IS NOT NULL", (table,))):
        return None
    row = (conn.execute(f"SELECT version FROM {table}")).fetchone()
    return None if row is None else int(row[0])


def task_keys(url: str | SecretStr, *, schema: str = DEFAULT_SCHEMA) -> list[dict[str, Any]]:
    """Every task in the database: key, records, last activity and live lease holder (one
    whose session still holds the lock), ordered by key."""
    secret = url if isinstance(url, SecretStr) else SecretStr(url)
    tables = Tables(schema)
    with translated(secret), connect(secret, schema=schema) as conn:
        cursor = conn.execute(
            "SELECT r.task, count(*), l.holder, l.since,"
            " EXISTS (SELECT 1 FROM pg_locks p WHERE p.locktype = 'advisory'"
            "  AND p.pid = l.pid AND p.granted)"
            f" FROM {tables.records} r LEFT JOIN {tables.leases} l ON l.task = r.task"
            " GROUP BY r.task, l.holder, l.since, l.pid ORDER BY r.task"
        )
        rows = cursor.fetchall()
    return [
        {"key": task, "records": int(count), "holder": holder if live else None, "since": since}
        for task, count, holder, since, live in rows
    ]


def _one(cursor: psycopg.Cursor[Any]) -> Any:
    row = cursor.fetchone()
    return None if row is None else row[0]
