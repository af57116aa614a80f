"""nisse_llm.testing.sse: replies re-told as realistic streams, whole and broken."""

from __future__ import annotations

import json
from typing import Any

import pytest

from nisse_llm.stream.deltas import ServerSentEvent, StreamInterrupted
from nisse_llm.testing.sse import (
    anthropic_messages_events,
    cut,
    encode_sse,
    openai_chat_events,
    split_bytes,
    sse_stream,
    with_error_event,
    without_final_event,
)
from tests.stream._support import accumulator, feed_all, load_body


def payloads(events: list[ServerSentEvent]) -> list[Any]:
    """The JSON data of each event (``[DONE]`` kept as the string)."""
    return [event.data if event.data == "[DONE]" else json.loads(event.data) for event in events]


def test_chat_tool_calls_stream_with_id_and_name_only_on_their_first_delta() -> None:
    """Each call's id and name ride its first delta only; later ones carry index and arguments."""
    body = load_body("oai_tool_calls_parallel")
    events = payloads(openai_chat_events(body, chunk_size=10))
    calls = [
        call
        for data in events[:-1]
        for choice in data["choices"]
        for call in choice["delta"].get("tool_calls") or ()
    ]
    for index in (0, 1):
        mine = [call for call in calls if call["index"] == index]
        original = body["choices"][0]["message"]["tool_calls"][index]
        assert mine[0]["id"] == original["id"]
        assert mine[0]["function"]["name"] == original["function"]["name"]
        assert all("id" not in call and "name" not in call["function"] for call in mine[1:])
        assert all(len(call["function"]["arguments"]) <= 10 for call in mine)


def test_chat_tool_calls_interleave_by_index() -> None:
    """Two calls' fragments alternate, as providers that stream calls in parallel send them."""
    events = payloads(openai_chat_events(load_body("oai_tool_calls_parallel"), chunk_size=10))
    order = [
        call["index"]
        for data in events[:-1]
        for choice in data["choices"]
        for call in choice["delta"].get("tool_calls") or ()
    ]
    assert order[:4] == [0, 1, 0, 1]


def test_a_chat_stream_ends_with_finish_then_usage_then_done() -> None:
    """The finish chunk, then usage with empty choices, then ``[DONE]``: include_usage's order."""
    body = load_body("oai_text_plain")
    *_, finish, usage, done = payloads(openai_chat_events(body))
    assert finish["choices"][0]["finish_reason"] == "stop"
    assert finish["usage"] is None
    assert usage["choices"] == []
    assert usage["usage"] == body["usage"]
    assert done == "[DONE]"


def test_a_messages_stream_has_every_event_kind_in_order() -> None:
    """message_start with one output token, a ping, thinking with its signature delta, message_delta, stop."""
    body = load_body("ant_thinking_text_tool_use")
    events = anthropic_messages_events(body, chunk_size=50)
    kinds = [event.event for event in events]
    assert kinds[:3] == ["message_start", "content_block_start", "ping"]
    assert kinds[-2:] == ["message_delta", "message_stop"]
    data = payloads(events)
    assert [d["type"] for d in data] == kinds
    assert data[0]["message"]["usage"]["output_tokens"] == 1
    assert data[0]["message"]["content"] == []
    assert data[-2]["usage"] == {"output_tokens": body["usage"]["output_tokens"]}
    assert data[-2]["delta"]["stop_reason"] == "tool_use"
    deltas = [d["delta"]["type"] for d in data if d["type"] == "content_block_delta"]
    assert {"thinking_delta", "signature_delta", "text_delta", "input_json_delta"} <= set(deltas)


def test_encode_sse_writes_names_ids_multiline_data_and_keepalives() -> None:
    """Events encode with their name (unless ``message``), id, one data line per line, and a blank line."""
    events = [ServerSentEvent(data="a\nb", event="delta", id="7"), ServerSentEvent(data="[DONE]")]
    assert encode_sse(events, newline="\r\n", comments=True) == (
        b": keep-alive\r\nevent: delta\r\nid: 7\r\ndata: a\r\ndata: b\r\n\r\n"
        b": keep-alive\r\ndata: [DONE]\r\n\r\n"
    )


