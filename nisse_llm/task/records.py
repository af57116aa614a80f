"""The records of a task file beside its events: the pin header, per-call records, usage totals.

Pure: no I/O. `nisse_llm.task.logstore.TaskStore` writes and reads these records; a line of a
task file is one of these shapes, told apart by its key::

    {"seq": 0, "at": ..., "header": {"format": 1, "pin": {...pin.record()...}}}
    {"seq": 1, "at": ..., "event": {"kind": "user_text", ...}}        # a StoredEvent
    {"seq": 2, "at": ..., "llm_call": {"role": ..., "usage": {...}, "outcome": "ok", ...}}
    {"seq": 3, "at": ..., "tool_run": {"call_id": ..., "tool": ..., "outcome": "started"}}
    {"seq": 4, "at": ..., "batch": {"events": [...]}}      # then those events, same write
    {"seq": 5, "at": ..., "tools": {"specs": [{"name": ..., ...}]}}  # the tools offered
    {"seq": 6, "at": ..., "repin": {"changed": [...], "by": ..., "pin": {...}}}  # a repin
    {"seq": 7, "at": ..., "program": {"op": "run", "role": ..., "outcome": "started"}}
    {"seq": 8, "at": ..., "approval": {"call_id": ..., "tool": ..., "outcome": "pending"}}
    {"seq": 9, "at": ..., "parent": {"key": ..., "role": ...}}     # a sub-task's parent

Files written before task records hold ``event`` lines only and read unchanged, and files
written before tool-run records hold none of them.

A call is written twice: a ``"started"`` record before its request leaves, and its end
record (``start`` naming the first) when it ends; a start with no end is a call of
unknown outcome (the process died mid-call). A tool run is written before the tool
runs (``"started"``); its `ToolResult` event follows. A start with no result is a run of
unknown outcome, and the ``"unknown"`` record (``start`` naming it) says the loop gave up on
learning it. A crash inside a write of several records keeps its first ones whole, so
a batch of events that must not be cut (a reply: its text and its tool calls) is written
after a ``batch`` record holding them all, in the same write: a batch cut short is
finished from it (`unfinished_batch`). A ``tools`` record holds the specs a task's step
offered the model, written when they differ from the last ones recorded, so a resumed task
knows what it offered before (`offered_tools`). A ``program`` record is one call of the
task's program (`ProgramRecord`: a ``step``, ``run`` or ``run_as``, started and done; a
``say`` rides on the batch of its message), so a task reopened replays its program. A
`Compaction` event names the records it replaces; `compacted_view` applies them, in file
order, to give the log a request sends.
A ``repin`` record (``nisse-llm task repin``) holds the pin record the task runs with from
there on: a task's pin is its last repin's, else its header's (`pin_in_force`).
An ``approval`` record is a step of a tool call's approval: pending, approved or denied
(`nisse_llm.task.approvals`). A ``parent`` record names the task that delegated this one
(`nisse_llm.task.delegation`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Annotated, Any, Generic, Literal, TypeAlias, TypeVar

from pydantic import BaseModel, ConfigDict, Discriminator, Field, NonNegativeInt, Tag

from nisse_llm.errors import TaskHeaderMissing, TaskPinMismatch
from nisse_llm.events.canonical import (
    CallInfo,
    CanonicalEvent,
    Compaction,
    StoredEvent,
    ToolCall,
    ToolResult,
    ToolSpec,
    Usage,
)
from nisse_llm.task.approvals import ApprovalRecord, StoredApproval
from nisse_llm.task.delegation import StoredParent

if TYPE_CHECKING:
    from nisse_llm.config.settings import Pin
    from nisse_llm.task.compaction import LogFix

__all__ = [
    "TASK_FORMAT",
    "ApprovalRecord",
    "BatchRecord",
    "CallRecord",
    "OpenedPin",
    "ProgramRecord",
    "RepinRecord",
    "ResumedTask",
    "StoredApproval",
    "StoredBatch",
    "StoredCall",
    "StoredHeader",
    "StoredParent",
    "StoredProgram",
    "StoredRecord",
    "StoredRepin",
    "StoredToolRun",
    "StoredTools",
    "TaskHeader",
    "TaskHeaderMissing",
    "TaskPinMismatch",
    "ToolRunRecord",
    "ToolsRecord",
    "UsageTotal",
    "UsageTotals",
    "ViewItem",
    "compacted_view",
    "compaction_record",
    "offered_tools",
    "pending_calls",
    "pin_changes_message",
    "pin_difference",
    "pin_in_force",
    "pin_keys",
    "unfinished_batch",
    "unknown_calls",
]

#: Version of the header layout; a header of another format is refused.
TASK_FORMAT: Literal[1] = 1


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class TaskHeader(_Frozen):
    """What a task starts with: the pin record (`Pin.record`: no token, a fingerprint)."""

    format: Literal[1] = TASK_FORMAT
    pin: dict[str, Any]


class StoredHeader(_Frozen):
    """The first record of a task file, written once by `TaskStore.begin`."""

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
    usage is known), the class name of the error the call raised (``"BudgetExhausted"``),
    or ``"started"`` for the record written before the request left. ``start`` is the
    number of that record in an end record. ``usage`` is zero when no reply was parsed.
    ``call`` holds what the proxy said about the call (its id and cost) when the client
    exposed it, else ``None``. ``compacted`` says the router compacted the log for this
    call: ``"threshold"`` (before it, the log being near the window) or ``"overflow"``
    (after the model refused it as too long).
    """

    role: str | None = None
    model: str
    route: str
    usage: Usage = Usage()
    call: CallInfo | None = None
    outcome: str = "ok"
    start: NonNegativeInt | None = Field(default=None, exclude_if=lambda v: v is None)
    compacted: Literal["threshold", "overflow"] | None = Field(
        default=None, exclude_if=lambda v: v is None
    )


