"""The loop's decisions, with no I/O: how a cut step's tool calls are finished, when a run
is done, and when it stops at a limit."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest

from nisse_llm import RunLimitReached
from nisse_llm.agent.plan import (
    RunCounts,
    RunLimits,
    final_text,
    finish_plan,
    is_done,
    typed_answer,
    unknown_result,
    unknown_tool_runs,
)
from nisse_llm.events.canonical import (
    AssistantText,
    CallInfo,
    CanonicalEvent,
    Compaction,
    Reasoning,
    ToolCall,
    ToolResult,
    Usage,
    UserText,
)
from nisse_llm.task.records import StoredToolRun, ToolRunRecord

AT = datetime(2026, 12, 4, tzinfo=UTC)


def _call(n: int, tool: str) -> ToolCall:
    return ToolCall(call_id=f"call_{n}", tool=tool, arguments={"n": n})


def _run(seq: int, n: int, tool: str, outcome: str = "started") -> StoredToolRun:
    start = None if outcome == "started" else seq - 1
    record = ToolRunRecord(call_id=f"call_{n}", tool=tool, outcome=outcome, start=start)  # type: ignore[arg-type]
    return StoredToolRun(seq=seq, at=AT, tool_run=record)


def test_each_unanswered_call_is_finished_by_what_the_file_says_of_its_run() -> None:
    """Never started: run; started and repeatable: rerun; started and not repeatable:
    reconcile; given up as unknown: unknown; answered: nothing."""
    calls = [
        _call(1, "read"),
        _call(2, "write"),
        _call(3, "read"),
        _call(4, "write"),
        _call(5, "write"),
    ]
    log: list[CanonicalEvent] = [
        UserText(text="go"),
        *calls,
        ToolResult(call_id="call_5", output="ok"),
    ]
    runs = [
        _run(10, 2, "write"),
        _run(11, 3, "read"),
        _run(12, 4, "write"),
        _run(13, 4, "write", "unknown"),
    ]

    plan = finish_plan(log, runs, lambda tool: tool == "read")

    assert [(f.call.call_id, f.how, f.start) for f in plan] == [
        ("call_1", "run", None),
        ("call_2", "reconcile", 10),
        ("call_3", "rerun", 11),
        ("call_4", "unknown", 12),
    ]


def test_the_unknown_result_is_deterministic_and_an_error() -> None:
    """The same call always gets the same error result, naming the tool."""
    call = _call(7, "deploy")
    first, second = unknown_result(call), unknown_result(call)
    assert first == second
    assert first.is_error
    assert first.call_id == "call_7"
    assert "'deploy' was interrupted" in first.output
    assert "unknown" in first.output


def test_unknown_tool_runs_are_read_from_the_records() -> None:
    """The calls given up as unknown, once each, from the history's calls."""
    history = [_call(1, "write"), _call(2, "write")]
    runs = [_run(3, 1, "write"), _run(4, 1, "write", "unknown"), _run(5, 2, "write")]
    assert unknown_tool_runs(history, runs) == [history[0]]


@pytest.mark.parametrize(
    ("log", "done"),
    [
        ([UserText(text="q")], False),
        ([UserText(text="q"), AssistantText(text="a", model="m")], True),
        ([UserText(text="q"), AssistantText(text="a", model="m"), Compaction(removed=1)], True),
        ([UserText(text="q"), AssistantText(text="a", model="m"), _call(1, "t")], False),
        (
            [UserText(text="q"), _call(1, "t"), ToolResult(call_id="call_1", output="x")],
            False,
        ),
        ([AssistantText(text="a", model="m"), UserText(text="more")], False),
        ([UserText(text="q"), Reasoning(model="m", block={"type": "thinking"})], True),
        ([], False),
    ],
)
def test_a_task_is_done_when_the_model_spoke_last_and_asked_for_nothing(
    log: list[CanonicalEvent], done: bool
) -> None:
    """`is_done` reads the log's end."""
    assert is_done(log) is done


def test_final_text_is_the_last_replys_texts() -> None:
    """The texts after the last non-model event, joined."""
    log: list[CanonicalEvent] = [
        AssistantText(text="old", model="m"),
        UserText(text="q"),
        AssistantText(text="a", model="m"),
        AssistantText(text="b", model="m"),
    ]
    assert final_text(log) == "a\nb"
    assert final_text([UserText(text="q")]) == ""


def test_each_limit_stops_the_run_before_the_call_that_would_pass_it() -> None:
    """Steps, cost and tokens are checked in that order; the error names the limit and the counts."""
    counts = RunCounts()
    limits = RunLimits(max_steps=2, max_cost_usd=Decimal("0.05"), max_tokens=1000)
    counts.check(limits)
    counts.add(Usage(input=100, output=10), CallInfo(cost_usd=Decimal("0.02")))
    counts.check(limits)
    counts.add(Usage(input=100, output=10), None)
    with pytest.raises(RunLimitReached) as caught:
        counts.check(limits)
    assert (caught.value.limit, caught.value.steps, caught.value.tokens) == ("max_steps", 2, 220)
    assert caught.value.cost_usd == Decimal("0.02")

    with pytest.raises(RunLimitReached, match="max_cost_usd") as cost:
        counts.check(RunLimits(max_steps=9, max_cost_usd=Decimal("0.02")))
    assert cost.value.limit == "max_cost_usd"
    with pytest.raises(RunLimitReached) as tokens:
        counts.check(RunLimits(max_steps=9, max_tokens=220))
    assert tokens.value.limit == "max_tokens"


def test_limits_must_allow_a_call() -> None:
    """A limit of zero steps, cost or tokens is a caller's mistake."""
    with pytest.raises(ValueError, match="max_steps"):
        RunLimits(max_steps=0)
    with pytest.raises(ValueError, match="max_tokens"):
        RunLimits(max_steps=1, max_tokens=0)


def test_typed_answer_is_read_back_from_the_logs_end() -> None:
    """An accepted answer call, or a last reply whose text validates, is the answer; a log
    that goes on after it, or text of another shape, is none."""
    from pydantic import BaseModel

    from nisse_llm.render.typed import ACCEPTED

    class Verdict(BaseModel):
        fixed: bool

    call = ToolCall(call_id="call_v", tool="Verdict", arguments={"fixed": True})
    answered: list[CanonicalEvent] = [call, ToolResult(call_id="call_v", output=ACCEPTED)]
    assert typed_answer(answered, Verdict) == Verdict(fixed=True)
    assert typed_answer([*answered, UserText(text="again")], Verdict) is None
    said: list[CanonicalEvent] = [
        UserText(text="q"),
        AssistantText(text='{"fixed": false}', model="m"),
    ]
    assert typed_answer(said, Verdict) == Verdict(fixed=False)
    assert typed_answer([UserText(text="q"), AssistantText(text="no", model="m")], Verdict) is None
