"""Tasks in PostgreSQL: the task file's records and promises in a table, one driver per task.

`PostgresLogStore` is a `LogStore` whose records live in a database: the record logic
(header and pin check, numbering, id claims, compaction, resume) is the file store's own;
this module says only how records are appended, read and leased. Each row holds the same
JSON line a task file holds, so a new record kind needs no change here. Sync only.

Tables, created on first use in an empty database (one transaction, under an advisory
lock, so two first users do not race)::

    nisse_schema (version)                      one row: the layout's version
    nisse_task_records (task, seq, record)      a record per row; primary key (task, seq)
    nisse_task_leases (task, holder, since, pid)  who drives each task, and since when

Migration rule: the version only grows. A store that finds an older version upgrades it,
one version at a time, in one transaction under the same lock; a newer version than it
knows is refused (`TaskStoreUnavailable`), never written to.

An append (a batch included) is one transaction; it returns only after the commit, so an
acknowledged record is on the server and an unacknowledged one is whole or absent (no
torn rows). The lease is a session advisory lock on the store's own connection: the
server releases it when that session ends, so a holder that dies (SIGKILL: its socket
closes at once) frees its tasks immediately, and a machine that vanishes frees them when
TCP keepalive gives up on it (``keepalives_*`` below: within about 25 s). No clock and no
heartbeat are involved; a pooler in transaction mode would break it (connect directly).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import Any, Literal

import psycopg
from psycopg.conninfo import conninfo_to_dict
from pydantic import SecretStr

from nisse_llm.errors import TaskBusy, TaskStoreUnavailable
from nisse_llm.task.dsn import redacted_url, scrubbed
from nisse_llm.task.logstore import LogRead, LogStore
from nisse_llm.task.records import StoredRecord

__all__ = ["SCHEMA_VERSION", "PostgresLogStore", "task_keys"]

#: The version of the tables' layout this store writes (see the migration rule above).
SCHEMA_VERSION: Literal[1] = 1
# The lock taken while creating or upgrading the tables (any constant both sides agree on).
_SCHEMA_LOCK = 0x6E69_7373_6500
_CREATE = (
    "CREATE TABLE IF NOT EXISTS nisse_schema (version integer NOT NULL)",
    "CREATE TABLE IF NOT EXISTS nisse_task_records ("
    " task text NOT NULL, seq bigint NOT NULL CHECK (seq >= 0), record text NOT NULL,"
    " PRIMARY KEY (task, seq))",
    "CREATE TABLE IF NOT EXISTS nisse_task_leases ("
    " task text PRIMARY KEY, holder text NOT NULL, since timestamptz NOT NULL, pid integer)",
)
#: Upgrades by the version they start from: each turns it into the next (none yet).
_MIGRATIONS: dict[int, tuple[str, ...]] = {}
# TCP keepalive on both ends: the server drops a vanished client's session (and its
# lease) within idle + interval * count seconds, and the client notices a vanished server.
_KEEPALIVE = {"keepalives": "1", "keepalives_idle": "10", "keepalives_interval": "5"}
_KEEPALIVE_COUNT = "3"
_SERVER_KEEPALIVE = (
    "-c tcp_keepalives_idle=10 -c tcp_keepalives_interval=5 -c tcp_keepalives_count=3"
)
_CONNECT_TIMEOUT_S = "10"


class PostgresLogStore(LogStore):
    """One task's records in PostgreSQL, keyed by ``key``: the task file's promises, and a
    lease so one driver writes at a time (`TaskBusy` for a second).

    ``url`` is a ``postgresql://`` URL (its password is a secret: never shown; TLS and other
    options in it pass through to psycopg). ``holder`` names this driver in `TaskBusy` and
    ``nisse-llm task list`` (default: host and process id). The lease is taken by the first
    write, `begin` or `resume`, and held until `close`; reading never needs it.
    """

    def __init__(self, url: str | SecretStr, key: str, *, holder: str | None = None) -> None:
        if not key:
            raise ValueError("a task key must not be empty")
        secret = url if isinstance(url, SecretStr) else SecretStr(url)
        self._url = secret
        self.key = key
        self.holder = holder or f"{socket.gethostname()} pid {os.getpid()}"
        self._conn: psycopg.Connection[Any] | None = None
        self._leased = False
        # The task's last number, known only inside a transaction (read once there).
        self._last: int | None = None
        self._last_known = False
        self._init_records()

    @property
    def url(self) -> str:
        """The database URL without its password (what messages show)."""
        return redacted_url(self._url)

    @property
    def _where(self) -> str:
        return f"{self.url} task {self.key!r}"

    def __repr__(self) -> str:
        return f"PostgresLogStore({self.url!r}, {self.key!r})"

    def close(self) -> None:
        """Close the connection: the lease ends with it (reopened by the next use)."""
        with self._lock:
            self._drop()

    def lease(self) -> None:
        """Take the task's lease now rather than at the first write (`TaskBusy` naming its
        holder); it is the store's own, held until `close`."""
        with self._exclusive():
            pass

    @property
    def next_seq(self) -> int:
        """The sequence number the next `append_event` will use (0 for an empty log)."""
        with self._lock, self._translated():
            row = self._connection().execute(
                "SELECT max(seq) FROM nisse_task_records WHERE task = %s", (self.key,)
            )
            last = _one(row)
        return 0 if last is None else int(last) + 1

    def read(self) -> LogRead:
        """Every record of the task, in order (an unknown key is an empty log); no lease."""
        with self._lock, self._translated():
            return self._decode(self._lines(self._connection()))

    def export_lines(self) -> list[bytes]:
        """Every record's line as stored (no newline), in order: ``task export``."""
        with self._lock, self._translated():
            lines = list(self._lines(self._connection()))
        self._decode(lines)
        return lines

    @contextmanager
    def _exclusive(self) -> Iterator[None]:
        """The lease, then one transaction: committed as the block ends, rolled back (and
        the id cache forgotten) if it raises."""
        with self._lock, self._translated():
            try:
                conn = self._connection()
                self._take_lease(conn)
                with conn.transaction():
                    yield
            except BaseException:
                self._ids = None
                raise
            finally:
                self._last_known = False

    def _x_check_begun(self) -> None:
        """Nothing to check before the lease: an unknown key reads as an empty log."""

    def _x_last_seq(self) -> int | None:
        # Read once per transaction: under the lease no one else appends meanwhile.
        if not self._last_known:
            row = self._connection().execute(
                "SELECT max(seq) FROM nisse_task_records WHERE task = %s", (self.key,)
            )
            last = _one(row)
            self._last, self._last_known = None if last is None else int(last), True
        return self._last

    def _x_state(self) -> object:
        return self._x_last_seq()

    def _x_read(self) -> LogRead:
        return self._decode(self._lines(self._connection()))

    def _x_first(self) -> StoredRecord:
        cursor = self._connection().execute(
            "SELECT record FROM nisse_task_records WHERE task = %s ORDER BY seq LIMIT 1",
            (self.key,),
        )
        return self._decode([str(_one(cursor)).encode()]).records[0]

    def _x_repair(self) -> bytes | None:
        """Nothing to repair: a row is committed whole or not at all."""
        return None

    def _x_write(self, batch: Sequence[StoredRecord], lines: Sequence[bytes] | None = None) -> None:
        last = self._check_batch(self._x_last_seq(), batch)
        encoded = lines if lines is not None else self._encode(batch)
        with self._connection().cursor() as cursor:
            cursor.executemany(
                "INSERT INTO nisse_task_records (task, seq, record) VALUES (%s, %s, %s)",
                [(self.key, r.seq, line.decode()) for r, line in zip(batch, encoded, strict=True)],
            )
        self._last = last

    def _lines(self, conn: psycopg.Connection[Any]) -> Iterator[bytes]:
        cursor = conn.execute(
            "SELECT record FROM nisse_task_records WHERE task = %s ORDER BY seq", (self.key,)
        )
        for (record,) in cursor:
            yield str(record).encode()

    def _connection(self) -> psycopg.Connection[Any]:
        """The store's connection, opened (and the tables made ready) on first use or after
        the last one broke; a broken connection ended the lease with it."""
        if self._conn is not None and self._conn.broken:
            self._drop()
        if self._conn is None:
            self._conn = connect(self._url, holder=self.holder)
        return self._conn

    def _take_lease(self, conn: psycopg.Connection[Any]) -> None:
        """Hold this task's lease on ``conn``, or raise `TaskBusy` naming its holder."""
        if self._leased:
            return
        got = _one(
            conn.execute("SELECT pg_try_advisory_lock(hashtextextended(%s, 0))", (self.key,))
        )
        if not got:
            row = conn.execute(
                "SELECT holder, since FROM nisse_task_leases WHERE task = %s", (self.key,)
            ).fetchone()
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
            "INSERT INTO nisse_task_leases (task, holder, since, pid)"
            " VALUES (%s, %s, now(), pg_backend_pid()) ON CONFLICT (task) DO UPDATE"
            " SET holder = excluded.holder, since = excluded.since, pid = excluded.pid",
            (self.key, self.holder),
        )
        self._leased = True

    def _drop(self) -> None:
        conn, leased = self._conn, self._leased
        self._conn, self._leased, self._ids = None, False, None
        if conn is None:
            return
        if leased and not conn.broken:
            # Unlocked before the close returns: the session's own end comes a moment later.
            with suppress(psycopg.Error):
                conn.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", (self.key,))
        conn.close()

    @contextmanager
    def _translated(self) -> Iterator[None]:
        """`translated`, and a broken connection dropped (the next use reconnects)."""
        try:
            with translated(self._url):
                yield
        except TaskStoreUnavailable:
            if self._conn is not None and (self._conn.broken or self._conn.closed):
                self._drop()
            raise


