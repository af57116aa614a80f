# Generated from nisse_llm/task/_async/postgres.py by scripts/gen_sync.py (unasync); do not edit.
"""Tasks in PostgreSQL, written once: `PostgresTaskStore` on psycopg's async
connection; ``_sync/postgres.py`` (`PostgresTaskStore`) is generated from this source by
``scripts/gen_sync.py``. `nisse_llm.task.postgres` says what the stores promise.

The record logic is every store's (`TaskStore`); this module says only how records
are appended, read and leased; its pools are ``pgpool.py``'s, its tables' version
``pgschema.py``'s.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import Any, Self

import psycopg
from pydantic import SecretStr

from nisse_llm.errors import (
    ConfigError,
    LogSequenceError,
    TaskBusy,
    TaskStoreMisconfigured,
    TaskStoreUnavailable,
)
from nisse_llm.task._logread import LogRead, check_batch, decode, encode
from nisse_llm.task._pg import (
    DEFAULT_SCHEMA,
    HEARTBEAT_S,
    LEASE_S,
    LOCK_TIMEOUT_S,
    STATEMENT_TIMEOUT_S,
    Tables,
    standing_values,
    translated,
)
from nisse_llm.task._sync import io
from nisse_llm.task._sync.pgpool import StorePool, close_pools, store_pool
from nisse_llm.task._sync.pgschema import connect, ensure_schema, migrate, migrate_database
from nisse_llm.task._sync.store import TaskStore
from nisse_llm.task.dsn import redacted_url
from nisse_llm.task.keys import check_task_key
from nisse_llm.task.records import StoredRecord

__all__ = [
    "PostgresTaskStore",
    "close_pools",
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
    write, `begin` or `resume`, renewed every ``heartbeat_s`` while the task is open, and
    released by `close`; a holder that stops renewing loses it ``lease_s`` after its last
    renewal. Reading never needs it.

    The tables live in ``schema`` (``nisse``; made by ``nisse-llm task migrate``, or by the
    first use where the role may). Each statement may run ``statement_timeout_s`` and wait
    for a lock ``lock_timeout_s`` (0: no limit) before it fails, the work kept.
    """

    #: A row is committed whole or not at all: a batch needs no guard record.
    _atomic_writes = True

    def __init__(
        self,
        url: str | SecretStr,
        key: str,
        *,
        holder: str | None = None,
        schema: str = DEFAULT_SCHEMA,
        statement_timeout_s: float = STATEMENT_TIMEOUT_S,
        lock_timeout_s: float = LOCK_TIMEOUT_S,
        lease_s: float = LEASE_S,
        heartbeat_s: float = HEARTBEAT_S,
    ) -> None:
        super().__init__()
        check_task_key(key)
        if not 0 < heartbeat_s < lease_s:
            raise ConfigError(
                f"the lease's heartbeat ({heartbeat_s} s) must come more often than the "
                f"lease runs out ({lease_s} s)"
            )
        secret = url if isinstance(url, SecretStr) else SecretStr(url)
        self._url = secret
        self._tables = Tables(schema)
        self._timeouts = {
            "statement_timeout_s": statement_timeout_s,
            "lock_timeout_s": lock_timeout_s,
        }
        self._lease_s = lease_s
        self._heartbeat_s = heartbeat_s
        self.key = key
        self.holder = holder or f"{socket.gethostname()} pid {os.getpid()}"
        self._conn: psycopg.Connection[Any] | None = None
        # The lease: its epoch (kept after a doubt, to take it again as its own), whether
        # it is surely held, and the task's next number while it is.
        self._epoch: int | None = None
        self._leased = False
        self._next = 0
        self._clearing: int | None = None
        self._heartbeat: io.Heartbeat | None = None

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
            self._url,
            key,
            holder=self.holder,
            schema=self._tables.schema,
            lease_s=self._lease_s,
            heartbeat_s=self._heartbeat_s,
            **self._timeouts,
        )

    def close(self) -> None:
        """Release the task's lease (the next driver takes it at once); reopened by the
        next use. A database that is gone meanwhile lets the lease run out instead."""
        with self._lock:
            heartbeat, self._heartbeat = self._heartbeat, None
            if heartbeat is not None:
                heartbeat.stop()
            epoch = self._epoch
            self._forget_lease()
            if epoch is not None:
                self._release(epoch)

    def abandon(self) -> None:
        """Stop renewing the lease and release it in the background, without blocking or
        awaiting (a task dropped open does, from its finalizer: in a thread, or a task of
        the running loop; with no loop running the lease runs out ``lease_s`` later). The
        next use takes it again."""
        heartbeat, self._heartbeat = self._heartbeat, None
        if heartbeat is not None:
            heartbeat.cancel()
        epoch = self._epoch
        self._forget_lease()
        if epoch is not None:
            io.soon(self._release, epoch)

    def _release(self, epoch: int) -> None:
        """Free the lease of ``epoch`` (no longer this store's); a database that is gone
        lets it run out instead."""
        with (
            _quiet(),
            self._translated(),
            (self._pool()).connection() as conn,
        ):
            conn.execute(
                f"UPDATE {self._tables.tasks} SET holder = NULL, since = NULL,"
                " lease_expires = NULL WHERE key = %s AND epoch = %s",
                (self.key, epoch),
            )

    def lease(self) -> None:
        """Take the task's lease now rather than at the first write (`TaskBusy` naming its
        holder); it is the store's own, held until `close`."""
        with self._exclusive():
            pass

    def _next_seq(self) -> int:
        with self._lock, self._translated():
            if self._leased:
                return self._next
            with (self._pool()).connection() as conn:
                cursor = conn.execute(
                    f"SELECT records FROM {self._tables.tasks} WHERE key = %s", (self.key,)
                )
                found = _one(cursor)
        return 0 if found is None else int(found)

    def read(self) -> LogRead:
        """Every record of the task, in order (an unknown key is an empty log); no lease.
        While this store holds the lease, the records it read or wrote last are not fetched
        again (no one else may write them)."""
        with self._lock, self._translated():
            known = self._known
            if self._leased and known is not None and known[0] == self._x_state():
                return known[1]
            with (self._pool()).connection() as conn:
                found = decode(self._lines(conn), self._where)
            if self._leased:
                self._known = (self._x_state(), found)
            return found

    def export_lines(self) -> list[bytes]:
        """Every record's line as stored (no newline), in order: ``task export``."""
        with (
            self._lock,
            self._translated(),
            (self._pool()).connection() as conn,
        ):
            lines = self._lines(conn)
        decode(lines, self._where)
        return lines

    @contextmanager
    def _exclusive(self) -> Iterator[None]:
        """The lease, on a connection of the pool held for the block. Each write is one
        fenced statement (or one transaction); a block that raises (an error, a
        cancellation) forgets what it knew and takes the lease again, as its own, before
        the next write, to learn where the task stands."""
        with (
            self._lock,
            self._translated(),
            (self._pool()).connection() as conn,
        ):
            self._conn = conn
            try:
                self._take_lease(conn)
                yield
            except BaseException:
                # Whatever the block wrote or cleared is not known to be in: forget it
                # all, and learn the task's next number again as the lease is retaken.
                self._ids, self._known, self._clearing = None, None, None
                self._leased = False
                raise
            finally:
                self._conn = None

    @contextmanager
    def _translated(self) -> Iterator[None]:
        with translated(self._url):
            yield

    def _pool(self) -> StorePool:
        return store_pool(self._url, self._tables.schema, **self._timeouts)

    def _connection(self) -> psycopg.Connection[Any]:
        """The connection of the block (``_x_*`` run only inside ``_exclusive()``)."""
        assert self._conn is not None, "a store hook ran outside _exclusive()"
        return self._conn

    def _x_check_begun(self) -> None:
        """Nothing to check before the lease: an unknown key reads as an empty log."""

    def _x_last_seq(self) -> int | None:
        # The tasks row's count, read as the lease was taken: no one else appends since.
        return None if self._next == 0 else self._next - 1

    def _x_state(self) -> object:
        return self._x_last_seq()

    def _x_read(self) -> LogRead:
        return decode(self._lines(self._connection()), self._where)

    def _x_first(self) -> StoredRecord:
        cursor = self._connection().execute(
            f"SELECT record FROM {self._tables.records} WHERE task = %s ORDER BY seq LIMIT 1",
            (self.key,),
        )
        return decode([str(_one(cursor)).encode()], self._where).records[0]

    def _x_repair(self) -> bytes | None:
        """Nothing to repair: a row is committed whole or not at all."""
        return None

    def _x_write(
        self,
        batch: Sequence[StoredRecord],
        lines: Sequence[bytes] | None = None,
        after: LogRead | None = None,
    ) -> None:
        """One fenced statement: the rows and the task's row (next number, standing) go in
        together, or nothing does (`TaskBusy` if the lease was lost meanwhile)."""
        last = check_batch(self._where, self._x_last_seq(), batch)
        assert last is not None
        conn = self._connection()
        if after is None:
            before = [] if self._next == 0 else (self._x_read()).records
            after = LogRead(records=[*before, *batch])
        encoded = lines if lines is not None else encode(batch)
        expected = self._next if self._clearing is None else self._clearing
        values = {
            "key": self.key,
            "epoch": self._epoch,
            "first": expected,
            "next": last + 1,
            "lease_s": self._lease_s,
            "seqs": [record.seq for record in batch],
            "lines": [line.decode() for line in encoded],
            **standing_values(after),
        }
        if self._clearing is None:
            cursor = conn.execute(self._tables.append(), values)
            written = cursor.rowcount
        else:
            with conn.transaction():
                conn.execute(f"DELETE FROM {self._tables.records} WHERE task = %s", (self.key,))
                cursor = conn.execute(self._tables.append(), values)
                written = cursor.rowcount
                if written != len(batch):
                    raise self._fenced_out(conn)
            self._clearing = None
        if written != len(batch):
            raise self._fenced_out(conn)
        self._next = last + 1
        self._known = (self._x_state(), after)

    def _x_clear(self) -> None:
        """Delete the task's records, in the transaction that writes its new ones."""
        self._clearing, self._next = self._next, 0

    def _x_delete(self) -> None:
        """Delete the task's row (its lease with it) and its records, in one transaction."""
        conn = self._connection()
        with conn.transaction():
            cursor = conn.execute(
                f"DELETE FROM {self._tables.tasks} WHERE key = %s AND epoch = %s",
                (self.key, self._epoch),
            )
            if cursor.rowcount != 1:
                raise self._fenced_out(conn)
            conn.execute(f"DELETE FROM {self._tables.records} WHERE task = %s", (self.key,))
        heartbeat, self._heartbeat = self._heartbeat, None
        if heartbeat is not None:
            heartbeat.cancel()
        self._forget_lease()

    def _lines(self, conn: psycopg.Connection[Any]) -> list[bytes]:
        cursor = conn.execute(
            f"SELECT record FROM {self._tables.records} WHERE task = %s ORDER BY seq", (self.key,)
        )
        return [str(record).encode() for (record,) in cursor.fetchall()]

    def _take_lease(self, conn: psycopg.Connection[Any]) -> None:
        """Hold this task's lease, or raise `TaskBusy` naming its holder: one statement
        takes it where it is free, expired, or this store's own (taken again after a
        doubt), and says where the task stands."""
        if self._leased:
            return
        cursor = conn.execute(
            self._tables.take_lease(),
            {"key": self.key, "holder": self.holder, "lease_s": self._lease_s, "mine": self._epoch},
        )
        row = cursor.fetchone()
        if row is None:
            self._epoch = None
            raise self._busy(conn, "another driver holds this task")
        self._epoch, self._next = int(row[0]), int(row[1])
        self._leased, self._ids, self._known = True, None, None
        if self._heartbeat is None:
            self._heartbeat = io.Heartbeat(self._renew, self._heartbeat_s)
            self._heartbeat.start()

    def _renew(self) -> None:
        """Push the lease's expiry on (the heartbeat); a lease found lost is taken again,
        or refused, by the next use."""
        epoch = self._epoch
        if epoch is None:
            return
        with translated(self._url), (self._pool()).connection() as conn:
            cursor = conn.execute(
                f"UPDATE {self._tables.tasks}"
                " SET lease_expires = now() + make_interval(secs => %s)"
                " WHERE key = %s AND epoch = %s",
                (self._lease_s, self.key, epoch),
            )
        if cursor.rowcount == 0 and self._epoch == epoch:
            self._leased = False

    def _fenced_out(self, conn: psycopg.Connection[Any]) -> Exception:
        """Why a fenced write wrote nothing: the lease lost to another driver (`TaskBusy`),
        or the task's records moved behind this store's back (`LogSequenceError`)."""
        cursor = conn.execute(f"SELECT epoch FROM {self._tables.tasks} WHERE key = %s", (self.key,))
        epoch = _one(cursor)
        self._leased, self._ids, self._known = False, None, None
        if epoch is not None and int(epoch) == self._epoch:
            return LogSequenceError(
                f"{self._where}: the task's records moved behind this store's back; "
                "nothing was written"
            )
        self._epoch = None
        return self._busy(conn, "this store's lease ran out and another driver took it")

    def _busy(self, conn: psycopg.Connection[Any], why: str) -> TaskBusy:
        cursor = conn.execute(
            f"SELECT holder, since FROM {self._tables.tasks} WHERE key = %s", (self.key,)
        )
        row = cursor.fetchone()
        holder, since = (None, None) if row is None else (row[0], row[1])
        held = f"held by {holder} since {since:%Y-%m-%d %H:%M:%S %Z}" if since else "held"
        return TaskBusy(
            f"{self._where}: {why} ({held}); nothing was written: leave it to that driver, "
            "or resume it once that driver has closed or died",
            task=self.key,
            holder=None if holder is None else str(holder),
            since=since,
        )

    def _forget_lease(self) -> None:
        self._epoch, self._leased, self._next, self._clearing = None, False, 0, None
        self._ids, self._known = None, None


