"""What `Task` and `AsyncTask` share beside their I/O: opening the store, the router's checks,
and the task's state read back from its file."""

from __future__ import annotations

import inspect
import logging
import warnings
from collections.abc import Awaitable, Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, cast

from nisse_llm import _telemetry
from nisse_llm.agent.offer import offer
from nisse_llm.agent.plan import is_done, unknown_tool_runs
from nisse_llm.agent.program import Recorded, check_same, same_call, system_change
from nisse_llm.errors import TaskClosed, TaskPinMismatch
from nisse_llm.events.canonical import CanonicalEvent, ToolCall, ToolResult, ToolSpec
from nisse_llm.task.approvals import PendingApproval, awaiting
from nisse_llm.task.stores import AsyncStoreArg, StoreArg, open_async_store, open_store
from nisse_llm.tools import Toolbox

if TYPE_CHECKING:
    from nisse_llm._telemetry import AgentTrace
    from nisse_llm.config.settings import Pin
    from nisse_llm.events.tool_changes import ToolChanges
    from nisse_llm.task.compaction import LogFix
    from nisse_llm.task.lease import FileLease
    from nisse_llm.task.logstore import LogRead
    from nisse_llm.task.records import (
        OpenedPin,
        ProgramRecord,
        StoredCall,
        StoredRecord,
        StoredToolRun,
        ToolsRecord,
        UsageTotals,
    )
    from nisse_llm.transport._router_base import RouterBase

__all__ = [
    "AsyncReconcile",
    "AsyncStoreArg",
    "KeptLog",
    "Reconcile",
    "StoreArg",
    "TaskBase",
    "areconciled",
    "history_of",
    "open_async_store",
    "open_store",
    "pending_approvals_of",
    "reconciled",
    "router_pin",
    "tool_runs_of",
    "toolbox_of",
    "unknown_calls_of",
    "unknown_tool_runs_of",
    "usage_of",
    "view_of",
]

#: The task's hook for a cut run of a tool that may not run again: its result, if known.
Reconcile = Callable[[ToolCall], ToolResult | None]
#: `AsyncTask`'s hook: a function as `Reconcile`, or a coroutine function (awaited).
AsyncReconcile = Callable[[ToolCall], ToolResult | Awaitable[ToolResult | None] | None]

_NO_TOOLS = Toolbox([])
logger = logging.getLogger("nisse_llm")


async def areconciled(hook: AsyncReconcile, call: ToolCall) -> ToolResult | None:
    """What an `AsyncTask`'s ``reconcile`` hook answers for ``call`` (awaited if it is a
    coroutine function)."""
    found = hook(call)
    if found is None or isinstance(found, ToolResult):
        return found
    return await found


def reconciled(hook: AsyncReconcile, call: ToolCall) -> ToolResult | None:
    """What a `Task`'s ``reconcile`` hook answers for ``call``; an awaitable is a
    `TypeError` (a coroutine function is `AsyncTask`'s kind of hook)."""
    found = hook(call)
    if found is None or isinstance(found, ToolResult):
        return found
    if inspect.iscoroutine(found):
        found.close()
    raise TypeError("a Task's reconcile hook is a plain function: use AsyncTask to await one")


def toolbox_of(tools: Toolbox | Iterable[Callable[..., Any]] | None) -> Toolbox:
    """``tools`` as a `Toolbox` (an empty one for None)."""
    if tools is None:
        return _NO_TOOLS
    return tools if isinstance(tools, Toolbox) else Toolbox(tools)


class _Store(Protocol):
    @property
    def task_id(self) -> str | None: ...

    def same_task(self, other: object) -> bool: ...

    def abandon(self) -> None: ...

    def watch(self, written: Callable[[Sequence[StoredRecord]], None]) -> Callable[[], None]: ...


S = TypeVar("S", bound=_Store)
R = TypeVar("R")


def checked_router(router: RouterBase[Any, S], store: S, compaction: Any) -> S:
    """The store calls are recorded in: ``router``'s, which must be ``store``'s file; a
    `ValueError` says what to fix."""
    if compaction is not None:
        raise ValueError(
            "a task given a router compacts as the router does: pass compaction= to it"
        )
    held = router.store
    if held is None or not held.same_task(store):
        raise ValueError(
            f"the router must record its calls in the task's file ({store!r}): build it "
            f"with store={type(store).__name__}(...) (every call is written before it leaves)"
        )
    return held


