"""Request options through the real LiteLLM proxy: what the scripted upstream receives.

Both routes to both kinds of model entry. The entries that must accept reasoning name real
reasoning models in ``litellm_params.model`` (the proxy refuses reasoning for models its
price map does not know as such) with the scripted upstream as their ``api_base``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nisse_llm.config.options import RequestOptions
from nisse_llm.events.canonical import CanonicalEvent, Reasoning, ToolCall, ToolResult, UserText
from nisse_llm.testing import Script, ScriptedServer, Thinking, ToolUse, reply
from nisse_llm.testing.proxy import LiteLLMProxy, ProxyModel
from tests.corpus import READ_FILE, RUN_TESTS
from tests.integration.helpers import (
    ClientRoute,
    client_for,
    fresh_script,
    proxy_of,
)
from tests.render.anthropic_checker import anthropic_violations

pytestmark = pytest.mark.proxy

MODELS = [
    ProxyModel("claude-think", "anthropic", upstream_model="claude-sonnet-4-5"),
    ProxyModel("gpt-think", "openai", upstream_model="o4-mini"),
    ProxyModel("gpt-plain", "openai", upstream_model="gpt-4.1-mini"),
]
TOOLS = [READ_FILE, RUN_TESTS]
FIRST = Thinking(
    "The test expects add(1, 2) == 3. Read calc.py first.",
    "EqQBCkYIBxgCKkDw0ZNnn9Js1nH1rq2Q3kFJ1Yd+0t1W2Qx0VnQ==",
)
SECOND = Thinking(
    "add() subtracts; the fix is a plus sign.", "EpYBCkYIBxgCKkBr0l1Pq2w8vY3mX9sT4nQ=="
)


@pytest.fixture(scope="module")
def options_proxy(upstream: ScriptedServer, litellm_bin: Path) -> Iterator[LiteLLMProxy]:
    """A proxy with reasoning-capable entries, in front of the session's scripted upstream."""
    with proxy_of(upstream, litellm_bin, MODELS) as running:
        yield running


@pytest.fixture
def script(upstream: ScriptedServer, options_proxy: LiteLLMProxy) -> Iterator[Script]:
    with fresh_script(upstream) as script:
        yield script


def _received(
    proxy: LiteLLMProxy, script: Script, route: ClientRoute, model: str, options: RequestOptions
) -> dict[str, Any]:
    """Send one call with ``options``; the body the upstream received."""
    script.chat(reply("ok")).messages(reply("ok"))
    with client_for(proxy, route) as h:
        h.client.complete([UserText(text="Fix the test.")], TOOLS, model, options=options)
    (request,) = script.requests
    body: dict[str, Any] = request.json
    script.reset()
    return body


def test_chat_route_to_an_anthropic_entry(options_proxy: LiteLLMProxy, script: Script) -> None:
    """An explicit thinking budget arrives as sent, below max_tokens (effort ``high`` would
    have become 4,096 tokens above this ceiling); the tool switches and stop translate."""
    body = _received(
        options_proxy, script, "chat", "claude-think",
        RequestOptions(reasoning="high", max_output_tokens=3000),
    )  # fmt: skip
    assert script.requests == []
    assert body["max_tokens"] == 3000
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 1500}
    body = _received(
        options_proxy, script, "chat", "claude-think",
        RequestOptions(tool_choice="required", parallel_tool_calls=False, stop=("END",)),
    )  # fmt: skip
    assert body["tool_choice"] == {"type": "any", "disable_parallel_tool_use": True}
    assert body["stop_sequences"] == ["END"]
    assert "thinking" not in body
    body = _received(
        options_proxy, script, "chat", "claude-think", RequestOptions(tool_choice="run_tests")
    )
    assert body["tool_choice"] == {"type": "tool", "name": "run_tests"}


def test_chat_route_to_openai_entries(options_proxy: LiteLLMProxy, script: Script) -> None:
    """A reasoning model gets the effort level; a chat model its sampling and tool switches."""
    body = _received(
        options_proxy, script, "chat", "gpt-think",
        RequestOptions(reasoning="high", tool_choice="required", max_output_tokens=4000),
    )  # fmt: skip
    assert body["reasoning_effort"] == "high"
    assert body["max_completion_tokens"] == 4000
    assert body["tool_choice"] == "required"
    body = _received(
        options_proxy, script, "chat", "gpt-plain",
        RequestOptions(
            temperature=0.2, top_p=0.5, stop=("END",), tool_choice="run_tests",
            parallel_tool_calls=False,
        ),
    )  # fmt: skip
    assert body["temperature"] == 0.2
    assert body["top_p"] == 0.5
    assert body["stop"] == ["END"]
    assert body["tool_choice"] == {"type": "function", "function": {"name": "run_tests"}}
    assert body["parallel_tool_calls"] is False
    body = _received(options_proxy, script, "chat", "gpt-plain", RequestOptions(reasoning="off"))
    assert "reasoning_effort" not in body  # "off" works on a model without reasoning


