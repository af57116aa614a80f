"""Routers with a store: every call's record written as it ends, and a killed agent resumed."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from nisse_llm.errors import BudgetExhausted, UpstreamUnavailable
from nisse_llm.events.canonical import (
    AssistantText,
    CanonicalEvent,
    ToolCall,
    ToolResult,
    Usage,
    UserText,
)
from nisse_llm.task.logstore import (
    AsyncFileTaskStore,
    FileTaskStore,
    LogTornTail,
)
from nisse_llm.task.records import CallRecord
from nisse_llm.testing import (
    Script,
    ScriptedTransport,
    Tokens,
    anthropic_failure,
    openai_failure,
    reply,
    slow,
)
from nisse_llm.transport.routers import AsyncRoleRouter, RoleRouter
from tests.corpus import READ_FILE
from tests.task._killed_agent import FIRST_USAGE, QUESTION
from tests.task.helpers import BASE_URL, ROLES, TOKEN, make_pin

ROOT = Path(__file__).resolve().parents[2]
BUDGET = openai_failure(
    429,
    "No deployments available - crossed budget: Exceeded budget for deployment x",
    type="None",
    code="429",
)


def _calls(path: Path) -> list[CallRecord]:
    return [record.llm_call for record in FileTaskStore(path).read().calls]


def test_router_records_every_call_as_it_ends(tmp_path: Path) -> None:
    """Successes, failures, streams read whole and streams left early each leave one record
    with role, model, route, usage and outcome; a role the pin lacks leaves none."""
    path = tmp_path / "task.jsonl"
    pin = make_pin()
    store = FileTaskStore(path).begin(pin)
    script = (
        Script()
        .messages(
            reply("plan", usage=Tokens(input=100, output=10)),
            anthropic_failure(529, "overloaded_error", "Overloaded"),
            reply("streamed", usage=Tokens(input=300, output=30)),
            reply("left early " * 50, usage=Tokens(input=400, output=40)),
        )
        .chat(reply("done", usage=Tokens(input=200, output=20)), BUDGET)
    )
    log: list[CanonicalEvent] = [UserText(text="go")]
    llm = RoleRouter.from_pin(pin, store=store, transport=ScriptedTransport(script), sleep=print)
    with llm:
        assert llm.store is store
        llm.complete("planner", log, None)
        with pytest.raises(UpstreamUnavailable):
            llm.complete("planner", log, None)
        llm.complete("executor", log, None)
        with pytest.raises(BudgetExhausted):
            llm.complete("consultant", log, None)
        with llm.stream("delegate", log, None) as stream:
            assert list(stream)
        with llm.stream("planner", log, None) as stream:
            next(iter(stream))
        with pytest.raises(Exception, match="unknown role"):
            llm.complete("reviewer", log, None)

    claude, gpt = ROLES["planner"], ROLES["executor"]
    msgs, chat = "anthropic_messages", "openai_chat"
    assert [(c.role, c.model, c.route, c.usage, c.outcome) for c in _calls(path)] == [
        ("planner", claude, msgs, Usage(input=100, output=10), "ok"),
        ("planner", claude, msgs, Usage(), "UpstreamUnavailable"),
        ("executor", gpt, chat, Usage(input=200, output=20), "ok"),
        ("consultant", gpt, chat, Usage(), "BudgetExhausted"),
        ("delegate", claude, msgs, Usage(input=300, output=30), "ok"),
        ("planner", claude, msgs, Usage(), "closed"),
    ]
    usage = FileTaskStore(path).read().usage
    assert usage.total.calls == 6
    assert (usage.total.input, usage.total.output) == (600, 60)
    assert usage.by_role["planner"].calls == 3
    assert usage.by_role["consultant"].input == 0


def test_router_without_a_store_records_nothing(tmp_path: Path) -> None:
    """Without ``store=`` a router writes no file and says so."""
    script = Script().chat(reply("done"))
    with RoleRouter.from_pin(make_pin(), transport=ScriptedTransport(script)) as llm:
        assert llm.store is None
        llm.complete("executor", [UserText(text="go")], None)
    assert list(tmp_path.iterdir()) == []


def test_a_store_that_cannot_be_written_reaches_the_caller(tmp_path: Path) -> None:
    """A call whose start cannot be recorded raises the store's error and is never sent."""
    path = tmp_path / "task.jsonl"
    store = FileTaskStore(path)
    script = Script().chat(reply("done"))
    llm = RoleRouter.from_pin(make_pin(), store=store, transport=ScriptedTransport(script))
    with path.open("ab") as file:  # a torn line the store must not write after
        file.write(b'{"seq":1,')
    with llm, pytest.raises(LogTornTail):
        llm.complete("executor", [UserText(text="go")], None)
    assert script.requests == []  # no request leaves unaccounted for


