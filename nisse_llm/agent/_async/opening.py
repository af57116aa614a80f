"""Opening and closing a task's store, written once: ``_async/opening.py`` is the source,
``_sync/opening.py`` is generated from it by ``scripts/gen_sync.py`` (unasync)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from nisse_llm.events.canonical import UserText
from nisse_llm.task.records import unfinished_batch

if TYPE_CHECKING:
    from nisse_llm.task.lease import FileLease
    from nisse_llm.task.logstore import AsyncTaskStore
    from nisse_llm.task.records import StoredRecord

__all__ = ["begin", "release", "take_lease"]


async def take_lease(store: AsyncTaskStore, owned: bool) -> FileLease | None:
    """Take the task's lease as its one driver (`AsyncTaskStore.lease`); `TaskBusy` while
    another holds it (a store the task opened is closed first)."""
    try:
        return await store.lease()
    except BaseException:
        if owned:
            await store.aclose()
        raise


async def release(store: AsyncTaskStore, owned: bool, lease: FileLease | None) -> None:
    """Close the store if the task opened it, then release the lease."""
    try:
        if owned:
            await store.aclose()
    finally:
        if lease is not None:
            lease.close()


async def begin(store: AsyncTaskStore, prompt: str | None) -> list[StoredRecord]:
    """Finish a batch a crash cut short in the begun task, and write ``prompt`` if the task
    holds no event yet; return the records read (the program's among them)."""
    found = await store.read()
    missing = unfinished_batch(found.records)
    if missing:
        await store.append_batch(missing)
    if prompt is not None and not found.events:
        await store.append_event(UserText(text=prompt))
    return found.records