def connect(url: SecretStr, *, holder: str = "nisse_llm") -> psycopg.Connection[Any]:
    """A connection to ``url`` (autocommit; keepalives both ways and a connect timeout,
    each unless the URL sets its own), its tables created or upgraded (`ensure_schema`)."""
    with translated(url):
        given = conninfo_to_dict(url.get_secret_value())
        options: dict[str, Any] = {**_KEEPALIVE, "keepalives_count": _KEEPALIVE_COUNT}
        options |= {"connect_timeout": _CONNECT_TIMEOUT_S, "application_name": holder[:63]}
        options["options"] = _SERVER_KEEPALIVE
        extra = {k: v for k, v in options.items() if k not in given}
        conn = psycopg.connect(url.get_secret_value(), autocommit=True, **extra)
        try:
            ensure_schema(conn)
        except BaseException:
            conn.close()
            raise
        return conn


def ensure_schema(conn: psycopg.Connection[Any]) -> None:
    """Create the tables in an empty database, upgrade older ones; refuse newer ones."""
    found = _schema_version(conn)
    if found == SCHEMA_VERSION:
        return
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
        for statement in _CREATE:
            conn.execute(statement)
        row = conn.execute("SELECT version FROM nisse_schema").fetchone()
        version = None if row is None else int(row[0])
        if version is None:
            conn.execute("INSERT INTO nisse_schema (version) VALUES (%s)", (SCHEMA_VERSION,))
            return
        if version > SCHEMA_VERSION:
            raise TaskStoreUnavailable(
                f"the database's task tables are version {version}, newer than this "
                f"nisse_llm writes ({SCHEMA_VERSION}): upgrade nisse_llm"
            )
        while version < SCHEMA_VERSION:
            for statement in _MIGRATIONS[version]:
                conn.execute(statement)
            version += 1
        conn.execute("UPDATE nisse_schema SET version = %s", (version,))


