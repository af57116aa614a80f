"""What the durable loop decides, with no I/O: how a cut step is finished, when a run stops,
and what a run or a step returns. `AsyncTask` and its generated twin `Task` only act on it.

A step writes, in order: the call's start record (the router), the reply's events in one
write, then per tool call a tool-run start record, the tool's run, and its `ToolResult`.
A process killed anywhere leaves a prefix of that. On reopening, each tool call the view
leaves unanswered is finished by `finish_plan`:

- no start record: the tool never ran; run it;
- a start record and no result: the run was cut, its outcome unknown. A repeatable tool
  runs again; another is asked of the task's ``reconcile`` hook, and failing that gets
  `unknown_result` (an error result the model reads) beside an ``"unknown"`` record;
- an ``"unknown"`` record and no result (killed between the two): `unknown_result` again.

A call of a tool that needs approval (or one the file records pending) waits until an
``approval`` record decides it (`nisse_llm.task.approvals`): undecided, it stays
unanswered (``"await"``) and the run stops; denied, it is answered with `denied_result`
(``"deny"``); approved, it is finished as any other call (run once, its start recorded).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ValidationError

from nisse_llm.errors import OutputValidationError, RunLimitReached
from nisse_llm.events.canonical import (
    AssistantText,
    CallInfo,
    CanonicalEvent,
    Compaction,
    Completion,
    Reasoning,
    ToolCall,
    ToolResult,
    Usage,
    UserText,
)
from nisse_llm.render.typed import (
    ACCEPTED,
    answer_tool,
    error_summary,
    native_feedback,
    parse_answer_text,
)
from nisse_llm.task.approvals import PendingApproval, StoredApproval, decision
from nisse_llm.task.records import StoredToolRun, pending_calls

__all__ = [
    "Finish",
    "FinishHow",
    "RunCounts",
    "RunLimits",
    "RunResult",
    "Step",
    "answer_request",
    "answer_text",
    "asked_for_answer",
    "final_text",
    "finish_plan",
    "fresh_plan",
    "is_done",
    "native_answer",
    "run_limits",
    "run_result",
    "run_result_record",
    "typed_answer",
    "unknown_result",
    "unknown_tool_runs",
    "waiting_step",
]

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)

#: How a cut step's tool call is finished (see the module docstring).
FinishHow = Literal["run", "rerun", "reconcile", "unknown", "await", "deny"]


@dataclass(frozen=True, slots=True)
class Finish:
    """One unanswered tool call and how to answer it; ``start`` is the number of its
    tool-run start record (None if it never started); ``approval`` the call's pending
    record (``"await"``: None if not written yet) or its denial (``"deny"``)."""

    call: ToolCall
    how: FinishHow
    start: int | None = None
    approval: StoredApproval | None = None

    def waiting(self) -> PendingApproval:
        """The call as awaiting approval."""
        at = None if self.approval is None else self.approval.at
        return PendingApproval(self.call.call_id, self.call.tool, self.call.arguments, at)


def fresh_plan(
    events: Iterable[CanonicalEvent], needs_approval: Callable[[str], bool]
) -> list[Finish]:
    """How to answer the tool calls of a reply just written: run each, or await its
    approval."""
    return [
        Finish(e, "await" if needs_approval(e.tool) else "run")
        for e in events
        if isinstance(e, ToolCall)
    ]


def finish_plan(
    events: Sequence[CanonicalEvent],
    tool_runs: Iterable[StoredToolRun],
    is_repeatable: Callable[[str], bool],
    approvals: Mapping[str, Sequence[StoredApproval]] | None = None,
    needs_approval: Callable[[str], bool] = lambda _: False,
) -> list[Finish]:
    """How to answer each tool call ``events`` leave unanswered, in log order, given the
    task file's tool-run records, which tools may run again, the file's approval records
    by call id and which tools need approval."""
    approvals = approvals or {}
    starts: dict[str, int] = {}
    given_up: set[str] = set()
    for record in tool_runs:
        run = record.tool_run
        if run.outcome == "started":
            starts.setdefault(run.call_id, record.seq)
        else:
            given_up.add(run.call_id)
    plan: list[Finish] = []
    for call in pending_calls(events):
        start = starts.get(call.call_id)
        found = approvals.get(call.call_id, ())
        decided = decision(found)
        if (found or needs_approval(call.tool)) and decided is None:
            plan.append(Finish(call, "await", approval=found[0] if found else None))
        elif decided is not None and decided.approval.outcome == "denied":
            plan.append(Finish(call, "deny", approval=decided))
        elif call.call_id in given_up:
            plan.append(Finish(call, "unknown", start))
        elif start is None:
            plan.append(Finish(call, "run"))
        elif is_repeatable(call.tool):
            plan.append(Finish(call, "rerun", start))
        else:
            plan.append(Finish(call, "reconcile", start))
    return plan


def unknown_result(call: ToolCall) -> ToolResult:
    """The error result that stands for a run cut mid-way whose outcome is unknown."""
    return ToolResult(
        call_id=call.call_id,
        output=(
            f"Tool {call.tool!r} was interrupted while it ran (the agent stopped), and its "
            "outcome is unknown: it may or may not have taken effect. It was not run again. "
            "Check its effect before calling it again."
        ),
        is_error=True,
    )


def unknown_tool_runs(
    history: Iterable[CanonicalEvent], tool_runs: Iterable[StoredToolRun]
) -> list[ToolCall]:
    """The tool calls whose run was cut and given up as unknown, in the order given up."""
    calls = {e.call_id: e for e in history if isinstance(e, ToolCall)}
    ids = [r.tool_run.call_id for r in tool_runs if r.tool_run.outcome == "unknown"]
    return [calls[i] for i in dict.fromkeys(ids) if i in calls]


def is_done(events: Sequence[CanonicalEvent]) -> bool:
    """Whether the model spoke last and asked for nothing: its reply ended a run."""
    for event in reversed(events):
        if isinstance(event, Compaction):
            continue
        return isinstance(event, AssistantText | Reasoning) and not pending_calls(events)
    return False


def final_text(events: Sequence[CanonicalEvent]) -> str:
    """The text of the model's last reply (its texts after the last non-model event)."""
    texts: list[str] = []
    for event in reversed(events):
        if isinstance(event, AssistantText):
            texts.append(event.text)
        elif not isinstance(event, Reasoning | Compaction):
            break
    return "\n".join(reversed(texts))


