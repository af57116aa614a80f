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
database, ``sql/NNNN_*.sql`` for each upgrade), in one transaction under an advisory lock::

    nisse_schema (version)                      one row: the layout's version
    nisse_task_records (task, seq, record)      a record per row; primary key (task, seq)
    nisse_task_leases (task, holder, since, pid)  who drives each task, and since when

Migration rule: the version only grows, one numbered file at a time; version 1 is the
previous layout (the same tables in ``public``, made at run time). A store's first use
makes the tables in an empty database where its role may; tables of an older version, or
a role that may not create them, are `TaskStoreMisconfigured` saying to run ``task
migrate``; a newer version than it knows is refused (`TaskStoreUnavailable`), never
written to. Each session has a ``statement_timeout`` (30 s) and a ``lock_timeout`` (10 s),
the store's keywords, so a stuck write fails and the work is kept.

An append (a batch included) is one transaction; it returns only after the commit, so an
acknowledged record is on the server and an unacknowledged one is whole or absent (no
torn rows). The lease is a session advisory lock on the store's own connection: the
server releases it when that session ends, so a holder that dies (SIGKILL: its socket
closes at once) frees its tasks immediately, and a machine that vanishes frees them when
TCP keepalive gives up on it (``keepalives_*`` below: within about 25 s). No clock and no
heartbeat are involved; a pooler in transaction mode would break it (connect directly).
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