class StoredCall(_Frozen):
    """A `CallRecord` in the task file."""

    seq: NonNegativeInt
    at: datetime
    llm_call: CallRecord

    @classmethod
    def now(cls, seq: int, record: CallRecord) -> StoredCall:
        """A call record stamped with the current UTC time."""
        return cls(seq=seq, at=datetime.now(UTC), llm_call=record)


class ToolRunRecord(_Frozen):
    """One run of a tool call: ``"started"`` is written (fsynced) before the tool runs, and
    its `ToolResult` event follows; ``"unknown"`` (``start`` naming the start record) says
    the run was cut and its outcome could not be learnt, so an error result stands for it."""

    call_id: str
    tool: str
    outcome: Literal["started", "unknown"] = "started"
    start: NonNegativeInt | None = Field(default=None, exclude_if=lambda v: v is None)


class StoredToolRun(_Frozen):
    """A `ToolRunRecord` in the task file."""

    seq: NonNegativeInt
    at: datetime
    tool_run: ToolRunRecord

    @classmethod
    def now(cls, seq: int, record: ToolRunRecord) -> StoredToolRun:
        """A tool-run record stamped with the current UTC time."""
        return cls(seq=seq, at=datetime.now(UTC), tool_run=record)


class ProgramRecord(_Frozen):
    """One call of a task's program (``say``, ``step``, ``run``, ``run_as`` or ``delegate``),
    as asked: its ``role``, the ``text`` said (``say``; a ``delegate``'s prompt), the answer
    type's name (``run_as``), the ``system`` prompt when it differs from the one before
    (``""``: none from here on), and a ``delegate``'s ``child`` task key.

    ``"started"`` is written before the call acts and ``"done"`` (``start`` naming it,
    ``result`` what the call returned, as JSON) when it returns; a ``say`` is written
    ``"done"`` in its message's batch. A task reopened replays its program against these.
    """

    op: Literal["say", "step", "run", "run_as", "delegate"]
    role: str | None = Field(default=None, exclude_if=lambda v: v is None)
    text: str | None = Field(default=None, exclude_if=lambda v: v is None)
    images: NonNegativeInt = Field(default=0, exclude_if=lambda v: v == 0)
    output_type: str | None = Field(default=None, exclude_if=lambda v: v is None)
    system: str | None = Field(default=None, exclude_if=lambda v: v is None)
    child: str | None = Field(default=None, exclude_if=lambda v: v is None)
    outcome: Literal["started", "done"] = "started"
    start: NonNegativeInt | None = Field(default=None, exclude_if=lambda v: v is None)
    result: dict[str, Any] | None = Field(default=None, exclude_if=lambda v: v is None)


