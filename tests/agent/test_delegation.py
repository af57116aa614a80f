"""A task delegating to sub-tasks: each child a task of the same store under a key derived
from the parent's, the parent naming the child before the child's first record and the
child naming its parent; replayed without a call; a child stopped by `UpstreamUnavailable`
resumed, not begun again; usage summed over the tree; the tree shown by the task CLI."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from nisse_llm import AsyncTask, BudgetExhausted, Task, Toolbox
from nisse_llm.task.delegation import StoredParent
from nisse_llm.task.logstore import FileTaskStore
from nisse_llm.task.records import StoredHeader, StoredProgram
from nisse_llm.testing import (
    RecordedRequest,
    Script,
    ScriptedTransport,
    ToolUse,
    Turn,
    anthropic_failure,
    reply,
)
from nisse_llm.transport.routers import AsyncRoleRouter, RoleRouter
from tests.task.helpers import make_pin, task_cli

PIN = make_pin(planner="claude-sonnet-4-5", delegate="claude-sonnet-4-5")
BUDGET = "No deployments available - crossed budget: Exceeded budget for deployment"


class Upstream:
    """Answers a child's prompt with its module's summary, the planner's tool call with a
    delegation, and refuses on budget while ``broke``; notes each request."""

    def __init__(self) -> None:
        self.broke = False
        self.requests: list[RecordedRequest] = []

    def __call__(self, request: RecordedRequest) -> Turn:
        self.requests.append(request)
        if self.broke:
            return anthropic_failure(429, "rate_limit_error", BUDGET)
        last = request.user_texts[-1] if request.user_texts else ""
        if last.startswith("Tidy"):
            return reply(f"{last.split()[1].rstrip('.')} is tidy.")
        if request.tool_results:
            return reply("Delegated and done.")
        return reply(ToolUse("delegate_to_delegate", {"prompt": "Tidy s3."}))


def _router(path: Path, upstream: Upstream) -> RoleRouter:
    transport = ScriptedTransport(Script(fallback=upstream))
    return RoleRouter.from_pin(PIN, store=FileTaskStore(path), transport=transport)


def test_two_delegations_are_two_child_tasks_replayed_without_a_call(tmp_path: Path) -> None:
    path, upstream = tmp_path / "plan.jsonl", Upstream()
    with _router(path, upstream) as llm, Task.open(llm.store, PIN, router=llm) as task:  # type: ignore[arg-type]
        first = [task.delegate("delegate", f"Tidy s{n}.", tools=None).text for n in (1, 2)]
        assert task.children == ["plan.1-delegate", "plan.2-delegate"]
        total = task.total_usage
    assert first == ["s1 is tidy.", "s2 is tidy."]
    made = len(upstream.requests)
    assert made == 2

    with _router(path, upstream) as llm, Task.open(llm.store, PIN, router=llm) as task:  # type: ignore[arg-type]
        again = [task.delegate("delegate", f"Tidy s{n}.", tools=None).text for n in (1, 2)]
    assert again == first
    assert len(upstream.requests) == made

    parent = FileTaskStore(path).read().records
    starts = [
        r
        for r in parent
        if isinstance(r, StoredProgram) and r.program.op == "delegate" and r.program.child
    ]
    assert [s.program.child for s in starts] == ["plan.1-delegate", "plan.2-delegate"]
    for n, start in enumerate(starts, 1):
        child = FileTaskStore(tmp_path / f"plan.{n}-delegate.jsonl").read()
        header = child.records[0]
        assert isinstance(header, StoredHeader)
        assert start.at <= header.at  # the parent names the child before its first record
        (named,) = [r for r in child.records if isinstance(r, StoredParent)]
        assert (named.parent.key, named.parent.role) == ("plan", "delegate")
    files = [FileTaskStore(p).read().usage.total for p in sorted(tmp_path.glob("*.jsonl"))]
    assert total.calls == sum(f.calls for f in files) == 2
    assert total.input == sum(f.input for f in files)


def test_a_child_stopped_by_a_budget_refusal_is_resumed_not_begun_again(tmp_path: Path) -> None:
    """The child's call is refused on budget: `delegate` raises `BudgetExhausted`, the child
    keeps its branch; reopened once the budget is raised, the parent resumes the same child
    (one child file, its prompt said once) and finishes."""
    path, upstream = tmp_path / "plan.jsonl", Upstream()
    upstream.broke = True
    with _router(path, upstream) as llm, Task.open(llm.store, PIN, router=llm) as task:  # type: ignore[arg-type]
        with pytest.raises(BudgetExhausted):
            task.delegate("delegate", "Tidy s1.", tools=None)
        assert not task.done
    upstream.broke = False
    with _router(path, upstream) as llm, Task.open(llm.store, PIN, router=llm) as task:  # type: ignore[arg-type]
        assert task.delegate("delegate", "Tidy s1.", tools=None).text == "s1 is tidy."
    assert sorted(p.name for p in tmp_path.glob("*.jsonl")) == [
        "plan.1-delegate.jsonl",
        "plan.jsonl",
    ]
    child = FileTaskStore(tmp_path / "plan.1-delegate.jsonl").read()
    said = [r.event for r in child.events if getattr(r.event, "text", None) == "Tidy s1."]
    assert len(said) == 1
    assert [c.llm_call.outcome for c in child.calls if c.llm_call.outcome != "started"] == [
        "BudgetExhausted",
        "ok",
    ]


def test_the_model_delegates_through_a_tool_and_the_cli_shows_the_tree(tmp_path: Path) -> None:
    path, upstream = tmp_path / "plan.jsonl", Upstream()
    with _router(path, upstream) as llm, Task.open(llm.store, PIN, router=llm) as task:  # type: ignore[arg-type]
        task.say("Plan it.")
        box = Toolbox.delegation(task, "delegate", tools=None)
        assert box.is_repeatable("delegate_to_delegate")
        done = task.run("planner", tools=box)
        assert task.children == ["plan.3-delegate"]
    assert done.text == "Delegated and done."
    assert "s3 is tidy." in upstream.requests[-1].tool_results

    listed = task_cli("list", "--store", str(tmp_path)).splitlines()
    rows = [line.split() for line in listed[2:]]
    assert [(r[0], r[-2]) for r in rows] == [("plan", "-"), ("plan.3-delegate", "plan")]
    shown = task_cli("show", "plan", "--store", str(tmp_path))
    assert "  plan.3-delegate: done" in shown
    assert "tree usage: 3 call(s)" in shown


def test_async_task_delegates_as_task_does(tmp_path: Path) -> None:
    path, upstream = tmp_path / "plan.jsonl", Upstream()

    async def main() -> tuple[str, list[str], int]:
        transport = ScriptedTransport(Script(fallback=upstream))
        from nisse_llm.task.logstore import AsyncFileTaskStore

        async with (
            AsyncRoleRouter.from_pin(
                PIN, store=AsyncFileTaskStore(path), transport=transport
            ) as llm,
            AsyncTask.open(llm.store, PIN, router=llm) as task,  # type: ignore[arg-type]
        ):
            await task.say("Plan it.")
            box = Toolbox.delegation(task, "delegate", tools=None)
            done = await task.run("planner", tools=box)
            return done.text, await task.children, (await task.total_usage).calls

    assert asyncio.run(main()) == ("Delegated and done.", ["plan.3-delegate"], 3)


def test_two_delegations_of_one_reply_run_at_once_as_two_children(tmp_path: Path) -> None:
    """A reply asking for two delegations, run concurrently on `AsyncTask`: two children
    under two keys, each answered."""
    from nisse_llm.task.logstore import AsyncFileTaskStore

    def upstream(request: RecordedRequest) -> Turn:
        last = request.user_texts[-1]
        if last.startswith("Tidy"):
            return reply(f"{last.split()[1].rstrip('.')} is tidy.")
        if request.tool_results:
            return reply(" ".join(sorted(request.tool_results)))
        call = "delegate_to_delegate"
        return reply(ToolUse(call, {"prompt": "Tidy s4."}), ToolUse(call, {"prompt": "Tidy s5."}))

    async def main() -> tuple[str, list[str]]:
        transport = ScriptedTransport(Script(fallback=upstream))
        path = tmp_path / "plan.jsonl"
        async with (
            AsyncRoleRouter.from_pin(
                PIN, store=AsyncFileTaskStore(path), transport=transport
            ) as llm,
            AsyncTask.open(llm.store, PIN, router=llm) as task,  # type: ignore[arg-type]
        ):
            await task.say("Plan it.")
            box = Toolbox.delegation(task, "delegate", tools=None)
            done = await task.run("planner", tools=box, max_concurrent_tools=2)
            return done.text, sorted(await task.children)

    text, children = asyncio.run(main())
    assert text == "s4 is tidy. s5 is tidy."
    assert children == ["plan.3-delegate", "plan.4-delegate"]