def task_keys(
    url: str | SecretStr,
    *,
    schema: str = DEFAULT_SCHEMA,
    status: str | None = None,
    limit: int | None = None,
    after: str | None = None,
) -> list[dict[str, Any]]:
    """The tasks in the database, ordered by key, as their rows say (one query, on one
    connection): key, records, live lease holder and since when, and the standing
    (`nisse_llm.task.standing.Standing`). ``status`` keeps those of that status,
    ``after`` those whose key follows it (the next page), ``limit`` the first so many."""
    secret = url if isinstance(url, SecretStr) else SecretStr(url)
    tables = Tables(schema)
    where = ["records > 0"]
    values: dict[str, Any] = {"status": status, "after": after, "limit": limit}
    if status is not None:
        where.append("status = %(status)s")
    if after is not None:
        where.append("key > %(after)s")
    page = "" if limit is None else " LIMIT %(limit)s"
    with translated(secret), connect(secret, schema=schema) as conn:
        cursor = conn.execute(
            f"SELECT key, records, CASE WHEN lease_expires > now() THEN holder END,"
            f" CASE WHEN lease_expires > now() THEN since END, {_STANDING}"
            f" FROM {tables.tasks} WHERE {' AND '.join(where)} ORDER BY key{page}",
            values,
        )
        rows = cursor.fetchall()
    names = ("key", "records", "holder", "since", *_STANDING.split(", "))
    return [dict(zip(names, row, strict=True)) for row in rows]


@contextmanager
def _quiet() -> Iterator[None]:
    """The store's own errors ignored (a lease released to a database that is gone runs
    out instead)."""
    with suppress(TaskStoreUnavailable, TaskStoreMisconfigured):
        yield


_STANDING = (
    "status, calls, unknown_calls, cost_usd, unpriced_calls, approvals, pin, parent, last_activity"
)


def _one(cursor: psycopg.Cursor[Any]) -> Any:
    row = cursor.fetchone()
    return None if row is None else row[0]