class StoredProgram(_Frozen):
    """A `ProgramRecord` in the task file."""

    seq: NonNegativeInt
    at: datetime
    program: ProgramRecord

    @classmethod
    def now(cls, seq: int, record: ProgramRecord) -> StoredProgram:
        """A program record stamped with the current UTC time."""
        return cls(seq=seq, at=datetime.now(UTC), program=record)


class BatchRecord(_Frozen):
    """Events appended together that must all be in the log or none: written first, in
    the same write as the events' own records, so a crash that cuts the write leaves what
    is missing here. ``call`` is the program's ``say`` these events are, if they are one."""

    events: list[CanonicalEvent]
    call: ProgramRecord | None = Field(default=None, exclude_if=lambda v: v is None)


class StoredBatch(_Frozen):
    """A `BatchRecord` in the task file."""

    seq: NonNegativeInt
    at: datetime
    batch: BatchRecord

    @classmethod
    def now(cls, seq: int, record: BatchRecord) -> StoredBatch:
        """A batch record stamped with the current UTC time."""
        return cls(seq=seq, at=datetime.now(UTC), batch=record)


class ToolsRecord(_Frozen):
    """The tool specs a step offered the model (as sent: what makes a tool repeatable is not
    part of a spec's JSON), written before the call when they differ from the last ones."""

    specs: list[ToolSpec]


class StoredTools(_Frozen):
    """A `ToolsRecord` in the task file."""

    seq: NonNegativeInt
    at: datetime
    tools: ToolsRecord

    @classmethod
    def now(cls, seq: int, record: ToolsRecord) -> StoredTools:
        """A tools record stamped with the current UTC time."""
        return cls(seq=seq, at=datetime.now(UTC), tools=record)


class RepinRecord(_Frozen):
    """An operator's deliberate move of a task to another pin (``nisse-llm task repin``):
    the keys it changed (``roles.executor``, ``base_url``), who made it, and the whole pin
    record (`Pin.record`, no token) the task runs with from this record on."""

    changed: list[str]
    by: str
    pin: dict[str, Any]


class StoredRepin(_Frozen):
    """A `RepinRecord` in the task file."""

    seq: NonNegativeInt
    at: datetime
    repin: RepinRecord

    @classmethod
    def now(cls, seq: int, record: RepinRecord) -> StoredRepin:
        """A repin record stamped with the current UTC time."""
        return cls(seq=seq, at=datetime.now(UTC), repin=record)


def _record_kind(value: Any) -> str | None:
    """Which record a line is, by its key (a dict while validating, a model when dumping)."""
    if isinstance(value, Mapping):
        keys = ("event", "llm_call", "tool_run", "batch", "tools", "repin", "program")
        for key in (*keys, "approval", "parent", "header"):
            if key in value:
                return key
        return None
    if isinstance(value, StoredEvent):
        return "event"
    if isinstance(value, StoredCall):
        return "llm_call"
    if isinstance(value, StoredToolRun):
        return "tool_run"
    if isinstance(value, StoredBatch):
        return "batch"
    if isinstance(value, StoredTools):
        return "tools"
    if isinstance(value, StoredRepin):
        return "repin"
    if isinstance(value, StoredProgram):
        return "program"
    if isinstance(value, StoredApproval):
        return "approval"
    if isinstance(value, StoredParent):
        return "parent"
    return "header" if isinstance(value, StoredHeader) else None


