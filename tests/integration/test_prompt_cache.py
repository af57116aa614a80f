"""Prompt-cache breakpoints through the real proxy: an Anthropic model entry receives them on both
routes (the clients' default), an OpenAI one none, and the switches turn them off."""

from __future__ import annotations

from typing import Any

import pytest

from nisse_llm.config.settings import load_settings
from nisse_llm.events.canonical import CanonicalEvent, ToolCall, ToolResult, UserText
from nisse_llm.testing import Script, ToolUse, reply
from nisse_llm.testing.proxy import LiteLLMProxy
from nisse_llm.transport.clients import AnthropicPassthroughClient, LiteLLMClient
from tests.corpus import READ_FILE, RUN_TESTS
from tests.integration.helpers import COMBO_IDS, COMBOS, Combo, client_for
from tests.render.cache_markers import marker_paths

pytestmark = pytest.mark.proxy

SYSTEM = "You are a careful coding agent. Use the tools."
TOOLS = [READ_FILE, RUN_TESTS]


def _two_turns(
    proxy: LiteLLMProxy, script: Script, combo: Combo, **options: Any
) -> tuple[Any, bytes]:
    """Run a two-request agent loop; the upstream's second request body and the client's."""
    script.add(
        combo.upstream,
        reply("Reading it.", ToolUse("read_file", {"path": "calc.py"})),
        reply("add() subtracts."),
    )
    log: list[CanonicalEvent] = [UserText(text="Why does test_add fail?")]
    cache = options.pop("cache", None)
    with client_for(proxy, combo.route, **options) as h:
        first = h.client.complete(log, TOOLS, combo.model(), SYSTEM, cache=cache)
        call = next(event for event in first if isinstance(event, ToolCall))
        log += [*first, ToolResult(call_id=call.call_id, output="def add(a, b): return a - b")]
        h.client.complete(log, TOOLS, combo.model(), SYSTEM, cache=cache)
    assert len(script.requests) == 2
    return script.requests[1].json, h.sent.bodies[1]


def _marked_messages(body: dict[str, Any]) -> list[int]:
    return sorted({int(path[1]) for path in marker_paths(body) if path[0] == "messages"})


@pytest.mark.parametrize("combo", [c for c in COMBOS if c.family == "claude"], ids=COMBO_IDS[1::2])
def test_an_anthropic_model_entry_receives_the_breakpoints(
    proxy: LiteLLMProxy, script: Script, combo: Combo
) -> None:
    """Through the proxy, an Anthropic model's upstream request carries four breakpoints: the
    last tool, the system text, the latest user turn and the one before the model's reply."""
    upstream, _ = _two_turns(proxy, script, combo)
    paths = marker_paths(upstream)
    assert len(paths) == 4, paths
    assert ("tools", len(upstream["tools"]) - 1) in paths
    assert ("system", 0) in paths
    assert upstream["system"][0]["text"] == SYSTEM
    last = len(upstream["messages"]) - 1
    assert _marked_messages(upstream) == [last - 2, last]
    assert upstream["messages"][last - 2]["content"][0] == {
        "type": "text",
        "text": "Why does test_add fail?",
        "cache_control": {"type": "ephemeral"},
    }
    result = upstream["messages"][last]["content"][-1]
    assert result["type"] == "tool_result"
    # The chat route's marked text part arrives inside the tool_result LiteLLM builds from it.
    assert marker_paths(result) == ([("content", 0)] if combo.route == "chat" else [()])


@pytest.mark.parametrize("combo", [c for c in COMBOS if c.family == "gpt"], ids=COMBO_IDS[0::2])
def test_an_openai_model_entry_receives_no_breakpoint(
    proxy: LiteLLMProxy, script: Script, combo: Combo
) -> None:
    """Through the proxy, an OpenAI model's upstream request carries no marker, nor did ours."""
    upstream, ours = _two_turns(proxy, script, combo)
    assert marker_paths(upstream) == []
    assert b"cache_control" not in ours


CLAUDE = [c for c in COMBOS if c.family == "claude"]


@pytest.mark.parametrize("combo", CLAUDE, ids=COMBO_IDS[1::2])
@pytest.mark.parametrize(
    "options",
    [{"cache": False}, {"prompt_cache": False}],
    ids=["per-call-off", "client-off"],
)
def test_switching_caching_off_sends_no_breakpoint(
    proxy: LiteLLMProxy, script: Script, combo: Combo, options: dict[str, Any]
) -> None:
    """``complete(..., cache=False)`` or a client built with ``prompt_cache=False`` sends an
    Anthropic model no marker."""
    upstream, ours = _two_turns(proxy, script, combo, **options)
    assert marker_paths(upstream) == []
    assert b"cache_control" not in ours


@pytest.mark.parametrize("combo", CLAUDE, ids=COMBO_IDS[1::2])
def test_a_client_from_a_pin_takes_its_ttl(
    proxy: LiteLLMProxy, script: Script, combo: Combo
) -> None:
    """A client built from a pin with ``llm.prompt_cache_ttl = "1h"`` marks every breakpoint
    with ``"ttl": "1h"`` all the way to the upstream."""
    settings = load_settings(
        llm={"base_url": proxy.base_url, "token": proxy.token, "prompt_cache_ttl": "1h"},
        roles={role: combo.model() for role in ("executor", "planner", "delegate", "consultant")},
    )
    script.add(combo.upstream, reply("Hello."))
    cls = LiteLLMClient if combo.route == "chat" else AnthropicPassthroughClient
    with cls.from_pin(settings.pin()) as client:
        client.complete([UserText(text="Hi.")], TOOLS, combo.model(), SYSTEM)
    upstream = script.requests[0].json
    assert upstream["system"][0]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    assert upstream["tools"][-1]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    assert len(marker_paths(upstream)) == 3
