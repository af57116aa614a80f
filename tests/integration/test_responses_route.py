"""The Responses route through the real proxy: a three-turn tool loop with reasoning carried
from turn to turn, on OpenAI entries (the proxy passes ``/v1/responses`` through) and on
an Anthropic entry (the proxy bridges it to ``/v1/messages``), sync and async, streamed and
not; and the proxy's own bridge of a chat request with tools and an effort to the
upstream's ``/responses``, served by the testing kit.

Entries carry the real current names (the proxy's behaviour depends on them), with the
scripted upstream as their ``api_base``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from nisse_llm import (
    AsyncOpenAIResponsesClient,
    LiteLLMClient,
    OpenAIResponsesClient,
    RequestOptions,
)
from nisse_llm.events.canonical import (
    AssistantText,
    CanonicalEvent,
    Reasoning,
    ToolCall,
    ToolResult,
    ToolSpec,
    UserText,
)
from nisse_llm.testing import Script, ScriptedServer, Thinking, ToolUse, reply
from nisse_llm.testing.proxy import LiteLLMProxy, ProxyModel
from tests.integration.helpers import fresh_script, proxy_of
from tests.routes.openai_responses.judges import judge_request

pytestmark = pytest.mark.proxy

GPTS = ("gpt-6-astra", "gpt-5.6-sol")
CLAUDE = "claude-opus-4-8"
MODELS = [ProxyModel(name, "openai") for name in GPTS] + [ProxyModel(CLAUDE, "anthropic")]
LS = ToolSpec(
    name="ls",
    description="List a folder.",
    parameters={"type": "object", "properties": {"path": {"type": "string"}}},
)
OPTIONS = RequestOptions(reasoning="high", max_output_tokens=4096)


@pytest.fixture(scope="module")
def responses_proxy(upstream: ScriptedServer, litellm_bin: Path) -> Iterator[LiteLLMProxy]:
    """A proxy whose entries carry current OpenAI and Anthropic names."""
    with proxy_of(upstream, litellm_bin, MODELS) as running:
        yield running


@pytest.fixture
def script(upstream: ScriptedServer, responses_proxy: LiteLLMProxy) -> Iterator[Script]:
    with fresh_script(upstream) as script:
        yield script


class Sent(httpx.BaseTransport):
    """Forwards to the network and keeps each route request body the client sent."""

    def __init__(self) -> None:
        self._inner = httpx.HTTPTransport()
        self.bodies: list[Any] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/v1/responses"):  # not the model-info reads
            self.bodies.append(json.loads(request.read()))
        return self._inner.handle_request(request)

    def close(self) -> None:
        self._inner.close()


class AsyncSent(httpx.AsyncBaseTransport):
    """The async twin of `Sent`."""

    def __init__(self) -> None:
        self._inner = httpx.AsyncHTTPTransport()
        self.bodies: list[Any] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/v1/responses"):
            self.bodies.append(json.loads(await request.aread()))
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()


def _turns() -> tuple[Any, ...]:
    return (
        reply(Thinking("List the root first.", "gAAAA-one"), ToolUse("ls", {"path": "."})),
        reply(Thinking("Now the docs.", "gAAAA-two"), ToolUse("ls", {"path": "docs"})),
        reply("Two folders: . and docs."),
    )


async def _loop(client: Any, model: str, streamed: bool) -> list[CanonicalEvent]:
    """Three turns of a tool loop, each call answered, the log grown turn by turn."""
    log: list[CanonicalEvent] = [UserText(text="What folders are there?")]
    for _ in range(3):
        if isinstance(client, OpenAIResponsesClient):
            if streamed:
                with client.stream(log, [LS], model, options=OPTIONS) as stream:
                    for _delta in stream:
                        pass
                events = stream.events
            else:
                events = client.complete(log, [LS], model, options=OPTIONS)
        elif streamed:
            async with client.stream(log, [LS], model, options=OPTIONS) as stream:
                async for _delta in stream:
                    pass
            events = stream.events
        else:
            events = await client.complete(log, [LS], model, options=OPTIONS)
        log.extend(events)
        log.extend(
            ToolResult(call_id=e.call_id, output=f"listing of {e.arguments['path']}")
            for e in events
            if isinstance(e, ToolCall)
        )
    return log


async def _run(
    proxy: LiteLLMProxy, model: str, asynchronous: bool, streamed: bool
) -> tuple[list[CanonicalEvent], list[Any]]:
    if asynchronous:
        sent_async = AsyncSent()
        client_async = AsyncOpenAIResponsesClient(proxy.base_url, proxy.token, transport=sent_async)
        try:
            return await _loop(client_async, model, streamed), sent_async.bodies
        finally:
            await client_async.aclose()
    sent = Sent()
    with OpenAIResponsesClient(proxy.base_url, proxy.token, transport=sent) as client:
        return await _loop(client, model, streamed), sent.bodies


MODES = [(a, s) for a in (False, True) for s in (False, True)]
MODE_IDS = [f"{'async' if a else 'sync'}-{'stream' if s else 'complete'}" for a, s in MODES]


@pytest.mark.parametrize(("asynchronous", "streamed"), MODES, ids=MODE_IDS)
@pytest.mark.parametrize("model", GPTS)
async def test_an_openai_entry_carries_reasoning_through_a_three_turn_tool_loop(
    responses_proxy: LiteLLMProxy, script: Script, model: str, asynchronous: bool, streamed: bool
) -> None:
    """The proxy passes each request to the upstream's ``/responses`` as sent: stateless,
    asking for encrypted reasoning, one cache key, and each earlier reasoning item back
    byte for byte before the call it led to."""
    script.responses(*_turns())
    log, sent = await _run(responses_proxy, model, asynchronous, streamed)
    received = [request.json for request in script.requests]
    assert [request.path for request in script.requests] == ["/responses"] * 3
    assert received == sent  # passed through unchanged
    for body in received:
        assert body.get("stream", False) is streamed
        judge_request({key: value for key, value in body.items() if key != "stream"})
        assert body["store"] is False
        assert body["include"] == ["reasoning.encrypted_content"]
        assert body["reasoning"] == {"effort": "high", "summary": "auto"}
        assert "previous_response_id" not in body
    assert len({body["prompt_cache_key"] for body in received}) == 1
    third = [(i["type"], i.get("encrypted_content")) for i in received[2]["input"]]
    assert third == [
        ("message", None),
        ("reasoning", "gAAAA-one"),
        ("function_call", None),
        ("function_call_output", None),
        ("reasoning", "gAAAA-two"),
        ("function_call", None),
        ("function_call_output", None),
    ]
    items = [e.block for e in log if isinstance(e, Reasoning)]
    assert [item for item in received[2]["input"] if item["type"] == "reasoning"] == items
    assert log[-1] == AssistantText(text="Two folders: . and docs.", model=model)


@pytest.mark.parametrize(("asynchronous", "streamed"), MODES, ids=MODE_IDS)
async def test_an_anthropic_entry_carries_thinking_through_the_bridge(
    responses_proxy: LiteLLMProxy, script: Script, asynchronous: bool, streamed: bool
) -> None:
    """To a Claude entry the proxy bridges to ``/v1/messages``: the effort becomes adaptive
    thinking, and each reasoning item (the proxy packs the thinking block, signature and
    all, into ``encrypted_content``) goes back as the thinking block before its call."""
    script.messages(*_turns())
    log, sent = await _run(responses_proxy, CLAUDE, asynchronous, streamed)
    received = [request.json for request in script.requests]
    assert [request.path for request in script.requests] == ["/v1/messages"] * 3
    assert all("prompt_cache_key" not in body for body in sent)  # the proxy refuses it here
    assert len(sent) == 3
    for body in received:
        assert body["thinking"] == {"type": "adaptive", "display": "summarized"}
        assert body["output_config"] == {"effort": "high"}
    kinds = [
        [block["type"] for block in message["content"]]
        for message in received[2]["messages"]
        if message["role"] == "assistant"
    ]
    assert kinds == [["thinking", "tool_use"], ["thinking", "tool_use"]]
    signatures = [
        block["signature"]
        for message in received[2]["messages"]
        if message["role"] == "assistant"
        for block in message["content"]
        if block["type"] == "thinking"
    ]
    assert signatures == ["gAAAA-one", "gAAAA-two"]
    packed = [json.loads(e.block["encrypted_content"]) for e in log if isinstance(e, Reasoning)]
    assert [blocks[0]["signature"] for blocks in packed] == ["gAAAA-one", "gAAAA-two"]
    assert log[-1] == AssistantText(text="Two folders: . and docs.", model=CLAUDE)


@pytest.mark.parametrize("model", GPTS)
def test_the_kit_serves_the_proxys_bridge_of_a_chat_request(
    responses_proxy: LiteLLMProxy, script: Script, model: str
) -> None:
    """A chat request with tools and an effort to a current OpenAI entry reaches the
    upstream as ``POST /responses`` (answered by ``Script().responses``), without
    ``include`` or ``store: false``: the reasoning comes back as text only, never an item
    that could be replayed (what the Responses route fixes)."""
    script.responses(*_turns()[:1], _turns()[2])
    with LiteLLMClient(responses_proxy.base_url, responses_proxy.token) as client:
        log: list[CanonicalEvent] = [UserText(text="What folders are there?")]
        events = client.complete(log, [LS], model, options=OPTIONS)
        call = events[-1]
        assert isinstance(call, ToolCall)
        log += [*events, ToolResult(call_id=call.call_id, output="a.py")]
        log += client.complete(log, [LS], model, options=OPTIONS)
    received = [request.json for request in script.requests]
    assert [request.path for request in script.requests] == ["/responses"] * 2
    for body in received:
        assert body["reasoning"] == {"effort": "high"}
        assert "include" not in body
        assert "store" not in body
    assert [item["type"] for item in received[1]["input"]] == [
        "message",
        "function_call",
        "function_call_output",
    ]
    (reasoning, *_rest) = [e for e in log if isinstance(e, Reasoning)]
    assert reasoning.block == {
        "type": "reasoning_content",
        "reasoning_content": "List the root first.",
    }
    assert log[-1] == AssistantText(text="Two folders: . and docs.", model=model)
