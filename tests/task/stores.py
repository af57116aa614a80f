"""One task in either store, for the tests that hold both to the same promises.

A `Place` opens store objects on one task (a file, or a key in the session's PostgreSQL),
reads the lines as stored, and plants raw lines (damage a crash or a person could leave)
behind the store's back.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import psycopg

from nisse_llm.task.logstore import AsyncFileTaskStore, AsyncTaskStore, FileTaskStore, TaskStore
from nisse_llm.task.postgres import AsyncPostgresTaskStore, PostgresTaskStore
from nisse_llm.testing.pgbouncer import LocalPgBouncer
from nisse_llm.testing.postgres import LocalPostgres
from tests.task.blocking import Blocking

#: The stores the two-store tests hold to the same promises: the sync ones, and the async
#: ones through a blocking adapter (`tests.task.blocking`). ``pgbouncer`` is the
#: PostgreSQL store through PgBouncer in transaction mode (the session's `pgbouncer`):
#: the same promises must hold with no session state kept for a client.
KINDS = (
    "file", "postgres", "pgbouncer", "file-async", "postgres-async", "pgbouncer-async",
)  # fmt: skip
_keys = itertools.count()


class Place:
    """Where one task of the test lives; `open` is a new store object on it each call.

    A Postgres store keeps its task's lease until closed, so `open` closes the stores it
    opened before (the task reopened by its next driver, as after a restart)."""

    def __init__(
        self,
        kind: str,
        tmp_path: Path,
        server: LocalPostgres | None,
        pool: LocalPgBouncer | None = None,
    ) -> None:
        #: "file" or "postgres", whichever face the store has (through a pool or not).
        self.kind = kind.removesuffix("-async").replace("pgbouncer", "postgres")
        #: Whether `open` gives the async store (behind a blocking adapter).
        self.is_async = kind.endswith("-async")
        self.path = tmp_path / "task.jsonl"
        self.server = server
        #: Where the stores `open` gives connect: the server, or the pool in front of it
        #: (what a test does behind the store's back goes to the server itself).
        self.url = "" if server is None else server.url if pool is None else pool.url
        self.key = f"task-{next(_keys)}-{tmp_path.name}"
        self._opened: list[TaskStore] = []

    def open(self) -> TaskStore:
        for store in self._opened:
            store.close()
        store: TaskStore
        if self.is_async and self.server is None:
            store = Blocking(AsyncFileTaskStore(self.path))
        elif self.is_async and self.server is not None:
            store = Blocking(AsyncPostgresTaskStore(self.url, self.key))
        elif self.server is None:
            store = FileTaskStore(self.path)
        else:
            store = PostgresTaskStore(self.url, self.key)
        self._opened.append(store)
        return store

    def open_async(self) -> AsyncTaskStore:
        """A new async store on the task, for a test's own loop (the test closes it)."""
        for store in self._opened:
            store.close()
        if self.server is None:
            return AsyncFileTaskStore(self.path)
        return AsyncPostgresTaskStore(self.url, self.key)

    @property
    def where(self) -> str:
        """What the store's messages name as the task's place."""
        if self.server is None:
            return str(self.path)
        return f"{PostgresTaskStore(self.url, self.key).url} task {self.key!r}"

    def lines(self) -> list[bytes]:
        """The records as stored, one line each (no newline)."""
        return FileTaskStore(self.path).export_lines() if self.server is None else self._rows()

    def plant(self, lines: list[bytes]) -> None:
        """Store these lines as they are, valid or not, after what the task holds."""
        if self.server is None:
            with self.path.open("ab") as file:
                file.write(b"".join(line + b"\n" for line in lines))
            return
        with psycopg.connect(self.server.url, autocommit=True) as conn:
            # A store made the tables; a plant before any store needs them too.
            with PostgresTaskStore(self.server.url, "maker") as maker:
                maker.read()
            start = len(self._rows())
            for n, line in enumerate(lines):
                conn.execute(
                    "INSERT INTO nisse.nisse_task_records (task, seq, record) VALUES (%s, %s, %s)",
                    (self.key, start + n, line.decode()),
                )
            # The task's row counts its records: the next store numbers after the plant.
            conn.execute(
                "INSERT INTO nisse.nisse_tasks (key, records) VALUES (%s, %s)"
                " ON CONFLICT (key) DO UPDATE SET records = excluded.records",
                (self.key, start + len(lines)),
            )

    def replace(self, old: str, new: str) -> None:
        """Edit the stored records' text behind the store's back."""
        if self.server is None:
            self.path.write_text(self.path.read_text().replace(old, new))
            return
        with psycopg.connect(self.server.url, autocommit=True) as conn:
            conn.execute(
                "UPDATE nisse.nisse_task_records SET record = replace(record, %s, %s) WHERE task = %s",
                (old, new, self.key),
            )

    def close(self) -> None:
        for store in self._opened:
            if isinstance(store, Blocking):
                store.shutdown()
            else:
                store.close()

    def _rows(self) -> list[bytes]:
        assert self.server is not None
        with psycopg.connect(self.server.url) as conn:
            rows = conn.execute(
                "SELECT record FROM nisse.nisse_task_records WHERE task = %s ORDER BY seq",
                (self.key,),
            ).fetchall()
        return [str(row[0]).encode() for row in rows]