def answer_text(events: Sequence[CanonicalEvent]) -> str:
    """The text a run ended with: when the log ends with an answer a `run_as` accepted
    through its answer tool, that answer's arguments as JSON (as the model sent them);
    else the model's last reply's text (`final_text`)."""
    tail = [e for e in events if not isinstance(e, Compaction)]
    start = len(tail)
    while start and isinstance(tail[start - 1], ToolResult):
        start -= 1
    accepted = {
        e.call_id
        for e in tail[start:]
        if isinstance(e, ToolResult) and e.output == ACCEPTED and not e.is_error
    }
    for event in reversed(tail[:start] if accepted else ()):
        if isinstance(event, ToolCall) and event.call_id in accepted:
            return json.dumps(event.arguments, ensure_ascii=False)
    return final_text(events)


def typed_answer(events: Sequence[CanonicalEvent], output_type: type[M]) -> M | None:
    """The answer of ``output_type`` the log ends with (a `run_as` that finished), if any:
    its answer tool's accepted call, or a last reply whose text validates."""
    tail = [e for e in events if not isinstance(e, Compaction)][-2:]
    if len(tail) == 2 and isinstance(tail[1], ToolResult) and tail[1].output == ACCEPTED:
        call = tail[0]
        if isinstance(call, ToolCall) and call.tool == answer_tool(output_type).name:
            try:
                return output_type.model_validate(call.arguments)
            except ValidationError:
                return None
    if not is_done(events):
        return None
    try:
        return output_type.model_validate_json(final_text(events))
    except ValidationError:
        return None


