"""Which store holds a task: the ``task_store`` setting (a folder or a ``postgresql://`` URL)
and a task key give the `TaskStore` to open.

A folder holds one file per task, ``KEY.jsonl`` (the default folder is ``tasks/`` beside
the config file, else in the current folder; a relative folder is taken from there too).
A URL opens a `PostgresTaskStore` (the ``postgres`` extra). Keys are the same for both, so a
task moves between them by ``nisse-llm task export`` / ``task import``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

from pydantic import SecretStr

from nisse_llm.task.keys import TASK_KEY_PATTERN, check_task_key
from nisse_llm.task.logstore import FileTaskStore, TaskStore

if TYPE_CHECKING:
    from nisse_llm.config.settings import Settings
    from nisse_llm.task._async.store import AsyncTaskStore

__all__ = [
    "DEFAULT_TASK_FOLDER",
    "TASK_KEY_PATTERN",
    "AsyncStoreArg",
    "StoreArg",
    "is_database_url",
    "is_task_key",
    "open_async_store",
    "open_async_task_store",
    "open_store",
    "open_task_store",
    "task_folder",
]

#: The folder tasks live in when ``task_store`` is not set (beside the config file).
DEFAULT_TASK_FOLDER = "tasks"
_SCHEMES = ("postgresql://", "postgres://")


def is_database_url(value: str) -> bool:
    """Whether a ``task_store`` value names a database rather than a folder."""
    return value.startswith(_SCHEMES)


def open_task_store(key: str, settings: Settings | None = None) -> TaskStore:
    """The store of task ``key`` where ``settings`` say tasks live (a missing folder is
    made); by default where `load_task_store` finds (no token, no role needed). `ConfigError`
    for a key that is not a plain name (letters, digits, ``.``, ``_``, ``-``; not
    starting with a dot)."""
    where = _task_place(key, settings)
    if isinstance(where, Path):
        return FileTaskStore(where)
    from nisse_llm.task.postgres import PostgresTaskStore

    return PostgresTaskStore(where, key, schema=_schema(settings))


def open_async_task_store(key: str, settings: Settings | None = None) -> AsyncTaskStore:
    """`open_task_store` for asyncio: the `AsyncTaskStore` or `AsyncPostgresTaskStore` of
    task ``key``."""
    where = _task_place(key, settings)
    if isinstance(where, Path):
        from nisse_llm.task._async.filestore import AsyncFileTaskStore

        return AsyncFileTaskStore(where)
    from nisse_llm.task._async.postgres import AsyncPostgresTaskStore

    return AsyncPostgresTaskStore(where, key, schema=_schema(settings))


def _schema(settings: Settings | None) -> str:
    """The database schema ``settings`` name (``task_schema``), else where `load_task_store`
    finds it."""
    if settings is None:
        from nisse_llm.config.settings import load_task_store

        settings = load_task_store()
    return settings.task_schema


def _task_place(key: str, settings: Settings | None) -> Path | SecretStr:
    """Where task ``key`` lives: its file's path (the folder made) or the database URL."""
    check_task_key(key)
    if settings is None:
        from nisse_llm.config.settings import load_task_store

        settings = load_task_store()
    configured = settings.task_store
    if configured is not None and is_database_url(configured.get_secret_value()):
        return configured
    folder = task_folder(settings)
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"{key}.jsonl"


#: Where a task is kept, as a task's or a router's ``store`` argument: a task file's path,
#: a task key of the configured store, or a `TaskStore` (see `open_store`).
StoreArg = str | os.PathLike[str] | TaskStore


def open_store(store: StoreArg, settings: Settings | None = None) -> tuple[TaskStore, bool]:
    """The store ``store`` names, and whether it was opened here (so its user closes it).

    The one place a ``store`` argument is resolved: a `TaskStore` is used as it is; a task
    key (`is_task_key`) is opened by `open_task_store` where ``settings`` say tasks live
    (default: where `load_task_store` finds: no token, no role needed); any other string, and
    every `Path` or other path-like object, is a task file's path.
    """
    if isinstance(store, TaskStore):
        return store, False
    if isinstance(store, str) and is_task_key(store):
        return open_task_store(store, settings), True
    if isinstance(store, str | os.PathLike):
        return FileTaskStore(store), True
    raise TypeError(
        f"a task's store is a path, a task key or a TaskStore, not {type(store).__name__}"
    )


#: Where an async task is kept: a task file's path, a task key of the configured store, or
#: an `AsyncTaskStore` (see `open_async_store`).
AsyncStoreArg: TypeAlias = "str | os.PathLike[str] | AsyncTaskStore"


def open_async_store(
    store: AsyncStoreArg, settings: Settings | None = None
) -> tuple[AsyncTaskStore, bool]:
    """`open_store` for asyncio: the `AsyncTaskStore` ``store`` names, and whether it was
    opened here. A sync store object is a `TypeError`: its writes would block the loop."""
    from nisse_llm.task._async.filestore import AsyncFileTaskStore
    from nisse_llm.task._async.store import AsyncTaskStore

    if isinstance(store, AsyncTaskStore):
        return store, False
    if isinstance(store, TaskStore):
        kind = type(store).__name__
        raise TypeError(
            f"an async task or router awaits its store: give Async{kind}(...) (or a path or "
            f"a task key), not a {kind}, whose every write would block the event loop"
        )
    if isinstance(store, str) and is_task_key(store):
        return open_async_task_store(store, settings), True
    if isinstance(store, str | os.PathLike):
        return AsyncFileTaskStore(store), True
    raise TypeError(
        f"an async task's store is a path, a task key or an AsyncTaskStore, not "
        f"{type(store).__name__}"
    )


def is_task_key(store: str | os.PathLike[str]) -> bool:
    """Whether a task's ``store`` argument is a task key rather than a task file's path:
    a string with no path separator and no ``.jsonl`` suffix (``"fix-issue-123"``). A
    `Path` or other path-like object is always a path, so is ``"task.jsonl"``."""
    if not isinstance(store, str):
        return False
    separated = any(sep and sep in store for sep in ("/", os.sep, os.altsep))
    return not separated and not store.endswith(".jsonl")


def task_folder(settings: Settings) -> Path:
    """The folder of task files ``settings`` name (when ``task_store`` is not a URL)."""
    configured = settings.task_store
    base = settings.config_file.parent if settings.config_file is not None else Path.cwd()
    return base / (DEFAULT_TASK_FOLDER if configured is None else configured.get_secret_value())