def router_pin(router: RouterBase[Any, Any], pin: Pin, *, strict_pin: bool) -> OpenedPin:
    """The pin in force of a task opened through ``router`` (begun: its pin is the task's
    own) and the keys where ``pin`` differs from it, with the WARNING the router did not
    already log, or `TaskPinMismatch` with ``strict_pin``."""
    from nisse_llm.task.records import (
        OpenedPin,
        pin_changes_message,
        pin_difference,
        pin_keys,
    )

    in_force, record = router.pin.record(), pin.record()
    changes = tuple(pin_keys(in_force, record))
    if changes and strict_pin:
        raise TaskPinMismatch(
            f"{router.store!r}: the task runs with pin {in_force['fingerprint']}, not "
            f"{record['fingerprint']}{pin_difference(in_force, record)}",
            path=repr(router.store),
            stored=str(in_force["fingerprint"]),
            given=str(record["fingerprint"]),
        )
    if changes and not router.pin_changes:
        logger.warning(pin_changes_message(repr(router.store), in_force, record, changes))
    return OpenedPin(pin=router.pin, changes=changes)


def view_of(found: LogRead) -> list[CanonicalEvent]:
    """The log the next request sends: the file's compacted view, repaired."""
    from nisse_llm.task.compaction import repair

    return repair([item.event for item in found.view], answer_dangling=False)[0]


def history_of(found: LogRead) -> list[CanonicalEvent]:
    """Every event the task file holds, compactions included, in file order."""
    return [record.event for record in found.events]


def usage_of(found: LogRead) -> UsageTotals:
    """The usage of every recorded call."""
    return found.usage


def unknown_calls_of(found: LogRead) -> list[StoredCall]:
    """The start records of model calls that never ended."""
    return found.unknown_calls


def unknown_tool_runs_of(found: LogRead) -> list[ToolCall]:
    """The tool calls whose run was cut and whose outcome is unknown."""
    return unknown_tool_runs((r.event for r in found.events), found.tool_runs)


def pending_approvals_of(found: LogRead) -> list[PendingApproval]:
    """The tool calls awaiting a person's approval, in the order recorded."""
    return awaiting((r.event for r in found.events), found.records)


def tool_runs_of(found: LogRead) -> list[StoredToolRun]:
    """Every tool-run record of the file."""
    return found.tool_runs


class KeptLog:
    """A task's records, read once at opening and kept as its store appends (the router's
    call and compaction records too), and what the task reads of them: each part computed
    once per change, never read from the store again."""

    def __init__(self, records: Iterable[StoredRecord]) -> None:
        from nisse_llm.task.logstore import LogRead

        self._read = LogRead(records=list(records))
        self._parts: dict[Callable[[LogRead], Any], Any] = {}

    def written(self, batch: Iterable[StoredRecord]) -> None:
        """The store appended ``batch``."""
        self._read.records.extend(batch)
        self._parts.clear()

    def part(self, of: Callable[[LogRead], R]) -> R:
        """``of(records)``, computed once per change (a list is the caller's own copy)."""
        if of not in self._parts:
            self._parts[of] = of(self._read)
        found: R = self._parts[of]
        return cast("R", list(found)) if isinstance(found, list) else found


