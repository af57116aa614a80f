"""`ScriptedRouter`: the real router scripted per role stands in for `RoleRouter` in an
agent's tests, streaming, typed answers, options, usage and the task file included."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from nisse_llm import (
    AsyncRoleRouter,
    CanonicalEvent,
    FileTaskStore,
    RequestOptions,
    RoleRouter,
    TextDelta,
    Toolbox,
    ToolCall,
    Usage,
    UserText,
)
from nisse_llm.errors import BudgetExhausted, UnknownRoleError, UpstreamUnavailable
from nisse_llm.testing import (
    AsyncScriptedRouter,
    ScriptedRouter,
    ScriptExhausted,
    Tokens,
    ToolUse,
    openai_failure,
    reply,
)

LOG = [UserText(text="Fix the failing test.")]


class Outcome(BaseModel):
    """How the task ended."""

    done: bool
    summary: str


def read_file(path: str) -> str:
    """Read a file.

    Args:
        path: The file's path.
    """
    return f"contents of {path}"


def run_agent(llm: RoleRouter, task: str, shown: list[str]) -> Outcome:
    """A small coding agent written against `RoleRouter`: the planner plans, the executor
    streams its turns (each delta shown) and runs tools, then gives a typed outcome."""
    tools = Toolbox([read_file])
    log: list[CanonicalEvent] = [UserText(text=task)]
    log += llm.complete("planner", log, None, system="Plan the work.")
    for _ in range(5):
        with llm.stream("executor", log, tools.specs) as stream:
            shown.extend(d.text for d in stream if isinstance(d, TextDelta))
        log += stream.events
        if not any(isinstance(e, ToolCall) for e in stream.events):
            break
        log += tools.run(stream.events)
    answer = llm.complete_as(Outcome, "executor", log, tools.specs, repair_attempts=1)
    return answer.value


def _router(**options: Any) -> ScriptedRouter:
    return ScriptedRouter(
        {
            "planner": [reply("1. read a.py 2. fix it", usage=Tokens(input=50, output=8))],
            "executor": [
                reply("Reading.", ToolUse("read_file", {"path": "a.py"})),
                reply("The bug is an off-by-one; fixed."),
                reply(ToolUse("Outcome", {"done": True, "summary": "fixed", "extra": 1})),
                reply(ToolUse("Outcome", {"done": True, "summary": "fixed"})),
            ],
        },
        models={"planner": "claude-sonnet-4-6"},
        **options,
    )


def test_it_stands_in_for_role_router_in_an_agent_test(tmp_path: Path) -> None:
    """The agent runs unchanged: planner on the messages route, executor streamed on chat,
    the tool result sent back, a strict typed answer repaired, usage reported by role and
    every call recorded in the task file."""
    seen: list[tuple[str | None, int]] = []

    def on_usage(usage: Usage, model: str, *, role: str | None = None) -> None:
        seen.append((role, usage.output))

    store = FileTaskStore(tmp_path / "task.jsonl")
    shown: list[str] = []
    with _router(on_usage=on_usage, store=store) as llm:
        assert isinstance(llm, RoleRouter)
        outcome = run_agent(llm, "Fix the failing test.", shown)
        assert llm.pending("executor") == 0
        assert llm.last_usage is not None
        planner_sent = llm.requests_for("planner")
        executor_sent = llm.requests_for("executor")
    assert outcome == Outcome(done=True, summary="fixed")
    assert "".join(shown) == "Reading.The bug is an off-by-one; fixed."
    assert [r.path for r in planner_sent] == ["/v1/messages"]
    assert [r.path for r in executor_sent] == ["/chat/completions"] * 4
    assert [r.json.get("stream") for r in executor_sent] == [True, True, None, None]
    assert executor_sent[1].last_tool_result == "contents of a.py"
    assert "extra: Extra inputs are not permitted" in json.dumps(executor_sent[3].json)
    assert [role for role, _ in seen] == ["planner", "executor", "executor", "executor", "executor"]
    assert seen[0] == ("planner", 8)
    records = [r.llm_call for r in FileTaskStore(tmp_path / "task.jsonl").read().calls]
    assert [(r.role, r.route, r.outcome) for r in records] == [
        ("planner", "anthropic_messages", "ok"),
        *[("executor", "openai_chat", "ok")] * 4,
    ]


def test_options_reach_the_wire_over_the_role() -> None:
    """``options=`` is layered and rendered as the real router renders it."""
    with ScriptedRouter({"executor": ["ok"]}) as llm:
        llm.complete("executor", LOG, None, options=RequestOptions(temperature=0.25))
        (sent,) = llm.requests_for("executor")
    assert sent.json["temperature"] == 0.25
    assert sent.model == "scripted-executor"


def test_failures_are_classified_and_exceptions_raised_as_given() -> None:
    """A scripted proxy failure becomes the error the real router raises; an exception turn
    is raised as it is; usage and call info track the last success."""
    budget = openai_failure(400, "Budget has been exceeded! Current cost: 3, Max budget: 2")
    with ScriptedRouter(
        {"executor": [reply("one", usage=Tokens(input=5, output=2)), budget, RuntimeError("x")]}
    ) as llm:
        llm.complete("executor", LOG, None)
        with pytest.raises(BudgetExhausted):
            llm.complete("executor", LOG, None)
        with pytest.raises(RuntimeError, match=r"^x$"):
            llm.complete("executor", LOG, None)
        assert llm.last_usage == Usage(input=5, output=2)
        assert llm.last_call is not None
        with pytest.raises(ScriptExhausted) as caught:
            llm.complete("executor", LOG, None)
    assert str(caught.value) == (
        "ScriptedRouter has no turn left for role 'executor': script it with "
        "router.add('executor', ...)"
    )


def test_roles_are_the_seeds_and_those_named() -> None:
    """The seeds' roles and any role named exist; another role is the real UnknownRoleError."""
    with ScriptedRouter({"reviewer": ["fine"]}) as llm:
        assert llm.pin.roles.names == ("executor", "planner", "delegate", "consultant", "reviewer")
        assert llm.complete("reviewer", LOG, None)[0].text == "fine"  # type: ignore[union-attr]
        with pytest.raises(UnknownRoleError):
            llm.complete("auditor", LOG, None)
        llm.add("delegate", UpstreamUnavailable("down"))
        with pytest.raises(UpstreamUnavailable, match=r"^down$"):
            llm.complete("delegate", LOG, None)


