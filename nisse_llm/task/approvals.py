"""A tool call that waits for a person: its ``approval`` records, and what they decide.

Pure: no I/O. A reply's call of a tool that needs approval (``Toolbox(...,
needs_approval={...})``) is recorded ``"pending"`` (its tool and arguments), and the call
stays unanswered in the log until a record decides it: ``"approved"`` (the next run runs
it, once, with the tool-run start record every run has) or ``"denied"`` (the next run
answers it with an error result carrying the reason). A decision names who gave it; its
record's ``at`` says when::

    {"seq": 9, "at": ..., "approval": {"call_id": "c2", "tool": "git_push",
                                       "outcome": "pending", "arguments": {...}}}
    {"seq": 12, "at": ..., "approval": {"call_id": "c2", "tool": "git_push",
                                        "outcome": "approved", "by": "ana"}}

A call is decided once: `decision_problem` says why another decision is refused.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, NonNegativeInt

from nisse_llm.events.canonical import CanonicalEvent, ToolCall, ToolResult

__all__ = [
    "ApprovalRecord",
    "PendingApproval",
    "StoredApproval",
    "approvals_of",
    "awaiting",
    "decision",
    "decision_problem",
    "decision_record",
    "denied_result",
]


class ApprovalRecord(BaseModel):
    """One step of a tool call's approval: ``"pending"`` (written when the reply asking for
    it is in the log, with its ``arguments``), then ``"approved"`` or ``"denied"`` (``by``
    whom, and for a denial the ``reason`` the model is told)."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    call_id: str
    tool: str
    outcome: Literal["pending", "approved", "denied"] = "pending"
    arguments: dict[str, Any] | None = Field(default=None, exclude_if=lambda v: v is None)
    by: str | None = Field(default=None, exclude_if=lambda v: v is None)
    reason: str | None = Field(default=None, exclude_if=lambda v: v is None)


class StoredApproval(BaseModel):
    """An `ApprovalRecord` in the task file."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    seq: NonNegativeInt
    at: datetime
    approval: ApprovalRecord

    @classmethod
    def now(cls, seq: int, record: ApprovalRecord) -> StoredApproval:
        """An approval record stamped with the current UTC time."""
        return cls(seq=seq, at=datetime.now(UTC), approval=record)


@dataclass(frozen=True, slots=True)
class PendingApproval:
    """A tool call waiting for a person's approval: its id, tool and arguments, and when
    the task recorded it waiting (None: not recorded yet)."""

    call_id: str
    tool: str
    arguments: dict[str, Any]
    at: datetime | None = None


def approvals_of(records: Iterable[object]) -> dict[str, list[StoredApproval]]:
    """Each call's approval records, in file order, by call id."""
    found: dict[str, list[StoredApproval]] = {}
    for record in records:
        if isinstance(record, StoredApproval):
            found.setdefault(record.approval.call_id, []).append(record)
    return found


def decision(records: Sequence[StoredApproval]) -> StoredApproval | None:
    """The record deciding a call (its first approval or denial), if any."""
    return next((r for r in records if r.approval.outcome != "pending"), None)


def awaiting(events: Iterable[CanonicalEvent], records: Iterable[object]) -> list[PendingApproval]:
    """The calls recorded pending, unanswered in the log and not decided yet, in the order
    recorded."""
    events = list(events)
    answered = {e.call_id for e in events if isinstance(e, ToolResult)}
    calls = {e.call_id for e in events if isinstance(e, ToolCall)}
    pending: list[PendingApproval] = []
    for call_id, found in approvals_of(records).items():
        if call_id in answered or call_id not in calls or decision(found) is not None:
            continue
        first = found[0].approval
        pending.append(PendingApproval(call_id, first.tool, first.arguments or {}, found[0].at))
    return pending


def decision_problem(
    records: Iterable[object], events: Iterable[CanonicalEvent], call_id: str
) -> str | None:
    """Why a decision on ``call_id`` is refused (None: it may be decided): no call of that id
    waits for approval, or one was decided before (by whom, when)."""
    found = approvals_of(records).get(call_id)
    if not found:
        return f"no call {call_id!r} awaits approval in this task"
    done = decision(found)
    if done is not None:
        record = done.approval
        at = done.at.strftime("%Y-%m-%dT%H:%M:%SZ")
        by = f" by {record.by}" if record.by else ""
        return f"call {call_id!r} ({record.tool}) was {record.outcome} already{by} at {at}"
    if any(isinstance(e, ToolResult) and e.call_id == call_id for e in events):
        return f"call {call_id!r} is answered already"
    return None


def denied_result(call: ToolCall, record: ApprovalRecord) -> ToolResult:
    """The error result answering a denied call: the model reads the reason."""
    by = f" by {record.by}" if record.by else ""
    return ToolResult(
        call_id=call.call_id,
        output=f"Tool {call.tool!r} was not run: its call was denied{by}: {record.reason}",
        is_error=True,
    )


def decision_record(
    records: Iterable[object],
    call_id: str,
    outcome: Literal["approved", "denied"],
    *,
    by: str,
    reason: str | None = None,
) -> ApprovalRecord:
    """The record deciding ``call_id`` (its tool read from its pending record), to append
    with `AsyncTaskStore.append_approval`, which refuses it if the call awaits no decision."""
    found = approvals_of(records).get(call_id)
    tool = found[0].approval.tool if found else "?"
    return ApprovalRecord(call_id=call_id, tool=tool, outcome=outcome, by=by, reason=reason)