class TaskBase(Generic[S]):
    """A task's store and pin, the log the next request sends, and its state in the file."""

    def __init__(
        self,
        store: S,
        pin: Pin,
        log: list[CanonicalEvent],
        *,
        owned: bool,
        reconcile: AsyncReconcile | None,
        repairs: list[LogFix],
        lease: FileLease | None = None,
        offered_tools: list[ToolSpec] | None = None,
        pin_changes: tuple[str, ...] = (),
        program: list[Recorded] | None = None,
        records: Iterable[StoredRecord] = (),
    ) -> None:
        self._store = store
        #: The records as `resume` read them, kept as the store appends: `events`,
        #: `history` and `usage` read these, not the store.
        self._kept = KeptLog(records)
        self._unwatch = store.watch(self._kept.written)
        self._pin_changes = pin_changes
        #: The driver's lease of a task file, released as the task closes.
        self._held = lease
        self._pin = pin
        #: The log the next request is built from: the view when opened, then every event
        #: appended since (the router substitutes what it compacted).
        self._log = log
        self._owned = owned
        self._reconcile = reconcile
        self._repairs = repairs
        #: The tool specs last recorded (or equal to them), and whether a step of this
        #: opening has offered tools yet.
        self._offered = offered_tools
        self._stepped = False
        #: Whether the task was closed (then every method raises `TaskClosed`).
        self._closed = False
        #: The program's calls: those the file recorded, then those made since.
        self._program: list[Recorded] = [] if program is None else program
        #: How many calls of the program this opening has asked (its place in the replay).
        self._position = 0
        #: The system prompt in force after the program's last call (None: none).
        self._system = self._program[-1].system if self._program else None

    @property
    def store(self) -> S:
        """The task's store."""
        self._check_open("store")
        return self._store

    @property
    def pin(self) -> Pin:
        """The pin in force: the one the task was begun with (or last repinned to by
        ``nisse-llm task repin``), with the token of the pin it was opened with."""
        self._check_open("pin")
        return self._pin

    @property
    def pin_changes(self) -> tuple[str, ...]:
        """The keys where the pin given to `open` differs from the pin in force
        (``roles.executor``, ``mcp_servers``); empty when none."""
        self._check_open("pin_changes")
        return self._pin_changes

    @property
    def done(self) -> bool:
        """Whether the program's last run finished (a ``say`` since starts another; for a
        task whose file records no program, or after a ``step``: whether the model's last
        reply asked for no tool)."""
        self._check_open("done")
        last = self._program[-1] if self._program else None
        if last is None or last.asked.op == "step":
            return (last is None or last.done is not None) and is_done(self._log)
        return last.asked.op != "say" and last.done is not None

    def _enter(self, asked: ProgramRecord) -> Recorded | None:
        """The call the file recorded at this point of the program, checked to be ``asked``
        (`TaskDiverged` if not: nothing written), or None past the record: a new call.

        The same call asked again after it failed (a retry after `UpstreamUnavailable`)
        goes on with the failed one, so a program run again from the top, asking it once,
        meets one record."""
        position = self._position
        program = self._program
        last = program[-1] if program and position == len(program) else None
        if last is not None and last.done is None and same_call(last.asked, asked):
            return last
        found = program[position] if position < len(program) else None
        if found is not None:
            check_same(position, found, asked)
        self._position += 1
        return found

    def _system_change(self, system: str | None) -> str | None:
        """What a new call's start record says of its system prompt (see `system_change`)."""
        return system_change(self._system, system)

    @property
    def repairs(self) -> list[LogFix]:
        """What the view needed changed to render when the task was opened (see `repair`)."""
        self._check_open("repairs")
        return list(self._repairs)

    @property
    def offered_tools(self) -> list[ToolSpec] | None:
        """The tool specs the task last offered the model, as its file records them (None:
        it has offered none)."""
        self._check_open("offered_tools")
        return None if self._offered is None else list(self._offered)

    def tool_changes(self, tools: Toolbox | Iterable[Callable[..., Any]] | None) -> ToolChanges:
        """How ``tools`` differ from the tools the task last offered the model, as recorded
        in its file (empty: the same, or none offered yet). Ask before a resumed task's
        first step to refuse, or to tell the model (`say`), when its tools changed."""
        self._check_open("tool_changes()")
        return offer(self._offered, toolbox_of(tools).specs).changes

    def _offered_record(self, box: Toolbox) -> ToolsRecord | None:
        """The tools record a step offering ``box`` appends (None: the specs last recorded),
        with a WARNING at the first step of an opening (the tools a resumed task had
        changed); the task then counts them offered."""
        specs = box.specs
        planned = offer(self._offered, specs)
        if planned.changes and not self._stepped:
            logger.warning("task %r: %s", self._store, planned.changes)
        if self._offered is not None or planned.record is not None:
            self._offered = specs
        self._stepped = True
        return planned.record

    def _check_open(self, name: str) -> None:
        """`TaskClosed` if the task was closed: a closed task runs and reads nothing (its
        lease is gone, so another driver may be writing its store)."""
        if self._closed:
            raise TaskClosed(
                f"{self!r} is closed: {name} ran nothing; call or read it before closing "
                "the task (inside its with block; a run's outcome is in the RunResult it "
                "returned), or open the task again to go on"
            )

    def _closing(self) -> bool:
        """Mark the task closed; False when it already was (closing twice does nothing)."""
        if self._closed:
            return False
        self._closed = True
        self._unwatch()
        return True

    def __del__(self) -> None:
        # A task dropped while open would hold its lease until the process exits.
        if getattr(self, "_closed", True):
            return
        self._closed = True
        self._unwatch()
        warnings.warn(
            f"{self!r} was never closed; its lease is released now: close the task "
            "(open it in a with block)",
            ResourceWarning,
            stacklevel=1,
            source=self,
        )
        if self._held is not None:
            self._held.close()
        if self._owned:
            # Without blocking or awaiting: a PostgreSQL store stops its heartbeat and
            # releases its lease row in the background (else it runs out).
            self._store.abandon()

    def _agent_span(self, role: str) -> AbstractContextManager[AgentTrace]:
        tracer = _telemetry.tracer
        if tracer is None:
            return _UNTRACED
        return tracer.agent(role, self._store.task_id)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._store!r})"


class _Untraced(AbstractContextManager["_Untraced"]):
    """A run's span while telemetry is off: it records nothing."""

    def __exit__(self, *exc: object) -> None:
        return None

    def ended(self, steps: int, usage: Any) -> None:
        return None


_UNTRACED = _Untraced()