#: Any line of a task file: a header, an event, a call, tool-run, batch, tools, repin,
#: program, approval or parent record.
StoredRecord: TypeAlias = Annotated[
    Annotated[StoredEvent, Tag("event")]
    | Annotated[StoredCall, Tag("llm_call")]
    | Annotated[StoredToolRun, Tag("tool_run")]
    | Annotated[StoredBatch, Tag("batch")]
    | Annotated[StoredTools, Tag("tools")]
    | Annotated[StoredRepin, Tag("repin")]
    | Annotated[StoredProgram, Tag("program")]
    | Annotated[StoredApproval, Tag("approval")]
    | Annotated[StoredParent, Tag("parent")]
    | Annotated[StoredHeader, Tag("header")],
    Discriminator(
        _record_kind,
        custom_error_type="record_kind",
        custom_error_message=(
            "a record holds one of 'event', 'llm_call', 'tool_run', 'batch', 'tools', 'repin', "
            "'program', 'approval', 'parent' or 'header'"
        ),
    ),
]

RECORD_TYPES = (
    StoredEvent,
    StoredCall,
    StoredToolRun,
    StoredBatch,
    StoredTools,
    StoredRepin,
    StoredProgram,
    StoredApproval,
    StoredParent,
    StoredHeader,
)


class UsageTotal(Usage):
    """Tokens of several calls (the `Usage` fields, summed), their count and their cost.

    ``cost_usd`` is the exact ``Decimal`` sum of the costs the proxy reported; a call
    with no known cost (no `CallInfo`, or a ``cost_usd`` of ``None``) adds nothing to it
    and is counted in ``unpriced_calls``, so a nonzero count means the cost is a floor.
    ``unknown_calls`` counts apart the calls that started and never ended (the process
    died mid-call): not in ``calls``, but possibly billed.
    """

    calls: NonNegativeInt = 0
    cost_usd: Decimal = Decimal(0)
    unpriced_calls: NonNegativeInt = 0
    unknown_calls: NonNegativeInt = 0

    def __add__(self, other: Usage) -> UsageTotal:
        tokens = Usage.__add__(self, other)
        if isinstance(other, UsageTotal):
            calls, cost, unpriced = other.calls, other.cost_usd, other.unpriced_calls
            unknown = other.unknown_calls
        else:
            calls, cost, unpriced, unknown = 0, Decimal(0), 0, 0
        return UsageTotal(
            **tokens.model_dump(),
            calls=self.calls + calls,
            cost_usd=self.cost_usd + cost,
            unpriced_calls=self.unpriced_calls + unpriced,
            unknown_calls=self.unknown_calls + unknown,
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
    def of(cls, records: Iterable[CallRecord], unknown: Iterable[CallRecord] = ()) -> UsageTotals:
        """The totals of some call records (start records left out), ``unknown`` the start
        records of calls that never ended."""
        total = UsageTotal()
        by_role: dict[str, UsageTotal] = {}
        ended = [r for r in records if r.outcome != "started"]
        counted = [(r, UsageTotal.of(r)) for r in ended]
        counted += [(r, UsageTotal(unknown_calls=1)) for r in unknown]
        for record, one in counted:
            total += one
            if record.role is not None:
                by_role[record.role] = by_role.get(record.role, UsageTotal()) + one
        return cls(total=total, by_role=by_role)


def unknown_calls(starts: Iterable[StoredCall], ends: Iterable[StoredCall]) -> list[StoredCall]:
    """The start records no end record names: calls whose outcome is unknown."""
    ended = {c.llm_call.start for c in ends if c.llm_call.start is not None}
    return [c for c in starts if c.llm_call.outcome == "started" and c.seq not in ended]


def unfinished_batch(records: Sequence[object]) -> list[CanonicalEvent]:
    """The events of the file's last batch that a crash kept out of the file (the records
    after it hold only its first ones); empty when the batch is whole."""
    at = next(
        (n for n in range(len(records) - 1, -1, -1) if isinstance(records[n], StoredBatch)),
        None,
    )
    if at is None:
        return []
    batch = records[at]
    assert isinstance(batch, StoredBatch)
    wanted = batch.batch.events
    kept = 0
    for record in records[at + 1 : at + 1 + len(wanted)]:
        if not isinstance(record, StoredEvent) or record.event != wanted[kept]:
            break
        kept += 1
    return list(wanted[kept:])


def offered_tools(records: Iterable[object]) -> list[ToolSpec] | None:
    """The specs of the last tools record, or None when the task never recorded any."""
    found = None
    for record in records:
        if isinstance(record, StoredTools):
            found = record.tools.specs
    return None if found is None else list(found)


def pending_calls(events: Iterable[CanonicalEvent]) -> list[ToolCall]:
    """The tool calls of a log that no `ToolResult` answers, in log order."""
    events = list(events)
    answered = {event.call_id for event in events if isinstance(event, ToolResult)}
    return [e for e in events if isinstance(e, ToolCall) and e.call_id not in answered]


#: The store a task was resumed from (`TaskStore`; a type parameter, so the records need
#: not name the store that writes them).
Store = TypeVar("Store")


@dataclass(frozen=True, slots=True)
class ResumedTask(Generic[Store]):
    """Everything a task file says, ready to continue from (`TaskStore.resume`).

    ``events`` is the log the next request sends: the compacted view (every `Compaction`
    applied) with `repairs` made; ``history`` every event record as written;
    ``pending_calls`` the tool calls still unanswered (run them, or answer them with
    ``ToolResult(..., is_error=True)``); ``usage`` the totals of every recorded call;
    ``unknown_calls`` the start records of calls that never ended.
    """

    pin: Pin
    events: list[CanonicalEvent]
    pending_calls: list[ToolCall]
    usage: UsageTotals
    #: The store the task was resumed from, for appending (``RoleRouter.from_pin(pin, store=...)``).
    store: Store
    #: The torn bytes a crash left at the end of the file and `resume` removed (None if none).
    repaired: bytes | None = None
    #: Every event record, compactions included, in file order.
    history: list[StoredEvent] = field(default_factory=list)
    #: What `repair` changed in the view to make ``events`` render (the file is unchanged).
    repairs: list[LogFix] = field(default_factory=list)
    #: Calls that started and never ended: possibly billed, outcome unknown.
    unknown_calls: list[StoredCall] = field(default_factory=list)
    #: Every tool-run record, in file order (see `ToolRunRecord`).
    tool_runs: list[StoredToolRun] = field(default_factory=list)
    #: The tool specs the task last offered the model (None: it recorded none).
    offered_tools: list[ToolSpec] | None = None
    #: Every complete record, in file order, as `resume` read it.
    records: list[StoredRecord] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class ViewItem:
    """One event of a compacted view and the records it stands for (``first``..``last``)."""

    first: int
    last: int
    event: CanonicalEvent


def compacted_view(records: Iterable[StoredEvent]) -> list[ViewItem]:
    """The log a task's event records describe, each `Compaction` applied in file order.

    A compaction removes the items standing for records ``first_seq``..``last_seq`` and
    stands in their place (when it says anything: see `Compaction.text`), and elides the
    tool output or image of the items for the records in ``elided``.
    """
    from nisse_llm.task.compaction import elide

    items: list[ViewItem] = []
    for record in records:
        event = record.event
        if not isinstance(event, Compaction):
            items.append(ViewItem(record.seq, record.seq, event))
            continue
        if event.elided:
            targets = set(event.elided)
            items = [
                ViewItem(i.first, i.last, elide(i.event)) if i.first in targets else i
                for i in items
            ]
        if event.first_seq is None or event.last_seq is None:
            continue
        low, high = event.first_seq, event.last_seq
        at = next((n for n, i in enumerate(items) if i.last >= low), len(items))
        items = [i for i in items if not (low <= i.first and i.last <= high)]
        if event.text:
            items.insert(at, ViewItem(low, high, event))
    return items


def _kept(stored: CanonicalEvent, event: CanonicalEvent) -> bool:
    """Whether ``event`` is ``stored`` kept as it was (a marker may be its in-memory form,
    which does not name records but sends the same text)."""
    if stored == event:
        return True
    return (
        isinstance(stored, Compaction)
        and isinstance(event, Compaction)
        and event.first_seq is None
        and (stored.removed, stored.summary) == (event.removed, event.summary)
    )


def compaction_record(view: Sequence[ViewItem], compacted: Sequence[CanonicalEvent]) -> Compaction:
    """The `Compaction` to append for ``compacted``, a compaction of ``view`` (whose events
    not yet in the file, if any, follow it unchanged); `ValueError` if it is not one."""
    from nisse_llm.task.compaction import elide

    marker: Compaction | None = None
    first = last = None
    elided: list[int] = []
    i = 0
    for event in compacted:
        if i < len(view) and _kept(view[i].event, event):
            i += 1
        elif isinstance(event, Compaction) and event.first_seq is None and marker is None:
            start, owed = i, event.removed
            while owed > 0 and i < len(view):  # an earlier marker owes what it stood for
                gone = view[i].event
                owed -= gone.removed if isinstance(gone, Compaction) else 1
                i += 1
            if owed:
                raise ValueError("the compaction removes more events than the task file holds")
            if i > start:
                first, last = view[start].first, view[i - 1].last
            marker = event
        elif i < len(view) and elide(view[i].event) == event:
            elided.append(view[i].first)
            i += 1
        elif i >= len(view):
            continue  # an event not yet in the file, after the compacted part
        else:
            raise ValueError(
                f"not a compaction of this task's log: {type(event).__name__} at position "
                f"{i} matches no record"
            )
    if i < len(view):
        raise ValueError("not a compaction of this task's log: it ends before the file does")
    if marker is None and not elided:
        raise ValueError("nothing to record: the log is unchanged")
    return Compaction(
        removed=0 if marker is None else marker.removed,
        summary=None if marker is None else marker.summary,
        first_seq=first,
        last_seq=last,
        elided=tuple(elided),
    )


def pin_keys(stored: Mapping[str, Any], given: Mapping[str, Any]) -> list[str]:
    """The keys whose values differ between two pin records (a table's differing entries
    named inside it: ``roles.planner``), sorted; the fingerprint left out."""
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
    return keys


def pin_difference(stored: dict[str, Any], given: dict[str, Any]) -> str:
    """``" (differs in: a, roles.planner)"``: the keys whose values differ, for the message."""
    keys = pin_keys(stored, given)
    return f" (differs in: {', '.join(keys)})" if keys else ""


def pin_changes_message(
    where: object, stored: Mapping[str, Any], given: Mapping[str, Any], changes: Sequence[str]
) -> str:
    """The WARNING of a task opened with its own pin ``stored`` rather than ``given``."""
    return (
        f"task {where}: opened with its own pin {stored.get('fingerprint')}, not the pin "
        f"given ({given.get('fingerprint')}): the given pin differs in {', '.join(changes)} "
        "and applies only to tasks begun with it"
    )


def pin_in_force(records: Iterable[object]) -> dict[str, Any] | None:
    """The pin record a task runs with: its last repin's, else its header's (None: no
    header)."""
    found = None
    for record in records:
        if isinstance(record, StoredHeader):
            found = record.header.pin
        elif isinstance(record, StoredRepin):
            found = record.repin.pin
    return found


@dataclass(frozen=True, slots=True)
class OpenedPin:
    """The pin a task opened with (`TaskStore.open_pin`): the pin in force, and the keys
    where the pin given differs from it (empty: none, or a task begun with it)."""

    pin: Pin
    changes: tuple[str, ...] = ()
