"""Where a task stands, from its records alone: the one word ``task list`` shows (`status`)
and the figures beside it (`Standing`), which a database store keeps in its tasks row."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from nisse_llm.events.canonical import (
    AssistantText,
    CanonicalEvent,
    Compaction,
    Reasoning,
    ToolCall,
    ToolResult,
)
from nisse_llm.task._logread import LogRead
from nisse_llm.task.approvals import awaiting
from nisse_llm.task.delegation import parent_of
from nisse_llm.task.records import pending_calls

__all__ = ["STATUSES", "Standing", "standing", "status"]

#: Every word `status` says, in the order a task usually passes through them.
STATUSES = (
    "no-header",
    "ready",
    "tools-pending",
    "unknown-calls",
    "awaiting-approval",
    "done",
)


@dataclass(frozen=True)
class Standing:
    """A task's status and totals: what ``task list`` shows of it."""

    status: str
    calls: int
    unknown_calls: int
    cost_usd: Decimal
    unpriced_calls: int
    approvals: int
    pin: str | None
    parent: str | None
    last_activity: datetime | None


def status(found: LogRead) -> str:
    """One word for where the task stands (its calls of unknown outcome have a column)."""
    if found.header is None:
        return "no-header"
    events = [item.event for item in found.view]
    if _done(events):
        return "done"
    if awaiting((r.event for r in found.events), found.records):
        return "awaiting-approval"
    if found.unknown_calls:
        return "unknown-calls"
    answered = {e.call_id for e in events if isinstance(e, ToolResult)}
    if any(isinstance(e, ToolCall) and e.call_id not in answered for e in events):
        return "tools-pending"
    return "ready"


def standing(found: LogRead) -> Standing:
    """`status` and the totals of ``found``."""
    total = found.usage.total
    pin = found.pin
    parent = parent_of(found.records)
    return Standing(
        status=status(found),
        calls=total.calls,
        unknown_calls=total.unknown_calls,
        cost_usd=Decimal(total.cost_usd),
        unpriced_calls=total.unpriced_calls,
        approvals=len(awaiting((r.event for r in found.events), found.records)),
        pin=None if pin is None else str(pin.get("fingerprint", "-")),
        parent=None if parent is None else parent.key,
        last_activity=found.records[-1].at if found.records else None,
    )


def _done(events: list[CanonicalEvent]) -> bool:
    """Whether the model spoke last and asked for nothing (``agent.plan.is_done``)."""
    for event in reversed(events):
        if isinstance(event, Compaction):
            continue
        return isinstance(event, AssistantText | Reasoning) and not pending_calls(events)
    return False
