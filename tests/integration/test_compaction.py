"""Compaction through the real proxy: an agent overflowing a small-window model entry
recovers by the router's policy (compact, summarise, record) and finishes, on both routes,
and the prompt prefix kept across the compaction is measured by the proxy's counter."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest

from nisse_llm.config.settings import Pin, load_settings
from nisse_llm.events.canonical import CanonicalEvent, Compaction, ToolCall, ToolResult, UserText
from nisse_llm.task.logstore import FileTaskStore, TaskStore
from nisse_llm.task.summaries import SUMMARY_INSTRUCTIONS, CompactionPolicy
from nisse_llm.testing import RecordedRequest, Script, ToolUse, failure, reply
from nisse_llm.testing.proxy import LiteLLMProxy
from nisse_llm.transport.routers import RoleRouter
from tests.corpus import READ_FILE
from tests.integration.helpers import ClientRoute
from tests.transport.overflow_bodies import OVERFLOWS

pytestmark = pytest.mark.proxy

TASK = "Read a.py to e.py and say if any is broken."
SYSTEM = "You are a careful coding agent."
SUMMARY = "Read a.py, b.py and c.py: all fine."
FILES = ["a.py", "b.py", "c.py", "d.py", "e.py"]
#: The `*-tiny` entries' window (tests.integration: scripted_models).
WINDOW = 300
POLICY = CompactionPolicy(
    threshold=0.8, target=0.7, keep_last_turns=1, summarize_role="delegate", summary_tokens=30
)


def _pin(proxy: LiteLLMProxy, family: str) -> Pin:
    roles = {
        "executor": f"{family}-tiny",
        "delegate": f"{family}-scripted",
        "planner": f"{family}-scripted",
        "consultant": f"{family}-scripted",
    }
    return load_settings(
        None, llm={"base_url": proxy.base_url, "token": proxy.token}, roles=roles
    ).pin()


def _is_summary(request: RecordedRequest) -> bool:
    return SUMMARY_INSTRUCTIONS in (request.last_user_text or "")


def _source(path: str) -> str:
    return f"# {path}\ndef f(x):\n    return x + 1  # checked, fine\n"


def _run(llm: RoleRouter, store: TaskStore) -> list[CanonicalEvent]:
    """The agent: ask, run every tool call, append everything, until a reply makes no call."""
    log: list[CanonicalEvent] = [store.append_event(UserText(text=TASK)).event]
    for _ in range(len(FILES) + 2):
        answer = llm.complete("executor", log, [READ_FILE], SYSTEM)
        store.append_events(answer)
        log += answer
        calls = [e for e in answer if isinstance(e, ToolCall)]
        if not calls:
            return log
        results = [
            ToolResult(call_id=c.call_id, output=_source(c.arguments["path"])) for c in calls
        ]
        store.append_events(results)
        log += results
    raise AssertionError("the agent did not finish")


def _blocks(messages: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    """A body's messages as the units a prompt cache matches: each message on the chat
    route, each content block (with its role) on the messages route."""
    blocks: list[tuple[str, Any]] = []
    for message in messages:
        content = message.get("content")
        if message["role"] != "tool" and isinstance(content, list):
            blocks += [(message["role"], block) for block in content]
        else:
            blocks.append((message["role"], message))
    return blocks


def _messages(blocks: list[tuple[str, Any]], route: str) -> list[dict[str, Any]]:
    if route == "chat":
        return [message for _, message in blocks]
    messages: list[dict[str, Any]] = []
    for role, block in blocks:
        if messages and messages[-1]["role"] == role:
            messages[-1]["content"].append(block)
        else:
            messages.append({"role": role, "content": [block]})
    return messages


def _script_agent(script: Script, upstream: str, *extra: Any) -> None:
    script.when(reply(SUMMARY), where=_is_summary)
    turns = [reply(ToolUse("read_file", {"path": p})) for p in FILES]
    script.add(upstream, *extra, *turns, reply("None is broken."))  # type: ignore[arg-type]


@pytest.mark.parametrize("route", ["chat", "messages"])
def test_an_agent_past_the_window_is_compacted_with_a_summary_and_finishes(
    proxy: LiteLLMProxy, script: Script, tmp_path: Path, route: ClientRoute
) -> None:
    """Growing past 80% of a 300-token window, the agent's log is compacted and summarised by
    the delegate before the call; it finishes, every request fits, the task file records the
    compaction and the call says so, and a resume gives the compacted view."""
    family = "gpt" if route == "chat" else "claude"
    upstream = "openai_chat" if route == "chat" else "anthropic_messages"
    _script_agent(script, upstream)
    path = tmp_path / "task.jsonl"
    pin = _pin(proxy, family)
    store = FileTaskStore(path).begin(pin)
    with RoleRouter.from_pin(pin, store=store, compaction=POLICY, max_tokens=50) as llm:
        log = _run(llm, store)
        counted = llm.headroom("executor", llm.compacted_log or [], [READ_FILE], SYSTEM)
    assert log[-1].kind == "assistant_text"
    summaries = [r for r in script.requests if _is_summary(r)]
    assert summaries  # the delegate was asked
    agent = [r for r in script.requests if not _is_summary(r)]
    assert len(agent) == len(FILES) + 1
    assert any(SUMMARY in json.dumps(r.json) for r in agent)  # the summary was sent as context
    # The compacted log (summary included) is within the policy's budget, by the proxy's counter.
    assert counted.input_tokens <= int(WINDOW * POLICY.target)

    found = FileTaskStore(path).read()
    compactions = [r.event for r in found.events if isinstance(r.event, Compaction)]
    assert compactions
    assert all(c.summary == SUMMARY for c in compactions if c.removed)
    compacted_calls = [c.llm_call for c in found.calls if c.llm_call.compacted]
    assert {c.compacted for c in compacted_calls} == {"threshold"}
    assert found.unknown_calls == []
    task = FileTaskStore(path).resume(proxy.token, base_url=proxy.base_url)
    assert len(task.history) > len(task.events)
    assert task.events[0] == UserText(text=TASK)
    assert any(isinstance(e, Compaction) and e.summary == SUMMARY for e in task.events)
    assert task.usage.total.calls == len(script.requests)


@pytest.mark.parametrize("route", ["chat", "messages"])
def test_an_overflow_refusal_is_compacted_once_and_retried(
    proxy: LiteLLMProxy, script: Script, tmp_path: Path, route: ClientRoute
) -> None:
    """The model refuses a call as too long (its provider's real body): the router compacts
    once, records it, retries, and the agent finishes; the call records say "overflow"."""
    family = "gpt" if route == "chat" else "claude"
    upstream = "openai_chat" if route == "chat" else "anthropic_messages"
    body = OVERFLOWS[
        "openai-messages-resulted-in" if family == "gpt" else "anthropic-prompt-too-long"
    ]
    # Four calls pass (the log stays under the window); the fifth is refused whatever its size.
    script.when(reply(SUMMARY), where=_is_summary)
    turns = [reply(ToolUse("read_file", {"path": p})) for p in FILES]
    script.add(
        upstream, *turns[:4], failure(body.status, body.body), turns[4], reply("None is broken.")
    )
    path = tmp_path / "task.jsonl"
    pin = _pin(proxy, family)
    store = FileTaskStore(path).begin(pin)
    policy = CompactionPolicy(
        threshold=1.0, target=0.7, keep_last_turns=1, summarize_role="delegate", summary_tokens=20
    )
    with RoleRouter.from_pin(pin, store=store, compaction=policy, max_tokens=50) as llm:
        _run(llm, store)
    found = FileTaskStore(path).read()
    outcomes = [
        (c.llm_call.outcome, c.llm_call.compacted)
        for c in found.calls
        if c.llm_call.role == "executor"
    ]
    assert ("ContextWindowExceeded", None) in outcomes
    assert ("ok", "overflow") in outcomes
    assert any(isinstance(r.event, Compaction) for r in found.events)


@pytest.mark.parametrize("route", ["chat", "messages"])
def test_the_prompt_prefix_kept_by_compaction_is_measured_by_the_proxy(
    proxy: LiteLLMProxy, script: Script, tmp_path: Path, route: ClientRoute
) -> None:
    """The request after a compaction starts with the same system prompt, tools and first
    message as the one before it: that shared prefix, counted by the proxy's token counter,
    is what the prompt cache can still serve."""
    family = "gpt" if route == "chat" else "claude"
    upstream = "openai_chat" if route == "chat" else "anthropic_messages"
    _script_agent(script, upstream)
    pin = _pin(proxy, family)
    store = FileTaskStore(tmp_path / "task.jsonl").begin(pin)
    with RoleRouter.from_pin(pin, store=store, compaction=POLICY, max_tokens=50) as llm:
        _run(llm, store)
    agent = [r for r in script.requests if not _is_summary(r)]
    marker = next(
        n for n, r in enumerate(agent) if "removed to fit the context window" in json.dumps(r.json)
    )
    before, after = agent[marker - 1].json, agent[marker].json
    assert (before.get("system"), before.get("tools")) == (after.get("system"), after.get("tools"))
    old_blocks, new_blocks = _blocks(before["messages"]), _blocks(after["messages"])
    shared = 0
    for old, new in zip(old_blocks, new_blocks, strict=False):
        if old != new:
            break
        shared += 1
    assert shared >= 1  # the system prompt's message or the first user message at least
    model = f"{family}-tiny"

    def count(blocks: list[tuple[str, Any]]) -> int:
        request: dict[str, Any] = {"model": model, "messages": _messages(blocks, route)}
        for key in ("system", "tools"):
            if before.get(key):
                request[key] = before[key]
        answer = httpx.post(
            f"{proxy.base_url}/utils/token_counter",
            json=request,
            headers={"Authorization": f"Bearer {proxy.token}"},
        )
        answer.raise_for_status()
        total: int = answer.json()["total_tokens"]
        return total

    prefix, whole_before, whole_after = (
        count(old_blocks[:shared]),
        count(old_blocks),
        count(new_blocks),
    )
    print(f"\n{route}: cached prefix {prefix} of {whole_before} tokens before, {whole_after} after")
    assert 0 < prefix < whole_before
    assert whole_after < whole_before


@pytest.mark.parametrize("route", ["chat", "messages"])
def test_compacted_logs_fit_their_budget_by_the_proxys_own_counter(
    proxy: LiteLLMProxy, route: ClientRoute
) -> None:
    """For generated logs and budgets, compact counting with the proxy's token counter returns
    a log the same counter puts under the budget (or refuses, when the kept part alone is over)."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from nisse_llm.errors import ContextWindowExceeded
    from nisse_llm.task.compaction import compact
    from nisse_llm.transport.clients import AnthropicPassthroughClient, LiteLLMClient
    from tests.task.compaction.strategies import bulky_logs

    kind = LiteLLMClient if route == "chat" else AnthropicPassthroughClient
    model = "gpt-scripted" if route == "chat" else "claude-scripted"
    with kind(proxy.base_url, proxy.token, max_tokens=50) as client:

        def count(events: Sequence[CanonicalEvent]) -> int:
            return client.headroom(model, events, [READ_FILE], SYSTEM).input_tokens

        @settings(
            max_examples=25,
            deadline=None,
            derandomize=True,  # the same logs each run, so the guard below cannot flake
            suppress_health_check=list(HealthCheck),
        )
        @given(bulky_logs(max_steps=30), st.floats(0.1, 0.9))
        def check(events: list[CanonicalEvent], share: float) -> None:
            # Above what the request costs with the first message alone (system, tools).
            base = count(events[:1])
            budget = base + int((count(events) - base) * share)
            try:
                short = compact(
                    events,
                    budget_tokens=budget,
                    keep_last_turns=1,
                    tools=[READ_FILE],
                    system=SYSTEM,
                    count=count,
                )
            except ContextWindowExceeded as exc:
                refused: ContextWindowExceeded | None = exc
            else:
                refused = None
            if refused is None:
                assert count(short) <= budget
                shortened.append(short != events)
            else:
                assert refused.requested_tokens is not None
                assert refused.requested_tokens > budget

        shortened: list[bool] = []
        check()
    assert any(shortened)  # the examples did make compact cut something


async def test_the_async_router_compacts_by_the_proxys_count_and_finishes(
    proxy: LiteLLMProxy, script: Script, tmp_path: Path
) -> None:
    """AsyncRoleRouter runs the same agent past the small window: compacted by the proxy's
    counter, summarised, recorded, and finished, with the compacted log within budget."""
    from nisse_llm.task.logstore import AsyncFileTaskStore
    from nisse_llm.transport.routers import AsyncRoleRouter

    _script_agent(script, "anthropic_messages")
    path = tmp_path / "task.jsonl"
    pin = _pin(proxy, "claude")
    store = await AsyncFileTaskStore(path).begin(pin)
    async with AsyncRoleRouter.from_pin(pin, store=store, compaction=POLICY, max_tokens=50) as llm:
        log: list[CanonicalEvent] = [(await store.append_event(UserText(text=TASK))).event]
        for _ in range(len(FILES) + 2):
            answer = await llm.complete("executor", log, [READ_FILE], SYSTEM)
            calls = [e for e in answer if isinstance(e, ToolCall)]
            results = [
                ToolResult(call_id=c.call_id, output=_source(c.arguments["path"])) for c in calls
            ]
            await store.append_events([*answer, *results])
            log += [*answer, *results]
            if not calls:
                break
        counted = await llm.headroom("executor", llm.compacted_log or [], [READ_FILE], SYSTEM)
    assert log[-1].kind == "assistant_text"
    assert counted.input_tokens <= int(WINDOW * POLICY.target)
    found = FileTaskStore(path).read()
    assert any(isinstance(r.event, Compaction) and r.event.summary == SUMMARY for r in found.events)
    assert "threshold" in {c.llm_call.compacted for c in found.calls}