@dataclass(frozen=True, slots=True)
class Step:
    """One step of a task: the model call's `Completion`, the results of the tool calls it
    asked for, and whether it asked for any (``more``: the run goes on).

    ``finished`` holds the results of an earlier, cut step's calls, answered before this
    step called the model. ``pending_approvals`` lists the calls left awaiting a person's
    approval (their results are not in ``results``): the step is not done; call it again
    once they are decided.
    """

    completion: Completion
    results: list[ToolResult]
    finished: list[ToolResult] = field(default_factory=list)
    pending_approvals: tuple[PendingApproval, ...] = ()

    @property
    def more(self) -> bool:
        """Whether the model asked for tools (and so for another step)."""
        return any(isinstance(e, ToolCall) for e in self.completion.events)

    @property
    def text(self) -> str:
        """The reply's text."""
        return final_text(self.completion.events)


@dataclass(frozen=True, slots=True)
class RunResult(Generic[T]):
    """What a run ended with: the final ``text`` (after `run_as`, its typed answer as
    JSON), the ``output`` (the text, or `run_as`'s typed answer), the ``steps`` (model calls) this run made, their ``usage`` and their
    ``cost_usd`` as the proxy reported it (calls of unknown cost add nothing).

    ``pending_approvals`` lists the tool calls the run stopped on, each waiting for a
    person's approval (``task.approve`` / ``task.deny``); while it is not empty the run has
    not answered (``output`` is then the text so far, None for `run_as`): run it again
    once they are decided."""

    text: str
    output: T
    steps: int
    usage: Usage
    cost_usd: Decimal
    pending_approvals: tuple[PendingApproval, ...] = ()