def test_concurrent_async_roles_are_each_recorded_under_their_own_role(tmp_path: Path) -> None:
    """Three asyncio agents on one router, two of them on the same model and route, each
    scripted by its own text: each call's record carries its own role and usage."""
    path = tmp_path / "task.jsonl"
    pin = make_pin()
    FileTaskStore(path).begin(pin)
    roles = {"executor": 1, "consultant": 2, "planner": 3}
    script = Script()
    for role, n in roles.items():
        script.when(
            slow(reply(f"{role} answers", usage=Tokens(input=n * 100, output=n)), 0.03 * (4 - n)),
            slow(reply(f"{role} again", usage=Tokens(input=n * 1000, output=n)), 0.01 * n),
            user_text=f"I am the {role}",
        )

    async def agent(llm: AsyncRoleRouter, role: str) -> None:
        log: list[CanonicalEvent] = [UserText(text=f"I am the {role}")]
        log += await llm.complete(role, log, None)
        log.append(UserText(text=f"I am the {role}, go on"))
        log += await llm.complete(role, log, None)
        assert log[-1] == AssistantText(text=f"{role} again", model=pin.model_for(role))

    async def main() -> None:
        transport = ScriptedTransport(script)
        astore = AsyncFileTaskStore(path)
        async with AsyncRoleRouter.from_pin(pin, store=astore, transport=transport) as llm:
            await asyncio.gather(*(agent(llm, role) for role in roles))

    asyncio.run(main())

    usage = FileTaskStore(path).read().usage
    for role, n in roles.items():
        assert (usage.by_role[role].calls, usage.by_role[role].input) == (2, n * 1100), role
        assert usage.by_role[role].output == 2 * n
    assert {c.outcome for c in _calls(path)} == {"ok"}


