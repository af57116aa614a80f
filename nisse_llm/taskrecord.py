"""The records of a task file beside its events: the pin header, per-call records, usage totals.

Pure: no I/O. `nisse_llm.logstore.LogStore` writes and reads these records; a line of a
task file is one of three shapes, told apart by its key::

    {"seq": 0, "at": ..., "header": {"format": 1, "pin": {...pin.record()...}}}
    {"seq": 1, "at": ..., "event": {"kind": "user_text", ...}}        # a StoredEvent
    {"seq": 2, "at": ..., "llm_call": {"role": ..., "usage": {...}, "outcome": "ok", ...}}

Files written before task records hold ``event`` lines only and read unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Discriminator, NonNegativeInt, Tag

from nisse_llm.canonical import (
    CallInfo,
    CanonicalEvent,
    StoredEvent,
    ToolCall,
    ToolResult,
    Usage,
)

if TYPE_CHECKING:
    from nisse_llm.config import Pin
    from nisse_llm.logstore import LogStore

__all__ = [
    "TASK_FORMAT",
    "CallRecord",
    "ResumedTask",
    "StoredCall",
    "StoredHeader",
    "StoredRecord",
    "TaskHeader",
    "TaskHeaderMissing",
    "TaskPinMismatch",
    "UsageTotal",
    "UsageTotals",
    "pending_calls",
    "pin_difference",
]

#: Version of the header layout; a header of another format is refused.
TASK_FORMAT: Literal[1] = 1


class TaskHeaderMissing(LookupError):
    """The file holds no task header (missing, empty, or events only): `begin` a new task."""

    def __init__(self, message: str, *, path: Path) -> None:
        super().__init__(message)
        #: The file that was to hold a task.
        self.path = path


class TaskPinMismatch(ValueError):
    """The task file was begun with another pin: open the right file, or begin a new task."""

    def __init__(self, message: str, *, path: Path, stored: str, given: str) -> None:
        super().__init__(message)
        #: The task file.
        self.path = path
        #: The fingerprint in the file's header, and the one `begin` was given.
        self.stored = stored
        self.given = given


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class TaskHeader(_Frozen):
    """What a task starts with: the pin record (`Pin.record`: no token, a fingerprint)."""

    format: Literal[1] = TASK_FORMAT
    pin: dict[str, Any]


class StoredHeader(_Frozen):
    """The first record of a task file, written once by `LogStore.begin`."""

    seq: NonNegativeInt
    at: datetime
    header: TaskHeader

    @classmethod
    def now(cls, seq: int, header: TaskHeader) -> StoredHeader:
        """A header record stamped with the current UTC time."""
        return cls(seq=seq, at=datetime.now(UTC), header=header)


class CallRecord(_Frozen):
    """One model call of a task: who asked, which model and route, what it used and cost.

    ``outcome`` is ``"ok"``, ``"closed"`` (a stream the caller left before its end: no
    usage is known) or the class name of the error the call raised (``"BudgetExhausted"``).
    ``usage`` is zero when no reply was parsed. ``call`` holds what the proxy said about
    the call (its id and cost) when the client exposed it, else ``None``.
    """

    role: str | None = None
    model: str
    route: str
    usage: Usage = Usage()
    call: CallInfo | None = None
    outcome: str = "ok"


class StoredCall(_Frozen):
    """A `CallRecord` in the task file."""

    seq: NonNegativeInt
    at: datetime
    llm_call: CallRecord

    @classmethod
    def now(cls, seq: int, record: CallRecord) -> StoredCall:
        """A call record stamped with the current UTC time."""
        return cls(seq=seq, at=datetime.now(UTC), llm_call=record)


def _record_kind(value: Any) -> str | None:
    """Which record a line is, by its key (a dict while validating, a model when dumping)."""
    if isinstance(value, Mapping):
        for key in ("event", "llm_call", "header"):
            if key in value:
                return key
        return None
    if isinstance(value, StoredEvent):
        return "event"
    if isinstance(value, StoredCall):
        return "llm_call"
    return "header" if isinstance(value, StoredHeader) else None


#: Any line of a task file: a header, an event or a call record.
StoredRecord: TypeAlias = Annotated[
    Annotated[StoredEvent, Tag("event")]
    | Annotated[StoredCall, Tag("llm_call")]
    | Annotated[StoredHeader, Tag("header")],
    Discriminator(
        _record_kind,
        custom_error_type="record_kind",
        custom_error_message="a record holds one of 'event', 'llm_call' or 'header'",
    ),
]

RECORD_TYPES = (StoredEvent, StoredCall, StoredHeader)


class UsageTotal(Usage):
    """Tokens of several calls (the `Usage` fields, summed), their count and their cost.

    ``cost_usd`` is the exact ``Decimal`` sum of the costs the proxy reported; a call
    with no known cost (no `CallInfo`, or a ``cost_usd`` of ``None``) adds nothing to it
    and is counted in ``unpriced_calls``, so a nonzero count means the cost is a floor.
    """

    calls: NonNegativeInt = 0
    cost_usd: Decimal = Decimal(0)
    unpriced_calls: NonNegativeInt = 0

    def __add__(self, other: Usage) -> UsageTotal:
        tokens = Usage.__add__(self, other)
        if isinstance(other, UsageTotal):
            calls, cost, unpriced = other.calls, other.cost_usd, other.unpriced_calls
        else:
            calls, cost, unpriced = 0, Decimal(0), 0
        return UsageTotal(
            **tokens.model_dump(),
            calls=self.calls + calls,
            cost_usd=self.cost_usd + cost,
            unpriced_calls=self.unpriced_calls + unpriced,
        )

    @classmethod
    def of(cls, record: CallRecord) -> UsageTotal:
        """One call's contribution."""
        cost = None if record.call is None else record.call.cost_usd
        return cls(
            **record.usage.model_dump(),
            calls=1,
            cost_usd=Decimal(0) if cost is None else cost,
            unpriced_calls=1 if cost is None else 0,
        )