def _schema_version(conn: psycopg.Connection[Any]) -> int | None:
    exists = _one(conn.execute("SELECT to_regclass('nisse_schema') IS NOT NULL"))
    if not exists:
        return None
    row = conn.execute("SELECT version FROM nisse_schema").fetchone()
    return None if row is None else int(row[0])


def task_keys(url: str | SecretStr) -> list[dict[str, Any]]:
    """Every task in the database: key, records, last activity and live lease holder (one
    whose session still holds the lock), ordered by key."""
    secret = url if isinstance(url, SecretStr) else SecretStr(url)
    with translated(secret), connect(secret) as conn:
        rows = conn.execute(
            "SELECT r.task, count(*), l.holder, l.since,"
            " EXISTS (SELECT 1 FROM pg_locks p WHERE p.locktype = 'advisory'"
            "  AND p.pid = l.pid AND p.granted)"
            " FROM nisse_task_records r LEFT JOIN nisse_task_leases l ON l.task = r.task"
            " GROUP BY r.task, l.holder, l.since, l.pid ORDER BY r.task"
        ).fetchall()
    return [
        {"key": task, "records": int(count), "holder": holder if live else None, "since": since}
        for task, count, holder, since, live in rows
    ]


@contextmanager
def translated(url: SecretStr) -> Iterator[None]:
    """Every psycopg error as `TaskStoreUnavailable`, its message without the URL's password
    (and without the psycopg exception chained, whose text might hold it)."""
    try:
        yield
    except psycopg.Error as exc:
        message = scrubbed(str(exc).strip() or type(exc).__name__, url)
        raise TaskStoreUnavailable(
            f"the task store at {redacted_url(url)} failed ({type(exc).__name__}: {message}); "
            "the work is kept: resume the task when the database is back",
            sqlstate=exc.sqlstate,
        ) from None


def _one(cursor: psycopg.Cursor[Any]) -> Any:
    row = cursor.fetchone()
    return None if row is None else row[0]
