# Generated from nisse_llm/agent/_async/delegation.py by scripts/gen_sync.py (unasync); do not edit.
"""A task's sub-tasks' usage, written once: ``_async/delegation.py`` is the source,
``_sync/delegation.py`` is generated from it by ``scripts/gen_sync.py`` (unasync). The
delegation itself is `Task.delegate`; the records it writes are
`nisse_llm.task.delegation`'s."""

from __future__ import annotations

from typing import TYPE_CHECKING

from nisse_llm.task.delegation import children_of
from nisse_llm.task.records import UsageTotal

if TYPE_CHECKING:
    from nisse_llm.task.logstore import TaskStore

__all__ = ["total_usage"]


def total_usage(store: TaskStore) -> UsageTotal:
    """The usage of the task in ``store`` and of all its descendants (read, no lease)."""
    found = store.read()
    total = found.usage.total
    for key in children_of(found.records):
        child = store.sibling(key)
        try:
            total = total + total_usage(child)
        finally:
            child.close()
    return total