def test_agent_killed_between_tool_call_and_result_resumes_from_the_file(tmp_path: Path) -> None:
    """SIGKILLed after logging a tool call and before its result, an agent resumes from the
    file alone: it runs the pending call, finishes, and its usage includes the first call."""
    path = tmp_path / "task.jsonl"
    agent = subprocess.Popen(
        [sys.executable, "-m", "tests.task._killed_agent", str(path)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert agent.stdout is not None
    assert agent.stdout.readline() == b"tool call logged\n", agent.stderr
    agent.send_signal(signal.SIGKILL)
    agent.communicate(timeout=30)

    # The three calls of a resume: read the task, rebuild the router, continue.
    task = FileTaskStore(path).resume(TOKEN, base_url=BASE_URL)
    (pending,) = task.pending_calls
    assert (pending.tool, pending.arguments) == ("read_file", {"path": "add.py"})
    assert task.usage.total.calls == 1
    results = [
        ToolResult(call_id=call.call_id, output="def add(a, b): return a - b")
        for call in task.pending_calls
    ]
    task.store.append_events(results)
    script = Script().when(
        reply("add subtracts: fix the operator.", usage=Tokens(input=200, output=25)),
        tool_result="return a - b",
    )
    with RoleRouter.from_pin(
        task.pin, store=task.store, transport=ScriptedTransport(script)
    ) as llm:
        task.store.append_events(llm.complete("planner", task.events + results, [READ_FILE]))

    done = FileTaskStore(path).resume(TOKEN, base_url=BASE_URL)
    assert done.pending_calls == []
    assert done.events[0] == UserText(text=QUESTION)
    assert isinstance(done.events[2], ToolCall)
    assert done.events[-1] == AssistantText(
        text="add subtracts: fix the operator.", model=ROLES["planner"]
    )
    assert done.usage.total.calls == 2
    assert done.usage.total.input == FIRST_USAGE.input + 200
    assert done.usage.by_role["planner"].output == FIRST_USAGE.output + 25
    # The request after the resume carried the call made before the kill, and its result.
    (request,) = script.requests
    assert request.last_tool_result == "def add(a, b): return a - b"
    assert request.last_user_text == QUESTION


def test_records_carry_the_proxys_call_id_and_cost(tmp_path: Path) -> None:
    """The proxy's call id and cost headers reach the call record, on success and on a
    failure, and the task's cost total is their exact decimal sum."""
    import dataclasses
    from decimal import Decimal

    def priced(call_id: str, cost: str) -> tuple[tuple[str, str], ...]:
        return (("x-litellm-call-id", call_id), ("x-litellm-response-cost", cost))

    path = tmp_path / "task.jsonl"
    budget = dataclasses.replace(BUDGET, headers=BUDGET.headers + priced("id-3", "0"))
    script = Script().chat(
        dataclasses.replace(reply("a"), headers=priced("id-1", "0.1")),
        dataclasses.replace(reply("b"), headers=priced("id-2", "0.2")),
        budget,
    )
    with RoleRouter.from_pin(
        make_pin(), store=FileTaskStore(path), transport=ScriptedTransport(script)
    ) as llm:
        llm.complete("executor", [UserText(text="one")], None)
        llm.complete("consultant", [UserText(text="two")], None)
        with pytest.raises(BudgetExhausted):
            llm.complete("executor", [UserText(text="three")], None)

    calls = _calls(path)
    assert [(c.call.call_id, c.outcome) for c in calls if c.call] == [
        ("id-1", "ok"),
        ("id-2", "ok"),
        ("id-3", "BudgetExhausted"),
    ]
    usage = FileTaskStore(path).read().usage
    assert usage.total.cost_usd == Decimal("0.3")  # float addition gives 0.30000000000000004
    assert usage.by_role["executor"].cost_usd == Decimal("0.1")
    assert usage.total.unpriced_calls == 0


def test_a_router_begins_its_store_and_takes_another_tasks_own_pin(tmp_path: Path) -> None:
    """A router given a fresh store writes the pin header; given a task begun with another
    pin, it takes that task's pin (`pin_changes` naming the keys), or with ``strict_pin``
    refuses before any call is made."""
    from nisse_llm.task.logstore import TaskPinMismatch

    fresh = FileTaskStore(tmp_path / "fresh.jsonl")
    with RoleRouter.from_pin(make_pin(), store=fresh, transport=ScriptedTransport(Script())):
        pass
    assert (
        FileTaskStore(tmp_path / "fresh.jsonl").resume(TOKEN, base_url=BASE_URL).pin == make_pin()
    )

    other = FileTaskStore(tmp_path / "other.jsonl").begin(make_pin(executor="gpt-4.1"))
    script = Script()
    with pytest.raises(TaskPinMismatch):
        RoleRouter.from_pin(
            make_pin(), store=other, transport=ScriptedTransport(script), strict_pin=True
        )
    assert script.requests == []
    script.chat(reply("on the task's own model"))
    with RoleRouter.from_pin(make_pin(), store=other, transport=ScriptedTransport(script)) as llm:
        assert llm.pin == make_pin(executor="gpt-4.1")
        assert llm.pin_changes == ("roles.executor",)
        llm.complete("executor", [UserText(text="go")], None)
    assert [r.model for r in script.requests] == ["gpt-4.1"]


def test_typed_answers_and_options_are_recorded_under_their_role(tmp_path: Path) -> None:
    """`complete_as` (with a repair) and calls with per-call options leave one record per
    call made, each under the role it was made for."""
    from pydantic import BaseModel

    from nisse_llm.config.options import RequestOptions
    from nisse_llm.testing import ToolUse

    class Plan(BaseModel):
        steps: list[str]

    path = tmp_path / "task.jsonl"
    script = (
        Script()
        .messages(
            reply(ToolUse("Plan", {"steps": "not a list"}), usage=Tokens(input=10, output=1)),
            reply(ToolUse("Plan", {"steps": ["read", "fix"]}), usage=Tokens(input=20, output=2)),
        )
        .chat(reply("ok", usage=Tokens(input=30, output=3)))
    )
    pin = make_pin()
    with RoleRouter.from_pin(
        pin, store=FileTaskStore(path), transport=ScriptedTransport(script)
    ) as llm:
        typed = llm.complete_as(Plan, "planner", [UserText(text="plan")], None, repair_attempts=1)
        llm.complete("executor", [UserText(text="go")], None, options=RequestOptions(temperature=0))

    assert typed.value == Plan(steps=["read", "fix"])
    assert [(c.role, c.usage.input, c.outcome) for c in _calls(path)] == [
        ("planner", 10, "ok"),
        ("planner", 20, "ok"),
        ("executor", 30, "ok"),
    ]
