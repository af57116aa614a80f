# Generated from nisse_llm/agent/_async/opening.py by scripts/gen_sync.py (unasync); do not edit.
"""Opening and closing a task's store, written once: ``_async/opening.py`` is the source,
``_sync/opening.py`` is generated from it by ``scripts/gen_sync.py`` (unasync)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from nisse_llm.events.canonical import UserText
from nisse_llm.task.records import unfinished_batch

if TYPE_CHECKING:
    from nisse_llm.task.lease import FileLease
    from nisse_llm.task.logstore import TaskStore
    from nisse_llm.task.records import StoredRecord

__all__ = ["begin", "release", "take_lease"]


def take_lease(store: TaskStore, owned: bool) -> FileLease | None:
    """Take the task's lease as its one driver (`TaskStore.lease`); `TaskBusy` while
    another holds it (a store the task opened is closed first)."""
    try:
        return store.lease()
    except BaseException:
        if owned:
            store.close()
        raise


def release(store: TaskStore, owned: bool, lease: FileLease | None) -> None:
    """Close the store if the task opened it, then release the lease."""
    try:
        if owned:
            store.close()
    finally:
        if lease is not None:
            lease.close()


def begin(store: TaskStore, prompt: str | None) -> list[StoredRecord]:
    """Finish a batch a crash cut short in the begun task, and write ``prompt`` if the task
    holds no event yet; return the records read (the program's among them)."""
    found = store.read()
    missing = unfinished_batch(found.records)
    if missing:
        store.append_batch(missing)
    if prompt is not None and not found.events:
        store.append_event(UserText(text=prompt))
    return found.records
