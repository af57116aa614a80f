"""Tasks in PostgreSQL: the task file's records and promises in a table, one driver per task.

`PostgresTaskStore` is a `TaskStore` whose records live in a database, a sibling of the
file store: the record logic (header and pin check, numbering, id claims, compaction,
resume) is `TaskStore`'s; ``_async/postgres.py`` says only how records are appended, read
and leased. Each row
holds the same JSON line a task file holds, so a new record kind needs no change here.
Written once as `AsyncPostgresTaskStore` (psycopg's async connection); `PostgresTaskStore`
is generated from it (``PostgresLogStore`` and ``AsyncPostgresLogStore``, their old names,
still work for one release, with a `DeprecationWarning`). An async store's operation cancelled mid-way drops its connection
(the server commits what it received whole or rolls it back; the lease goes with the
session) and the next use reconnects.

Tables, in a schema of their own (``nisse`` unless the store is given another), made by
``nisse-llm task migrate`` from the package's SQL files (``sql/schema.sql`` for an empty
database, ``sql/NNNN_*.sql`` for each upgrade), in one transaction under an advisory lock
(transaction-scoped, two keys, the first "niss")::

    nisse_schema (version)                  one row: the layout's version
    nisse_task_records (task, seq, record)  a record per row; primary key (task, seq)
    nisse_tasks (key, holder, epoch, lease_expires, records, status, calls, cost_usd, ...)
                                            a row per task: its lease, next number, standing
    nisse_lease_epochs                      the sequence every lease's epoch is drawn from

Migration rule: the version only grows, one numbered file at a time; version 1 is the
first layout (the tables in ``public``), version 2 had leases in a table of their own. A
store's first use makes the tables in an empty database where its role may; tables of an
older version, or a role that may not create them, are `TaskStoreMisconfigured` saying to
run ``task migrate``; a newer version than it knows is refused (`TaskStoreUnavailable`),
never written to. Each session has a ``statement_timeout`` (30 s) and a ``lock_timeout``
(10 s), the store's keywords, so a stuck write fails and the work is kept.

An append (a batch included) is one statement: the task's row moves on (next number,
standing, lease renewed) only while its epoch is the store's lease and its count the one
the store expects, and the records go in only if it did; it returns after the commit, so
an acknowledged record is on the server and an unacknowledged one is whole or absent. The
lease is the row: taken in one statement where it is free or expired (a new epoch),
renewed by a heartbeat every ``heartbeat_s`` (5 s) while the task is open, released by
``close``; a holder that dies or stops frees its tasks at most ``lease_s`` (15 s) after
its last renewal, and one that lost its lease cannot write (`TaskBusy`). Nothing outlives
a transaction (no session lock, no prepared statement), so the stores of a process share
pooled connections (``close_pools``) and a pooler in transaction mode may stand between.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from nisse_llm._lazy import renamed
from nisse_llm.task._pg import SCHEMA_VERSION, translated
from nisse_llm.task._sync.postgres import (
    PostgresTaskStore,
    close_pools,
    connect,
    ensure_schema,
    migrate,
    migrate_database,
    task_keys,
)

if TYPE_CHECKING:
    from nisse_llm.task._async.postgres import AsyncPostgresTaskStore

__all__ = [
    "SCHEMA_VERSION",
    "AsyncPostgresTaskStore",
    "PostgresTaskStore",
    "close_pools",
    "connect",
    "ensure_schema",
    "migrate",
    "migrate_database",
    "task_keys",
    "translated",
]


def __getattr__(name: str) -> Any:
    # The async store loads asyncio: imported when first named, so sync programs never do.
    if name == "AsyncPostgresTaskStore":
        from nisse_llm.task._async.postgres import AsyncPostgresTaskStore

        return AsyncPostgresTaskStore
    if name == "AsyncPostgresLogStore":
        new = "AsyncPostgresTaskStore"
        return renamed(__name__, name, new, __getattr__(new))
    if name == "PostgresLogStore":
        return renamed(__name__, name, "PostgresTaskStore", PostgresTaskStore)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
