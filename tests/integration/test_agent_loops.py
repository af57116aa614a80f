"""Multi-turn agent loops through the real proxy, on both routes, to both kinds of model entry."""

from __future__ import annotations

import json
import re

import pytest

from nisse_llm.events.canonical import (
    CALL_ID_PATTERN,
    AssistantText,
    CanonicalEvent,
    ToolCall,
    ToolResult,
    UserText,
)
from nisse_llm.render._cache import PromptCache
from nisse_llm.render.anthropic_messages import AnthropicMessagesRenderer
from nisse_llm.render.openai_chat import TOOL_ERROR_PREFIX
from nisse_llm.testing import Script, ToolUse, reply
from nisse_llm.testing.proxy import LiteLLMProxy
from tests.corpus import EDIT_FILE, READ_FILE, RUN_TESTS
from tests.integration.helpers import (
    COMBO_IDS,
    COMBOS,
    MAX_TOKENS,
    Combo,
    client_for,
    tool_calls_sent,
    tool_results_sent,
)

pytestmark = pytest.mark.proxy

SYSTEM = "You are a careful coding agent. Use the tools."
TOOLS = [READ_FILE, RUN_TESTS, EDIT_FILE]
EDIT = {"path": "calc.py", "edits": [{"old": "a - b", "new": "a + b"}]}


def _script_loop(script: Script, combo: Combo) -> None:
    script.add(
        combo.upstream,
        reply(
            "I'll read the file and run its test.",
            ToolUse("read_file", {"path": "calc.py"}),
            ToolUse("run_tests", {"selector": "tests/test_calc.py", "verbose": True}),
        ),
        reply(ToolUse("edit_file", EDIT)),
        reply("Fixed: add() now returns a + b, and the test passes."),
    )


@pytest.mark.parametrize("combo", COMBOS, ids=COMBO_IDS)
def test_agent_loop_with_parallel_calls_tool_errors_and_a_resumed_call(
    proxy: LiteLLMProxy, script: Script, combo: Combo
) -> None:
    """Parallel calls, an ok and a failed result, and an interrupted call resumed: events and upstream bodies are right."""
    _script_loop(script, combo)
    model = combo.model()
    log: list[CanonicalEvent] = [UserText(text="The calc test fails. Fix it.")]
    with client_for(proxy, combo.route) as h:
        # Turn 1: text and two parallel tool calls.
        first = h.client.complete(log, TOOLS, model, system=SYSTEM)
        text, read, run = first
        assert text == AssistantText(text="I'll read the file and run its test.", model=model)
        assert isinstance(read, ToolCall)
        assert isinstance(run, ToolCall)
        assert (read.tool, read.arguments) == ("read_file", {"path": "calc.py"})
        assert (run.tool, run.arguments) == (
            "run_tests",
            {"selector": "tests/test_calc.py", "verbose": True},
        )
        for call in (read, run):
            assert re.fullmatch(CALL_ID_PATTERN, call.call_id)
            assert "scripted" not in call.call_id  # the provider's id was dropped (A10)
        assert h.client.last_usage is not None
        assert h.client.last_usage.input > 0
        log += [
            *first,
            ToolResult(call_id=read.call_id, output="def add(a, b):\n    return a - b\n"),
            ToolResult(call_id=run.call_id, output="1 failed: test_add (3 != -1)", is_error=True),
        ]

        # Turn 2: one call, then the run is interrupted before its result is logged.
        (edit,) = h.client.complete(log, TOOLS, model, system=SYSTEM)
        assert isinstance(edit, ToolCall)
        assert (edit.tool, edit.arguments) == ("edit_file", EDIT)
        log += [edit, UserText(text="You were interrupted. Check the edit and finish.")]

        # Turn 3, resumed: the unanswered call goes up with a synthetic error result.
        final = h.client.complete(log, TOOLS, model, system=SYSTEM)
        assert final == [
            AssistantText(text="Fixed: add() now returns a + b, and the test passes.", model=model)
        ]

    received = [r.json for r in script.requests]
    assert [r.route for r in script.requests] == [combo.upstream] * 3
    assert {body["model"] for body in received} == {model}
    assert script.unscripted == []
    # The canonical ids are the ids on the wire, and every call is answered.
    assert tool_calls_sent(received[1], combo.upstream) == [
        (read.call_id, "read_file", {"path": "calc.py"}),
        (run.call_id, "run_tests", {"selector": "tests/test_calc.py", "verbose": True}),
    ]
    results = tool_results_sent(received[1], combo.upstream)
    assert results[read.call_id][0] == "def add(a, b):\n    return a - b\n"
    assert "1 failed: test_add (3 != -1)" in results[run.call_id][0]
    resumed = tool_results_sent(received[2], combo.upstream)[edit.call_id]
    assert "nterrupted" in resumed[0]
    if combo.route == "chat":
        # The chat route has no error flag: the output says so in words, whatever the upstream.
        assert results[run.call_id][0].startswith(TOOL_ERROR_PREFIX)
        assert resumed[0].startswith(TOOL_ERROR_PREFIX)
    elif combo.upstream == "anthropic_messages":
        assert results[read.call_id][1] in (None, False)
        assert results[run.call_id][1] is True
        assert resumed[1] is True


