"""A task's sub-tasks' usage, written once: ``_async/delegation.py`` is the source,
``_sync/delegation.py`` is generated from it by ``scripts/gen_sync.py`` (unasync). The
delegation itself is `AsyncTask.delegate`; the records it writes are
`nisse_llm.task.delegation`'s."""

from __future__ import annotations

from typing import TYPE_CHECKING

from nisse_llm.task.delegation import children_of
from nisse_llm.task.records import UsageTotal

if TYPE_CHECKING:
    from nisse_llm.task.logstore import AsyncTaskStore

__all__ = ["total_usage"]


async def total_usage(store: AsyncTaskStore) -> UsageTotal:
    """The usage of the task in ``store`` and of all its descendants (read, no lease)."""
    found = await store.read()
    total = found.usage.total
    for key in children_of(found.records):
        child = store.sibling(key)
        try:
            total = total + await total_usage(child)
        finally:
            await child.aclose()
    return total