@dataclass(frozen=True, slots=True)
class RunLimits:
    """A run's limits: model calls, cost in USD and tokens (None: no limit)."""

    max_steps: int
    max_cost_usd: Decimal | None = None
    max_tokens: int | None = None

    def __post_init__(self) -> None:
        if self.max_steps < 1:
            raise ValueError(f"max_steps must be at least 1, got {self.max_steps}")
        for name in ("max_cost_usd", "max_tokens"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise ValueError(f"{name} must be above 0, got {value}")


@dataclass(slots=True)
class RunCounts:
    """What a run has used so far: its steps, their usage and their cost."""

    steps: int = 0
    usage: Usage = field(default_factory=Usage)
    cost_usd: Decimal = Decimal(0)

    def add(self, usage: Usage, *calls: CallInfo | None) -> None:
        """Count one model step: its usage, and the cost of its calls (a typed answer's
        repairs are calls of the same step) where the proxy said it."""
        self.steps += 1
        self.usage = self.usage + usage
        for call in calls:
            if call is not None and call.cost_usd is not None:
                self.cost_usd += call.cost_usd

    @property
    def tokens(self) -> int:
        """Input and output tokens of the run's calls."""
        return self.usage.input + self.usage.output

    def check(self, limits: RunLimits) -> None:
        """`RunLimitReached` if another model call would pass one of ``limits``."""
        reached: tuple[str, str] | None = None
        if self.steps >= limits.max_steps:
            reached = "max_steps", f"{self.steps} steps of {limits.max_steps}"
        elif limits.max_cost_usd is not None and self.cost_usd >= limits.max_cost_usd:
            reached = "max_cost_usd", f"${self.cost_usd} of ${limits.max_cost_usd}"
        elif limits.max_tokens is not None and self.tokens >= limits.max_tokens:
            reached = "max_tokens", f"{self.tokens} tokens of {limits.max_tokens}"
        if reached is None:
            return
        limit, used = reached
        raise RunLimitReached(
            f"the run reached its {limit} ({used}) before the model answered; the task "
            "file is whole: run again (with a higher limit) to go on",
            limit=limit,
            steps=self.steps,
            tokens=self.tokens,
            cost_usd=self.cost_usd,
        )

    def result(
        self,
        events: Sequence[CanonicalEvent],
        output: T,
        waiting: Sequence[PendingApproval] = (),
    ) -> RunResult[T]:
        """The run's result, its final text read from ``events`` (`answer_text`), and the
        calls it stopped on awaiting approval (``waiting``)."""
        return RunResult(
            text=answer_text(events),
            output=output,
            steps=self.steps,
            usage=self.usage,
            cost_usd=self.cost_usd,
            pending_approvals=tuple(waiting),
        )


def answer_request(output_type: type[BaseModel], *, native: bool) -> str:
    """The user message a `run_as` appends to ask for its answer when the model's last
    reply ended the run without it: as JSON of the answer's schema (``native``), or through
    the answer tool. Written to the log, so the request is what the file says."""
    name = answer_tool(output_type).name
    if native:
        return f"Give your final answer now, as JSON that follows the {name} schema."
    return f"Give your final answer now, by calling the {name!r} tool with it as the arguments."


def asked_for_answer(events: Sequence[CanonicalEvent], output_type: type[BaseModel]) -> bool:
    """Whether the log ends with `answer_request`'s message (a `run_as` cut after asking)."""
    tail = [e for e in events if not isinstance(e, Compaction)][-1:]
    asks = {answer_request(output_type, native=n) for n in (True, False)}
    return bool(tail) and isinstance(tail[0], UserText) and tail[0].text in asks


def native_answer(
    events: Sequence[CanonicalEvent], output_type: type[M], attempts: int, repair_attempts: int
) -> M | str:
    """The answer a natively asked run ended with (its last reply's text, validated); else
    what to tell the model (while ``attempts`` made are within ``repair_attempts``), else
    `OutputValidationError`."""
    raw = final_text(events)
    value, errors = parse_answer_text(output_type, raw)
    if value is not None:
        return value
    if attempts < repair_attempts:
        return native_feedback(answer_tool(output_type).name, errors)
    raise OutputValidationError(
        f"the answer does not validate as {output_type.__name__} after {attempts + 1} "
        f"attempt(s): {error_summary(errors)}",
        raw=raw,
        errors=errors,
        attempts=attempts + 1,
    )


def run_result_record(result: RunResult[Any], value: BaseModel | None) -> dict[str, Any]:
    """What a done `run` or `run_as` record keeps of its result (``value``: the answer)."""
    record: dict[str, Any] = {
        "text": result.text,
        "steps": result.steps,
        "usage": result.usage.model_dump(mode="json"),
        "cost_usd": str(result.cost_usd),
    }
    if value is not None:
        record["output"] = value.model_dump(mode="json")
    return record


def run_result(record: dict[str, Any], output_type: type[M] | None) -> RunResult[Any]:
    """The result a done `run` (``output_type`` None) or `run_as` returned, from its record."""
    text: str = record["text"]
    return RunResult(
        text=text,
        output=text if output_type is None else output_type.model_validate(record["output"]),
        steps=record["steps"],
        usage=Usage.model_validate(record["usage"]),
        cost_usd=Decimal(record["cost_usd"]),
    )


def run_limits(
    max_steps: int, max_cost_usd: Decimal | float | None, max_tokens: int | None
) -> RunLimits:
    """A run's limits as `run` takes them (a cost as a float or a `Decimal`)."""
    cost = None if max_cost_usd is None else Decimal(str(max_cost_usd))
    return RunLimits(max_steps=max_steps, max_cost_usd=cost, max_tokens=max_tokens)


def waiting_step(finished: list[ToolResult], waiting: Sequence[PendingApproval]) -> Step:
    """A step that made no model call: calls of the log still await approval."""
    return Step(
        completion=Completion(events=[], usage=Usage()),
        results=[],
        finished=finished,
        pending_approvals=tuple(waiting),
    )