def test_passthrough_upstream_receives_exactly_the_rendered_body(
    proxy: LiteLLMProxy, script: Script
) -> None:
    """On /v1/messages to an anthropic/ model the upstream gets nisse_llm's body, plus only ``"stream": false``."""
    combo = Combo("messages", "claude")
    _script_loop(script, combo)
    model = combo.model()
    renderer = AnthropicMessagesRenderer()
    log: list[CanonicalEvent] = [UserText(text="The calc test fails. Fix it.")]
    rendered: list[bytes] = []
    with client_for(proxy, "messages") as h:
        for results in (
            lambda calls: [
                ToolResult(call_id=calls[0].call_id, output="def add(a, b): return a - b"),
                ToolResult(call_id=calls[1].call_id, output="1 failed", is_error=True),
            ],
            lambda calls: [UserText(text="Interrupted; carry on.")],
            None,
        ):
            rendered.append(
                renderer.render_bytes(
                    log, TOOLS, model, SYSTEM, max_tokens=MAX_TOKENS, cache=PromptCache()
                )
            )
            events = h.client.complete(log, TOOLS, model, system=SYSTEM)
            if results is not None:
                log += [*events, *results([e for e in events if isinstance(e, ToolCall)])]
        sent = h.sent.bodies
    received = [r.body for r in script.requests]
    assert len(sent) == len(received) == len(rendered) == 3
    for ours, on_wire, upstream_got in zip(rendered, sent, received, strict=True):
        assert on_wire == ours
        assert json.loads(upstream_got) == {**json.loads(ours), "stream": False}
        assert set(json.loads(upstream_got)) - set(json.loads(ours)) == {"stream"}
        assert "stream" not in json.loads(ours)
    # The upstream gets the proxy's deployment key; the client's token never leaves the proxy.
    for request in script.requests:
        assert request.headers["x-api-key"] == "scripted-upstream-key"
        assert proxy.token not in request.headers.get("authorization", "")


async def test_async_client_runs_a_tool_loop_through_the_proxy(
    proxy: LiteLLMProxy, script: Script
) -> None:
    """The async passthrough client completes a call-and-answer loop through the proxy."""
    from nisse_llm.transport.clients import AsyncAnthropicPassthroughClient

    script.messages(reply(ToolUse("read_file", {"path": "README.md"})), reply("It is a README."))
    async with AsyncAnthropicPassthroughClient(
        proxy.base_url, proxy.token, max_tokens=MAX_TOKENS
    ) as client:
        log: list[CanonicalEvent] = [UserText(text="What is README.md?")]
        (call,) = await client.complete(log, [READ_FILE], "claude-scripted")
        assert isinstance(call, ToolCall)
        log += [call, ToolResult(call_id=call.call_id, output="# nisse_llm")]
        assert await client.complete(log, [READ_FILE], "claude-scripted") == [
            AssistantText(text="It is a README.", model="claude-scripted")
        ]
    assert tool_results_sent(script.requests[1].json, "anthropic_messages") == {
        call.call_id: ("# nisse_llm", None)
    } or tool_results_sent(script.requests[1].json, "anthropic_messages") == {
        call.call_id: ("# nisse_llm", False)
    }