def test_text_is_cut_into_fragments_of_chunk_size() -> None:
    """``chunk_size`` bounds each text fragment, so a reply of n characters makes about n/size deltas."""
    body = load_body("oai_text_plain")
    text = body["choices"][0]["message"]["content"]
    fragments = [
        choice["delta"]["content"]
        for data in payloads(openai_chat_events(body, chunk_size=7))[:-1]
        for choice in data["choices"]
        if choice["delta"].get("content")
    ]
    assert "".join(fragments) == text
    assert max(len(f) for f in fragments) == 7
    assert len(fragments) == -(-len(text) // 7)


def test_split_bytes_and_cut_cut_anywhere() -> None:
    """``split_bytes`` keeps every byte in order; ``cut`` keeps a prefix, inside a character too."""
    data = "data: 日本\n\n".encode()
    assert b"".join(split_bytes(data, 4)) == data
    assert [len(c) for c in split_bytes(data, 4)] == [4, 4, 4, 2]
    assert cut(data, at=7) == data[:7]


@pytest.mark.parametrize(
    ("route", "name"),
    [("openai_chat", "oai_text_plain"), ("anthropic_messages", "ant_text_plain")],
)
def test_a_stream_without_its_final_event_is_interrupted(route: Any, name: str) -> None:
    """``without_final_event`` drops ``[DONE]`` or ``message_stop``, which the accumulator refuses."""
    events = (openai_chat_events if route == "openai_chat" else anthropic_messages_events)(
        load_body(name)
    )
    acc = accumulator(route)
    feed_all(acc, [encode_sse(without_final_event(events))])
    with pytest.raises(StreamInterrupted, match="ended before"):
        acc.finish()


@pytest.mark.parametrize(
    ("route", "name", "error_type"),
    [
        ("openai_chat", "oai_text_plain", "overloaded_error"),
        ("anthropic_messages", "ant_text_plain", "overloaded_error"),
    ],
)
def test_with_error_event_ends_the_stream_as_the_route_does(
    route: Any, name: str, error_type: str
) -> None:
    """The error event for each route is recognised, typed and carries the message."""
    events = (openai_chat_events if route == "openai_chat" else anthropic_messages_events)(
        load_body(name), chunk_size=5
    )
    broken = with_error_event(route, events, after=4, message="Overloaded")
    assert len(broken) == 5
    acc = accumulator(route)
    with pytest.raises(StreamInterrupted) as caught:
        feed_all(acc, [encode_sse(broken)])
    assert (caught.value.error_type, caught.value.server_message) == (error_type, "Overloaded")


@pytest.mark.parametrize(
    ("route", "name", "stop_reason"),
    [
        ("openai_chat", "oai_tool_call_single", "tool_calls"),
        ("anthropic_messages", "ant_tool_use_single", "tool_use"),
    ],
)
def test_a_stream_cut_anywhere_never_passes_for_a_reply(
    route: Any, name: str, stop_reason: str
) -> None:
    """Every proper prefix of a stream fails as interrupted; only the whole stream is a reply."""
    stream = sse_stream(route, load_body(name), chunk_size=20)
    # Every event boundary (and a byte either side of it), plus a stride through the rest.
    ends = [i for i in range(len(stream)) if stream.startswith(b"\n\n", i)]
    cuts = {at + shift for at in ends for shift in (0, 1, 2)} | set(range(0, len(stream), 7))
    for at in sorted(point for point in cuts if point < len(stream)):
        acc = accumulator(route)
        feed_all(acc, [cut(stream, at=at)])
        with pytest.raises(StreamInterrupted):
            acc.finish()
    acc = accumulator(route)
    feed_all(acc, [stream])
    assert acc.finish().stop_reason == stop_reason


@pytest.mark.parametrize("route", ["openai_chat", "anthropic_messages"])
def test_an_error_event_that_is_not_json_still_ends_the_stream(route: Any) -> None:
    """``event: error`` with plain-text data is an upstream failure carrying the text."""
    acc = accumulator(route)
    with pytest.raises(StreamInterrupted) as caught:
        feed_all(acc, [b"event: error\ndata: Internal Server Error\n\n"])
    assert (caught.value.error_type, caught.value.server_message) == (
        None,
        "Internal Server Error",
    )
