"""Which tool specs a step records, and what changed since the task last offered tools (pure).

A task records the specs it offers the model (a ``tools`` record) only when they differ
from the last ones recorded, in any order: a run that keeps its toolbox writes them once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from nisse_llm.events.canonical import ToolSpec
from nisse_llm.events.tool_changes import ToolChanges, tool_changes
from nisse_llm.task.records import ToolsRecord

__all__ = ["Offer", "offer"]


@dataclass(frozen=True, slots=True)
class Offer:
    """What a step does about its tools: the record to append before its call (None: the
    last one still holds) and how they differ from the last recorded (empty the first time)."""

    record: ToolsRecord | None
    changes: ToolChanges


_SAME = Offer(None, ToolChanges())


def offer(last: Sequence[ToolSpec] | None, specs: Sequence[ToolSpec]) -> Offer:
    """A step offering ``specs`` to a task whose last recorded specs are ``last`` (None: it
    recorded none; a task that never offered a tool records nothing for an empty set)."""
    if last is None:
        return Offer(ToolsRecord(specs=list(specs)) if specs else None, ToolChanges())
    if len(last) == len(specs) and all(a is b for a, b in zip(last, specs, strict=True)):
        return _SAME  # the same toolbox step after step: no spec to dump (400 us for 30)
    changes = tool_changes(last, specs)
    return Offer(ToolsRecord(specs=list(specs)) if changes else None, changes)
