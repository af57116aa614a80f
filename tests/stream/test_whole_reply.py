"""A complete JSON body answering a stream request still streams: its deltas, then its events.

LiteLLM answers a stream request to a mock entry with ``content-type: application/json``;
any server may ignore ``"stream": true``. Both routes, sync and async clients.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from nisse_llm.config.routing import Route
from nisse_llm.events.canonical import AssistantText, CanonicalEvent, Reasoning, ToolCall, UserText
from nisse_llm.stream.deltas import (
    ReasoningDelta,
    StreamDelta,
    TextDelta,
    ToolArgumentsDelta,
    ToolCallStarted,
)
from nisse_llm.testing import (
    RedactedThinking,
    Text,
    Thinking,
    Tokens,
    ToolUse,
    anthropic_message_body,
    openai_chat_body,
)
from nisse_llm.transport.clients import (
    AnthropicPassthroughClient,
    AsyncAnthropicPassthroughClient,
    AsyncLiteLLMClient,
    LiteLLMClient,
)
from tests.stream.record_proxy_cuts import MOCK_TEXT

LOG = [UserText(text="Fix the failing test.")]
PARTS = (
    Thinking("The test expects add(1, 2) == 3.", "c2lnbmF0dXJl"),
    RedactedThinking("ZGF0YQ=="),
    "I'll read the file, then run the tests.",
    ToolUse("read_file", {"path": "calc.py"}),
    ToolUse("run_tests", {"selector": "tests/test_calc.py", "verbose": True, "n": [1, 2.5]}),
)
ROUTES: list[Route] = ["openai_chat", "anthropic_messages"]


def _body(route: Route) -> dict[str, Any]:
    parts = [Text(p) if isinstance(p, str) else p for p in PARTS]
    if route == "openai_chat":
        parts = [p for p in parts if not isinstance(p, RedactedThinking)]
        return openai_chat_body(parts, model="m", usage=Tokens(input=10, output=20))
    return anthropic_message_body(parts, model="m", usage=Tokens(input=10, output=20))


def _transport(route: Route) -> httpx.MockTransport:
    body = json.dumps(_body(route)).encode()

    def answer(request: httpx.Request) -> httpx.Response:
        assert json.loads(request.content)["stream"] is True
        return httpx.Response(200, headers={"content-type": "application/json"}, content=body)

    return httpx.MockTransport(answer)


Replay = tuple[list[StreamDelta], list[CanonicalEvent]]


def _sync(route: Route, transport: httpx.MockTransport | None = None) -> Replay:
    cls = LiteLLMClient if route == "openai_chat" else AnthropicPassthroughClient
    with (
        cls("http://proxy.test", "sk-test", transport=transport or _transport(route)) as client,
        client.stream(LOG, None, "m") as stream,
    ):
        return list(stream), stream.events


def _async(route: Route, transport: httpx.MockTransport | None = None) -> Replay:
    cls = AsyncLiteLLMClient if route == "openai_chat" else AsyncAnthropicPassthroughClient

    async def run() -> Replay:
        async with (
            cls("http://proxy.test", "sk-test", transport=transport or _transport(route)) as client,
            client.stream(LOG, None, "m") as stream,
        ):
            return [d async for d in stream], stream.events

    return asyncio.run(run())


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("route", ROUTES)
def test_a_whole_reply_yields_deltas_that_add_up_to_its_events(route: Route, mode: str) -> None:
    """Text, reasoning, each call's start and arguments: concatenated, exactly the final events."""
    deltas, events = (_sync if mode == "sync" else _async)(route)
    texts = [e.text for e in events if isinstance(e, AssistantText)]
    assert "".join(d.text for d in deltas if isinstance(d, TextDelta)) == "".join(texts)
    assert texts == ["I'll read the file, then run the tests."]
    for delta in deltas:
        if isinstance(delta, TextDelta | ReasoningDelta):
            assert delta.text_so_far == delta.text  # each block arrives in one piece

    reasoning = [
        e.block.get("thinking", e.block.get("reasoning_content"))
        for e in events
        if isinstance(e, Reasoning) and e.block.get("type") != "redacted_thinking"
    ]
    assert [d.text for d in deltas if isinstance(d, ReasoningDelta)] == reasoning
    assert reasoning == ["The test expects add(1, 2) == 3."]

    calls = [e for e in events if isinstance(e, ToolCall)]
    started = [(d.index, d.tool) for d in deltas if isinstance(d, ToolCallStarted)]
    assert started == [(i, c.tool) for i, c in enumerate(calls)]
    for index, call in enumerate(calls):
        joined = "".join(
            d.partial_json for d in deltas if isinstance(d, ToolArgumentsDelta) and d.index == index
        )
        assert json.loads(joined) == call.arguments
    assert [c.tool for c in calls] == ["read_file", "run_tests"]
    # In the reply's order: reasoning first, then the text, then each call's start and arguments.
    kinds = [type(d).__name__ for d in deltas]
    assert kinds == [
        "ReasoningDelta",
        "TextDelta",
        "ToolCallStarted",
        "ToolArgumentsDelta",
        "ToolCallStarted",
        "ToolArgumentsDelta",
    ]


# --- the real proxy's answers for a mock entry (tests/fixtures/proxy_cuts/*-mock-whole) ------

FIXTURES = Path(__file__).parent.parent / "fixtures" / "proxy_cuts"


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("route", ROUTES)
def test_the_proxys_mock_entry_streams_its_text_on_both_routes(route: Route, mode: str) -> None:
    """LiteLLM answers /v1/messages with a whole JSON body, /chat/completions with SSE: both stream."""
    name = "chat" if route == "openai_chat" else "messages"
    fixture = json.loads((FIXTURES / f"{name}-mock-whole.json").read_text("utf-8"))
    if route == "anthropic_messages":
        assert fixture["content_type"] == "application/json"  # the case this handles

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200, headers={"content-type": fixture["content_type"]}, content=fixture["body"]
        )

    replay = _sync if mode == "sync" else _async
    deltas, events = replay(route, httpx.MockTransport(answer))
    text = "".join(d.text for d in deltas if isinstance(d, TextDelta))
    assert text == MOCK_TEXT
    assert events == [AssistantText(text=MOCK_TEXT, model="mock-rec")]