def test_wrong_shapes_are_refused_with_the_fix() -> None:
    """A lone turn, a non-turn, an unknown role to add to, shared models and from_pin each
    raise a clear error."""
    with pytest.raises(TypeError, match=r"must be a list of turns, got one turn: write \['hi'\]"):
        ScriptedRouter({"executor": "hi"})  # type: ignore[dict-item]
    with pytest.raises(TypeError, match="not a router turn: 3"):
        ScriptedRouter({"executor": [3]})  # type: ignore[list-item]
    with pytest.raises(ValueError, match="the router has no role 'auditor'"):
        ScriptedRouter().add("auditor", "x")
    with pytest.raises(ValueError, match="m1 serves several; name distinct models"):
        ScriptedRouter(models={"planner": "m1", "executor": "m1"})
    with pytest.raises(TypeError, match="ScriptedRouter makes its own pin"):
        ScriptedRouter.from_pin(ScriptedRouter().pin)


def test_the_async_twin_streams_and_completes() -> None:
    """`AsyncScriptedRouter` is an `AsyncRoleRouter` with the same per-role script."""

    async def run() -> tuple[list[str], str]:
        async with AsyncScriptedRouter({"executor": ["Hello there.", "Bye."]}) as llm:
            assert isinstance(llm, AsyncRoleRouter)
            deltas = []
            async with llm.stream("executor", LOG, None) as stream:
                deltas = [d.text async for d in stream if isinstance(d, TextDelta)]
            second = await llm.complete("executor", LOG, None)
            return deltas, second[0].text  # type: ignore[union-attr]

    deltas, second = asyncio.run(run())
    assert "".join(deltas) == "Hello there."
    assert second == "Bye."


def test_the_readme_example_runs_as_written() -> None:
    """The testing guide's ScriptedRouter block runs unchanged (its asserts included)."""
    readme = (Path(__file__).resolve().parents[2] / "docs" / "guides" / "testing.md").read_text()
    start = readme.index(
        "```python\nfrom nisse_llm import RoleRouter, TextDelta, ToolCall, UserText\n"
    )
    block = readme[start + len("```python\n") : readme.index("```\n", start + 10)]
    assert "ScriptedRouter(" in block
    exec(compile(block, "docs/guides/testing.md", "exec"), {})


#: A model of each route, as the docs name them: the route each one's requests take.
MODELS_BY_ROUTE = {
    "openai_chat": ("gpt-4o-mini", "/chat/completions"),
    "anthropic_messages": ("claude-haiku-4-5", "/v1/messages"),
    "openai_responses": ("gpt-5.4-mini", "/v1/responses"),
}


@pytest.mark.parametrize("route", list(MODELS_BY_ROUTE))
def test_a_model_of_each_route_is_scripted_completed_and_streamed(route: str) -> None:
    """Whatever route the executor's model takes (Responses included), `ScriptedRouter`
    completes and streams it down that route, and records the route."""
    model, path = MODELS_BY_ROUTE[route]
    with ScriptedRouter({"executor": ["First.", "Second."]}, models={"executor": model}) as llm:
        assert llm.pin.route("executor") == route
        assert llm.client_for("executor").route == route
        first = llm.complete("executor", LOG, None)
        with llm.stream("executor", LOG, None) as stream:
            shown = "".join(d.text for d in stream if isinstance(d, TextDelta))
        sent = llm.requests_for("executor")
    assert first[0].text == "First."  # type: ignore[union-attr]
    assert shown == "Second."
    assert [(r.path, r.route, r.model) for r in sent] == [(path, route, model)] * 2


@pytest.mark.parametrize("route", list(MODELS_BY_ROUTE))
def test_the_async_twin_takes_a_model_of_each_route(route: str) -> None:
    """`AsyncScriptedRouter` completes and streams a model of every route, Responses too."""
    model, path = MODELS_BY_ROUTE[route]

    async def run() -> tuple[str, str, list[Any]]:
        async with AsyncScriptedRouter(
            {"executor": ["First.", "Second."]}, models={"executor": model}
        ) as llm:
            first = await llm.complete("executor", LOG, None)
            async with llm.stream("executor", LOG, None) as stream:
                shown = "".join([d.text async for d in stream if isinstance(d, TextDelta)])
            return first[0].text, shown, llm.requests_for("executor")  # type: ignore[union-attr]

    first, shown, sent = asyncio.run(run())
    assert (first, shown) == ("First.", "Second.")
    assert [(r.path, r.route) for r in sent] == [(path, route)] * 2
