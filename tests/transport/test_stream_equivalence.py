"""stream() and complete() agree over every real 200 body, through a real loopback socket."""

from __future__ import annotations

import json
from typing import Any

import pytest

from nisse_llm.config.routing import Route
from nisse_llm.events.canonical import AssistantText, ToolCall, UserText
from nisse_llm.stream.deltas import TextDelta, ToolArgumentsDelta, ToolCallStarted
from tests.stream._support import load_body, route_of
from tests.stream.test_equivalence import REPLIES
from tests.transport.harness import MODEL, MODES, Mode, close, complete, make_client
from tests.transport.loopback import SleepLog
from tests.transport.stream_harness import normalised, read_stream, upstream
from tests.transport.stream_upstream import Body, StreamingUpstream

__all__ = ["upstream"]


async def _outcome(run: Any) -> tuple[str, Any]:
    try:
        events, usage = await run()
    except Exception as exc:  # any failure is part of the outcome being compared
        return ("raised", (type(exc), str(exc)))
    return ("returned", (normalised(events), usage))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("entry", REPLIES, ids=lambda entry: entry["name"])
async def test_a_streamed_reply_equals_the_same_reply_completed(
    upstream: StreamingUpstream, entry: dict[str, Any], mode: Mode
) -> None:
    """The server answers one body both ways; events (ids normalised) and usage, or the error, agree."""
    route = route_of(entry)
    body = load_body(entry["name"])
    upstream.plan(Body(body), Body(body, chunk_size=5, write_size=61))
    usages: list[Any] = []
    client = make_client(
        route, mode, upstream.base_url, sleep=SleepLog(), on_usage=lambda u, m: usages.append(u)
    )

    async def completed() -> tuple[Any, Any]:
        events = await complete(client, [UserText(text="hi")], None, MODEL[route])
        return events, client.last_usage

    async def streamed() -> tuple[Any, Any]:
        _, completion = await read_stream(client)
        assert client.last_usage == completion.usage
        return completion.events, completion.usage

    try:
        expected = await _outcome(completed)
        calls_before = len(usages)
        actual = await _outcome(streamed)
    finally:
        await close(client)
    assert actual == expected
    assert len(usages) == 2 * calls_before  # the callback ran once per successful call
    sent = [request.json() for request in upstream.requests]
    assert [request.get("stream") for request in sent] == [None, True]


@pytest.mark.parametrize("route", ["openai_chat", "anthropic_messages"])
async def test_the_streamed_body_is_the_completed_body_with_the_stream_fields_spliced_in(
    upstream: StreamingUpstream, route: Route
) -> None:
    """The stream request is complete()'s bytes plus stream (and include_usage on chat), nothing re-encoded."""
    body = load_body("oai_text_plain" if route == "openai_chat" else "ant_text_plain")
    upstream.plan(Body(body), Body(body))
    client = make_client(route, "sync", upstream.base_url, sleep=SleepLog())
    with client:
        client.complete([UserText(text="hi")], None, MODEL[route])
        await read_stream(client, [UserText(text="hi")])
    plain, streamed = (request.body for request in upstream.requests)
    suffix = {
        "openai_chat": b',"stream":true,"stream_options":{"include_usage":true}}',
        "anthropic_messages": b',"stream":true}',
    }[route]
    assert streamed == plain[:-1] + suffix
    assert upstream.requests[1].headers["accept"] == "text/event-stream"


@pytest.mark.parametrize("mode", MODES)
async def test_text_arrives_in_deltas_that_add_up_to_the_final_text(
    upstream: StreamingUpstream, mode: Mode
) -> None:
    """Each TextDelta carries a fragment and the text so far; together they are the AssistantText."""
    body = load_body("ant_text_plain")
    upstream.plan(Body(body, chunk_size=3))
    client = make_client("anthropic_messages", mode, upstream.base_url, sleep=SleepLog())
    try:
        deltas, completion = await read_stream(client)
    finally:
        await close(client)
    texts = [d for d in deltas if isinstance(d, TextDelta)]
    (final,) = completion.events
    assert isinstance(final, AssistantText)
    assert len(texts) == -(-len(final.text) // 3)
    assert "".join(d.text for d in texts) == texts[-1].text_so_far == final.text


@pytest.mark.parametrize("mode", MODES)
async def test_parallel_tool_calls_are_announced_then_their_arguments_stream_by_index(
    upstream: StreamingUpstream, mode: Mode
) -> None:
    """Interleaved chat tool-call deltas name each call once and rebuild each call's arguments."""
    body = load_body("oai_tool_calls_parallel")
    upstream.plan(Body(body, chunk_size=4))
    client = make_client("openai_chat", mode, upstream.base_url, sleep=SleepLog())
    try:
        deltas, completion = await read_stream(client)
    finally:
        await close(client)
    started = [d for d in deltas if isinstance(d, ToolCallStarted)]
    assert started == [
        ToolCallStarted(0, "GetWeatherArgs"),
        ToolCallStarted(1, "get_stock_price"),
    ]
    fragments = [d for d in deltas if isinstance(d, ToolArgumentsDelta)]
    assert [d.index for d in fragments[:4]] == [0, 1, 0, 1]  # interleaved, as streamed
    calls = [e for e in completion.events if isinstance(e, ToolCall)]
    assert len(calls) == 2
    for index, call in enumerate(calls):
        joined = "".join(d.partial_json for d in fragments if d.index == index)
        assert json.loads(joined) == call.arguments
