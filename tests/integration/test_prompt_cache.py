"""Prompt-cache breakpoints through the real proxy: an Anthropic model entry receives them on both
routes, an OpenAI one none.

The clients are built here with a renderer that passes a `PromptCache` policy on each render
(route specs with a wrapping renderer), so the test needs nothing of the clients beyond
their public route specs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import pytest

from nisse_llm.canonical import (
    CanonicalEvent,
    Completion,
    LogLike,
    ToolCall,
    ToolLike,
    ToolResult,
    UserText,
)
from nisse_llm.clients import CHAT_ROUTE, MESSAGES_ROUTE, AnthropicPassthroughClient, LiteLLMClient
from nisse_llm.render._cache import PromptCache
from nisse_llm.render.anthropic_messages import AnthropicMessagesRenderer
from nisse_llm.render.openai_chat import OpenAIChatRenderer
from nisse_llm.testing import Script, ToolUse, reply
from nisse_llm.testing.proxy import LiteLLMProxy
from tests.corpus import READ_FILE, RUN_TESTS
from tests.integration.helpers import (
    COMBO_IDS,
    COMBOS,
    MAX_TOKENS,
    Combo,
    RecordingTransport,
)
from tests.render.cache_markers import marker_paths

pytestmark = pytest.mark.proxy

SYSTEM = "You are a careful coding agent. Use the tools."
TOOLS = [READ_FILE, RUN_TESTS]


class _CachingRenderer:
    """A route's renderer that renders every request under one prompt-cache policy."""

    def __init__(self, inner: OpenAIChatRenderer | AnthropicMessagesRenderer) -> None:
        self._inner = inner
        self._cache = PromptCache()

    def render(
        self,
        events: LogLike,
        tools: Iterable[ToolLike] | None,
        model: str,
        system: str | None = None,
        **options: Any,
    ) -> dict[str, Any]:
        return self._inner.render(events, tools, model, system, **{**options, "cache": self._cache})

    def render_bytes(
        self,
        events: LogLike,
        tools: Iterable[ToolLike] | None,
        model: str,
        system: str | None = None,
        **options: Any,
    ) -> bytes:
        return self._inner.render_bytes(
            events, tools, model, system, **{**options, "cache": self._cache}
        )

    def parse(self, body: bytes | str | Mapping[str, Any], *, requested_model: str) -> Completion:
        return self._inner.parse(body, requested_model=requested_model)


class _CachingChatClient(LiteLLMClient):
    ROUTE = dataclasses.replace(CHAT_ROUTE, renderer=lambda: _CachingRenderer(OpenAIChatRenderer()))


class _CachingMessagesClient(AnthropicPassthroughClient):
    ROUTE = dataclasses.replace(
        MESSAGES_ROUTE, renderer=lambda: _CachingRenderer(AnthropicMessagesRenderer())
    )


@contextmanager
def _client(
    proxy: LiteLLMProxy, combo: Combo
) -> Iterator[tuple[LiteLLMClient | AnthropicPassthroughClient, RecordingTransport]]:
    sent = RecordingTransport()
    cls = _CachingChatClient if combo.route == "chat" else _CachingMessagesClient
    with cls(proxy.base_url, proxy.token, transport=sent, max_tokens=MAX_TOKENS) as client:
        yield client, sent


def _two_turns(proxy: LiteLLMProxy, script: Script, combo: Combo) -> tuple[Any, bytes]:
    """Run a two-request agent loop; the upstream's second request body and the client's."""
    script.add(
        combo.upstream,
        reply("Reading it.", ToolUse("read_file", {"path": "calc.py"})),
        reply("add() subtracts."),
    )
    log: list[CanonicalEvent] = [UserText(text="Why does test_add fail?")]
    with _client(proxy, combo) as (client, sent):
        first = client.complete(log, TOOLS, combo.model(), SYSTEM)
        call = next(event for event in first if isinstance(event, ToolCall))
        log += [*first, ToolResult(call_id=call.call_id, output="def add(a, b): return a - b")]
        client.complete(log, TOOLS, combo.model(), SYSTEM)
    assert len(script.requests) == 2
    return script.requests[1].json, sent.bodies[1]


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
