"""A task's program, replayed, with no I/O: the calls its file records, how a call asked now
is matched against the one recorded at its point, and what a finished call returned.

A program is the sequence of ``say``, ``step``, ``run`` and ``run_as`` calls an agent makes
on one task. Each is recorded (`ProgramRecord`): a ``step``, ``run`` or ``run_as`` as it
starts and when it is done, with what it returned; a ``say`` once, in its message's batch.
A task reopened and driven from the top again meets its calls in order, as DBOS replays a
workflow's steps: a call recorded done returns its recorded outcome (no model call, no new
record), the first one not done resumes, and calls past the record run. A call that asks
something else than the record at its point (another kind, role, text or answer type) is
`TaskDiverged`, as Temporal refuses a replay the history does not hold.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any, Literal

from nisse_llm.agent.plan import Step
from nisse_llm.errors import TaskDiverged
from nisse_llm.events.canonical import (
    CanonicalEvent,
    Compaction,
    Completion,
    StoredEvent,
    ToolResult,
    Usage,
)
from nisse_llm.task.records import (
    ProgramRecord,
    StoredBatch,
    StoredCall,
    StoredProgram,
)

__all__ = [
    "Op",
    "Recorded",
    "check_same",
    "describe",
    "program_of",
    "replayed_step",
    "resumed_reply",
    "run_counts_since",
    "same_call",
    "step_events",
    "step_result",
    "system_change",
    "system_in_force",
]

#: A kind of program call.
Op = Literal["say", "step", "run", "run_as", "delegate"]
#: How long a said text may be in a `TaskDiverged` message before it is cut.
_SHOWN = 60


@dataclass(frozen=True, slots=True)
class Recorded:
    """One call of the program as the file holds it: the record of what it asked (its
    start, or a ``say``'s), the number of that record, the call's system prompt in force
    (None: none), and its done record and number once it returned."""

    asked: ProgramRecord
    seq: int
    system: str | None
    done: ProgramRecord | None = None
    done_seq: int | None = None

    def finished(self, record: ProgramRecord, seq: int) -> Recorded:
        """This call with its done record."""
        return replace(self, done=record, done_seq=seq)


def program_of(records: Iterable[object]) -> list[Recorded]:
    """The program a task file records, in order (each call with its done record, if any)."""
    calls: list[Recorded] = []
    at: dict[int, int] = {}
    system: str | None = None
    for record in records:
        if isinstance(record, StoredBatch) and record.batch.call is not None:
            asked, seq = record.batch.call, record.seq
        elif isinstance(record, StoredProgram):
            asked, seq = record.program, record.seq
            if asked.outcome == "done":
                if asked.start in at:
                    n = at[asked.start]
                    calls[n] = calls[n].finished(asked, seq)
                continue
        else:
            continue
        system = system_in_force(system, asked.system)
        at[seq] = len(calls)
        call = Recorded(asked, seq, system)
        calls.append(call.finished(asked, seq) if asked.op == "say" else call)
    return calls


def system_in_force(before: str | None, recorded: str | None) -> str | None:
    """The system prompt after a record whose ``system`` is ``recorded`` (None: unchanged,
    ``""``: none)."""
    if recorded is None:
        return before
    return recorded or None


def system_change(before: str | None, given: str | None) -> str | None:
    """What a new call's record says of its system prompt ``given`` after ``before``: None
    when unchanged, ``""`` when there is none from here on."""
    if given == before or (not given and not before):
        return None
    return given or ""


def describe(record: ProgramRecord) -> str:
    """A call as a program spells it: ``run_as('planner', Plan)``, ``say('Go on.')``."""
    text = record.text or ""
    shown = text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."
    if record.op == "say":
        images = f", images={record.images}" if record.images else ""
        return f"say({shown!r}{images})"
    if record.op == "delegate":
        return f"delegate({record.role!r}, {shown!r})"
    extra = f", {record.output_type}" if record.output_type else ""
    return f"{record.op}({record.role!r}{extra})"


def same_call(recorded: ProgramRecord, asked: ProgramRecord) -> bool:
    """Whether ``asked`` is the call ``recorded``: the same kind, role, text and answer type
    (its system prompt aside: a resumed call sends the recorded one)."""
    return _identity(recorded) == _identity(asked)


def _identity(record: ProgramRecord) -> tuple[Any, ...]:
    return (record.op, record.role, record.text, record.images, record.output_type)


def check_same(position: int, recorded: Recorded, asked: ProgramRecord) -> None:
    """`TaskDiverged` unless ``asked`` is the call ``recorded`` at ``position``."""
    if same_call(recorded.asked, asked):
        return
    was, now = describe(recorded.asked), describe(asked)
    raise TaskDiverged(
        f"the task's program diverged from its record at call {position}: the file holds "
        f"{was} there, the program asked {now}; nothing was written. Run the program "
        "that began the task, or begin a new task",
        position=position,
        recorded=was,
        asked=now,
    )


def run_counts_since(records: Iterable[object], start: int) -> tuple[int, Usage, Decimal]:
    """The steps, usage and cost of the model calls after record ``start`` whose replies
    reached the file (what a resumed run already spent on the log it goes on from; a call
    whose reply a kill lost is made again, and counted then)."""
    steps, usage, cost = 0, Usage(), Decimal(0)
    ended: StoredCall | None = None
    for record in records:
        if getattr(record, "seq", -1) <= start:
            continue
        if isinstance(record, StoredCall):
            ended = record if record.llm_call.outcome == "ok" else None
        elif isinstance(record, StoredEvent | StoredBatch) and ended is not None:
            call = ended.llm_call
            steps += 1
            usage = usage + call.usage
            if call.call is not None and call.call.cost_usd is not None:
                cost += call.call.cost_usd
            ended = None
    return steps, usage, cost


def step_events(records: Sequence[object], start: int, end: int | None) -> list[CanonicalEvent]:
    """The events written between records ``start`` and ``end`` (None: the file's end),
    compactions left out: what one program call added to the log."""
    return [
        r.event
        for r in records
        if isinstance(r, StoredEvent)
        and r.seq > start
        and (end is None or r.seq < end)
        and not isinstance(r.event, Compaction)
    ]


def step_result(step: Step) -> dict[str, Any]:
    """A done step's ``result``: its completion without the events (the file holds them)
    and how many events each part added."""
    return {
        "completion": step.completion.model_dump(mode="json", exclude={"events"}),
        "finished": len(step.finished),
        "reply": len(step.completion.events),
        "results": len(step.results),
    }


def resumed_reply(
    records: Sequence[object], start: int
) -> tuple[Completion, list[ToolResult]] | None:
    """The reply a step cut after its model call wrote (after record ``start``) and the
    results that answer it, or None when the call's reply never reached the file."""
    added = step_events(records, start, None)
    at = next((n for n, e in enumerate(added) if not isinstance(e, ToolResult)), None)
    if at is None:
        return None
    end = next((n for n in range(at, len(added)) if isinstance(added[n], ToolResult)), None)
    reply = added[at:end]
    results = [] if end is None else [e for e in added[end:] if isinstance(e, ToolResult)]
    ended = [
        r.llm_call
        for r in records
        if isinstance(r, StoredCall) and r.seq > start and r.llm_call.outcome == "ok"
    ]
    usage, call = (ended[-1].usage, ended[-1].call) if ended else (Usage(), None)
    return Completion(events=reply, usage=usage, call=call), results


def replayed_step(
    result: dict[str, Any], events: Sequence[CanonicalEvent]
) -> tuple[list[ToolResult], Completion, list[ToolResult]]:
    """The finished results, completion and results of a done step, from its ``result``
    and the events it added (`step_events`)."""
    finished, reply = result["finished"], result["reply"]
    parts = list(events)
    done = [e for e in parts[:finished] if isinstance(e, ToolResult)]
    completion = Completion.model_validate(
        {**result["completion"], "events": parts[finished : finished + reply]}
    )
    answered = [e for e in parts[finished + reply :] if isinstance(e, ToolResult)]
    return done, completion, answered