class UsageTotals(_Frozen):
    """Usage of a task so far: over all calls (``total``) and per role (``by_role``).

    Calls recorded without a role (made through a client, not a router) count in
    ``total`` only.
    """

    total: UsageTotal = UsageTotal()
    by_role: dict[str, UsageTotal] = {}

    @classmethod
    def of(cls, records: Iterable[CallRecord]) -> UsageTotals:
        """The totals of some call records."""
        total = UsageTotal()
        by_role: dict[str, UsageTotal] = {}
        for record in records:
            one = UsageTotal.of(record)
            total += one
            if record.role is not None:
                by_role[record.role] = by_role.get(record.role, UsageTotal()) + one
        return cls(total=total, by_role=by_role)


def pending_calls(events: Iterable[CanonicalEvent]) -> list[ToolCall]:
    """The tool calls of a log that no `ToolResult` answers, in log order."""
    events = list(events)
    answered = {event.call_id for event in events if isinstance(event, ToolResult)}
    return [e for e in events if isinstance(e, ToolCall) and e.call_id not in answered]


@dataclass(frozen=True, slots=True)
class ResumedTask:
    """Everything a task file says, ready to continue from (`LogStore.resume`).

    ``events`` is the canonical log in order (what ``complete`` takes);
    ``pending_calls`` the tool calls still unanswered (run them, or answer them with
    ``ToolResult(..., is_error=True)``); ``usage`` the totals of every recorded call.
    """

    pin: Pin
    events: list[CanonicalEvent]
    pending_calls: list[ToolCall]
    usage: UsageTotals
    #: The store the task was resumed from, for appending (``RoleRouter.from_pin(pin, store=...)``).
    store: LogStore
    #: The torn bytes a crash left at the end of the file and `resume` removed (None if none).
    repaired: bytes | None = None


def pin_difference(stored: dict[str, Any], given: dict[str, Any]) -> str:
    """``" (differs in: a, roles.planner)"``: the keys whose values differ, for the message."""
    keys: list[str] = []
    for key in sorted((set(stored) | set(given)) - {"fingerprint"}):
        left, right = stored.get(key), given.get(key)
        if left == right:
            continue
        if isinstance(left, dict) and isinstance(right, dict):
            inner = sorted(set(left) | set(right))
            keys += [f"{key}.{k}" for k in inner if left.get(k) != right.get(k)]
        else:
            keys.append(key)
    return f" (differs in: {', '.join(keys)})" if keys else ""