def test_messages_route_to_an_anthropic_entry(options_proxy: LiteLLMProxy, script: Script) -> None:
    """The passthrough forwards every option field unchanged."""
    body = _received(
        options_proxy, script, "messages", "claude-think",
        RequestOptions(
            reasoning="medium", max_output_tokens=20000, parallel_tool_calls=False, stop=("END",)
        ),
    )  # fmt: skip
    assert body["max_tokens"] == 20000
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 8192}
    assert body["tool_choice"] == {"type": "auto", "disable_parallel_tool_use": True}
    assert body["stop_sequences"] == ["END"]
    body = _received(
        options_proxy, script, "messages", "claude-think",
        RequestOptions(reasoning="off", tool_choice="run_tests"),
    )  # fmt: skip
    assert body["thinking"] == {"type": "disabled"}
    assert body["tool_choice"] == {"type": "tool", "name": "run_tests"}


def test_messages_route_to_an_openai_entry(options_proxy: LiteLLMProxy, script: Script) -> None:
    """The proxy translates the ceiling, stop and a named tool; it drops the parallel switch
    (``disable_parallel_tool_use`` does not become ``parallel_tool_calls``)."""
    body = _received(
        options_proxy, script, "messages", "gpt-plain",
        RequestOptions(
            max_output_tokens=3000, stop=("END",), tool_choice="run_tests",
            parallel_tool_calls=False,
        ),
    )  # fmt: skip
    assert body["max_tokens"] == 3000
    assert body["stop"] == ["END"]
    assert body["tool_choice"] == {"type": "function", "function": {"name": "run_tests"}}
    assert "parallel_tool_calls" not in body


def _send(h: Any, log: list[CanonicalEvent], options: RequestOptions, stream: bool) -> list[Any]:
    if not stream:
        return list(h.client.complete(log, TOOLS, "claude-think", options=options))
    with h.client.stream(log, TOOLS, "claude-think", options=options) as replying:
        for _ in replying:
            pass
    return list(replying.events)


@pytest.mark.parametrize("stream", [False, True], ids=["complete", "stream"])
@pytest.mark.parametrize("route", ["messages", "chat"])
def test_a_reasoning_tool_loop(
    route: ClientRoute, stream: bool, options_proxy: LiteLLMProxy, script: Script
) -> None:
    """Thinking on through a two-turn tool loop: the upstream's signed thinking comes back as
    `Reasoning` and goes back, exactly, at the head of the assistant turn it belongs to, so
    the second request keeps Anthropic's rule for thinking with tools."""
    script.messages(
        reply(FIRST, "Reading it.", ToolUse("read_file", {"path": "calc.py"})),
        reply(SECOND, "add() subtracts; it should add."),
    )
    options = RequestOptions(reasoning="low", max_output_tokens=4000)
    log: list[CanonicalEvent] = [UserText(text="Why does test_add fail?")]
    with client_for(options_proxy, route) as h:
        events = _send(h, log, options, stream)
        thinking = [e for e in events if isinstance(e, Reasoning)]
        assert [r.block["thinking"] for r in thinking] == [FIRST.thinking]
        assert thinking[0].block["signature"] == FIRST.signature
        call = next(e for e in events if isinstance(e, ToolCall))
        log += [*events, ToolResult(call_id=call.call_id, output="def add(a, b): return a - b")]
        final = _send(h, log, options, stream)
    assert [r.block["thinking"] for r in final if isinstance(r, Reasoning)] == [SECOND.thinking]
    first, second = (request.json for request in script.requests)
    for body in (first, second):
        assert body["thinking"] == {"type": "enabled", "budget_tokens": 2000}  # half the ceiling
        assert body["max_tokens"] == 4000
    assistant = second["messages"][1]
    assert assistant["role"] == "assistant"
    assert assistant["content"][0] == {
        "type": "thinking",
        "thinking": FIRST.thinking,
        "signature": FIRST.signature,
    }
    assert [block["type"] for block in assistant["content"]] == ["thinking", "text", "tool_use"]
    assert anthropic_violations(second) == []


@pytest.mark.parametrize("route", ["messages", "chat"])
def test_thinking_waits_for_a_fresh_turn_when_the_loop_did_not_think(
    route: ClientRoute, options_proxy: LiteLLMProxy, script: Script
) -> None:
    """A tool call made without thinking (another role's model, or reasoning off) continued
    with reasoning on: that request goes without thinking (Anthropic refuses the pair), and
    the request after the next user turn thinks again."""
    script.messages(
        reply("Reading it.", ToolUse("read_file", {"path": "calc.py"})),
        reply("add() subtracts."),
        reply(FIRST, "Then fix it."),
    )
    log: list[CanonicalEvent] = [UserText(text="Why does test_add fail?")]
    with client_for(options_proxy, route) as h:
        events = h.client.complete(log, TOOLS, "claude-think")  # no reasoning asked
        call = next(e for e in events if isinstance(e, ToolCall))
        log += [*events, ToolResult(call_id=call.call_id, output="def add(a, b): return a - b")]
        thinking_on = RequestOptions(reasoning="low", max_output_tokens=4000)
        log += h.client.complete(log, TOOLS, "claude-think", options=thinking_on)
        log.append(UserText(text="How do I fix it?"))
        h.client.complete(log, TOOLS, "claude-think", options=thinking_on)
    first, continued, fresh = (request.json for request in script.requests)
    assert "thinking" not in first
    assert "thinking" not in continued
    assert continued["max_tokens"] == 4000
    assert anthropic_violations(continued) == []
    assert fresh["thinking"] == {"type": "enabled", "budget_tokens": 2000}
