"""The messages-route accumulator: block deltas, thinking with signatures, usage, and every failure."""

from __future__ import annotations

import json
from typing import Any

import pytest

from nisse_llm.errors import LLMError, ModelRefusal, TruncatedResponse, UpstreamUnavailable
from nisse_llm.events.canonical import AssistantText, Reasoning, ToolCall, Usage
from nisse_llm.stream.deltas import (
    PartialToolCall,
    ReasoningDelta,
    StreamInterrupted,
    TextDelta,
    ToolArgumentsDelta,
    ToolCallStarted,
)
from nisse_llm.testing.sse import split_bytes
from tests.stream._support import MODEL, anthropic_accumulator, feed_all

SERVED = "claude-sonnet-4-5-20250929"
SIGNATURE = "EqQBCkgIARABGAIiQL2cSig1Hk2YxWs0hPp0c5u0rKZ8f3Eb0qJ1m4A5QlDxv3+aZcU="


def event(data: dict[str, Any]) -> bytes:
    """One messages-route event, named as Anthropic names it."""
    return f"event: {data['type']}\ndata: {json.dumps(data)}\n\n".encode()


def start(usage: dict[str, Any] | None = None) -> bytes:
    """``message_start`` with an empty message and the input-side usage."""
    message: dict[str, Any] = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": SERVED,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage
        or {
            "input_tokens": 472,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 1024,
            "output_tokens": 1,
        },
    }
    return event({"type": "message_start", "message": message})


def block_start(index: int, block: dict[str, Any]) -> bytes:
    """``content_block_start`` for block ``index``."""
    return event({"type": "content_block_start", "index": index, "content_block": block})


def delta(index: int, body: dict[str, Any]) -> bytes:
    """``content_block_delta`` for block ``index``."""
    return event({"type": "content_block_delta", "index": index, "delta": body})


def block_stop(index: int) -> bytes:
    """``content_block_stop`` for block ``index``."""
    return event({"type": "content_block_stop", "index": index})


def end(stop_reason: str, output_tokens: int = 89, **extra: Any) -> list[bytes]:
    """``message_delta`` with the stop reason and final output tokens, then ``message_stop``."""
    return [
        event(
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": None, **extra},
                "usage": {"output_tokens": output_tokens},
            }
        ),
        event({"type": "message_stop"}),
    ]


PING = event({"type": "ping"})

THINKING_TEXT_TOOL = [
    start(),
    block_start(0, {"type": "thinking", "thinking": "", "signature": ""}),
    PING,
    delta(0, {"type": "thinking_delta", "thinking": "Read the "}),
    delta(0, {"type": "thinking_delta", "thinking": "test first."}),
    delta(0, {"type": "signature_delta", "signature": SIGNATURE}),
    block_stop(0),
    block_start(1, {"type": "text", "text": ""}),
    delta(1, {"type": "text_delta", "text": "I'll read "}),
    delta(1, {"type": "text_delta", "text": "it."}),
    block_stop(1),
    block_start(2, {"type": "tool_use", "id": "toolu_01", "name": "read_file", "input": {}}),
    delta(2, {"type": "input_json_delta", "partial_json": ""}),
    delta(2, {"type": "input_json_delta", "partial_json": '{"path": "tes'}),
    delta(2, {"type": "input_json_delta", "partial_json": 'ts/test_x.py"}'}),
    block_stop(2),
    block_start(3, {"type": "text", "text": ""}),
    delta(3, {"type": "text_delta", "text": "Then run it."}),
    block_stop(3),
    *end("tool_use"),
]


def test_deltas_name_blocks_as_a_ui_shows_them() -> None:
    """Reasoning, text per block (so far resets per block) and the call by its position in the reply."""
    acc = anthropic_accumulator()
    assert feed_all(acc, THINKING_TEXT_TOOL) == [
        ReasoningDelta("Read the ", "Read the "),
        ReasoningDelta("test first.", "Read the test first."),
        TextDelta("I'll read ", "I'll read "),
        TextDelta("it.", "I'll read it."),
        ToolCallStarted(0, "read_file"),
        ToolArgumentsDelta(0, '{"path": "tes'),
        ToolArgumentsDelta(0, 'ts/test_x.py"}'),
        TextDelta("Then run it.", "Then run it."),
    ]


def test_the_final_events_keep_the_thinking_signature_and_mint_the_call_id() -> None:
    """The reply holds the thinking block verbatim with its signature, the text, and a minted call."""
    acc = anthropic_accumulator()
    feed_all(acc, THINKING_TEXT_TOOL)
    completion = acc.finish()
    reasoning, text, call, tail = completion.events
    assert reasoning == Reasoning(
        model=MODEL,
        response_model=SERVED,
        block={"type": "thinking", "thinking": "Read the test first.", "signature": SIGNATURE},
    )
    assert text == AssistantText(text="I'll read it.", model=SERVED)
    assert isinstance(call, ToolCall)
    assert (call.tool, call.arguments) == ("read_file", {"path": "tests/test_x.py"})
    assert call.call_id != "toolu_01"
    assert tail == AssistantText(text="Then run it.", model=SERVED)
    assert completion.stop_reason == "tool_use"


def test_usage_merges_message_start_with_the_cumulative_message_delta() -> None:
    """Input and cache counts come from message_start, output from message_delta, later values winning."""
    acc = anthropic_accumulator()
    feed_all(
        acc,
        [
            start(),
            block_start(0, {"type": "text", "text": ""}),
            delta(0, {"type": "text_delta", "text": "ok"}),
            block_stop(0),
            event(
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                    "usage": {
                        "output_tokens": 89,
                        "input_tokens": 500,
                        "cache_read_input_tokens": None,
                    },
                }
            ),
            event({"type": "message_stop"}),
        ],
    )
    assert acc.finish().usage == Usage(input=500 + 1024, output=89, cache_read=1024, cache_write=0)
    assert acc.response_body()["usage"] == {
        "input_tokens": 500,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 1024,
        "output_tokens": 89,
    }


def test_redacted_thinking_arrives_whole() -> None:
    """A redacted_thinking block comes complete in its start event and is kept verbatim."""
    acc = anthropic_accumulator()
    block = {
        "type": "redacted_thinking",
        "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIw",
    }
    deltas = feed_all(acc, [start(), block_start(0, block), block_stop(0), *end("end_turn")])
    assert deltas == []
    assert acc.finish().events == [Reasoning(model=MODEL, response_model=SERVED, block=block)]


def test_a_tool_call_with_no_argument_fragments_has_empty_arguments() -> None:
    """A call whose only fragment is empty gets ``{}``, as its start event says."""
    acc = anthropic_accumulator()
    feed_all(
        acc,
        [
            start(),
            block_start(0, {"type": "tool_use", "id": "toolu_1", "name": "run_tests", "input": {}}),
            delta(0, {"type": "input_json_delta", "partial_json": ""}),
            block_stop(0),
            *end("tool_use"),
        ],
    )
    (call,) = acc.finish().events
    assert isinstance(call, ToolCall)
    assert call.arguments == {}


def test_pings_and_unknown_events_are_ignored() -> None:
    """Keep-alive pings, comments and event types this version does not know change nothing."""
    acc = anthropic_accumulator()
    deltas = feed_all(
        acc,
        [
            b": keep-alive\n\n",
            start(),
            PING,
            event({"type": "future_event", "detail": 1}),
            block_start(0, {"type": "text", "text": ""}),
            delta(0, {"type": "future_delta", "x": 1}),
            delta(0, {"type": "text_delta", "text": "ok"}),
            block_stop(0),
            *end("end_turn"),
        ],
    )
    assert deltas == [TextDelta("ok", "ok")]
    assert acc.finish().events == [AssistantText(text="ok", model=SERVED)]


def test_an_error_event_is_upstream_unavailable_with_the_partial_reply() -> None:
    """An ``error`` event mid-stream raises StreamInterrupted with the server's type and the text so far."""
    acc = anthropic_accumulator()
    feed_all(acc, THINKING_TEXT_TOOL[:9])
    error = event({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    with pytest.raises(StreamInterrupted) as caught:
        acc.feed(error)
    exc = caught.value
    assert isinstance(exc, UpstreamUnavailable)
    assert (exc.error_type, exc.server_message) == ("overloaded_error", "Overloaded")
    assert exc.partial.text == "I'll read "
    assert exc.partial.reasoning == "Read the test first."
    assert exc.partial.body["content"][0]["signature"] == SIGNATURE


def test_a_stream_without_message_stop_is_interrupted() -> None:
    """A stream that ends after message_delta but before message_stop is not a reply."""
    acc = anthropic_accumulator()
    feed_all(acc, THINKING_TEXT_TOOL[:-1])
    with pytest.raises(StreamInterrupted, match="ended before message_stop"):
        acc.finish()


def test_an_empty_stream_is_interrupted() -> None:
    """A connection that closes before any event is an interrupted stream, not an empty reply."""
    acc = anthropic_accumulator()
    with pytest.raises(StreamInterrupted, match="ended before message_start") as caught:
        acc.finish()
    assert caught.value.partial.events == 0


def test_a_cut_mid_arguments_keeps_the_raw_fragments() -> None:
    """A connection cut inside a tool call attaches the call's name and the JSON that arrived."""
    stream = b"".join(THINKING_TEXT_TOOL)
    acc = anthropic_accumulator()
    feed_all(acc, split_bytes(stream[: stream.index(b"ts/test_x.py")], 7))
    with pytest.raises(StreamInterrupted) as caught:
        acc.finish()
    partial = caught.value.partial
    assert partial.tool_calls == (PartialToolCall(0, "read_file", '{"path": "tes'),)
    assert partial.body["content"][2]["partial_json"] == '{"path": "tes'


def test_truncation_mid_arguments_is_truncated_response_not_bad_json() -> None:
    """Cut off at max_tokens inside a call's arguments, the reply fails as truncated, like complete()."""
    acc = anthropic_accumulator()
    feed_all(
        acc,
        [
            start(),
            block_start(0, {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {}}),
            delta(0, {"type": "input_json_delta", "partial_json": '{"path": "src/mo'}),
            block_stop(0),
            *end("max_tokens"),
        ],
    )
    with pytest.raises(TruncatedResponse):
        acc.finish()


@pytest.mark.parametrize(
    ("fragments", "message"),
    [
        (['{"path": ', '"a.py"'], "tool call 'read_file' had arguments that are not JSON"),
        (['["a.py"]'], "tool call 'read_file' had arguments that are list, not an object"),
    ],
)
def test_arguments_that_are_not_a_json_object_are_a_failed_turn(
    fragments: list[str], message: str
) -> None:
    """Fragments that do not assemble into an object raise LLMError, not an upstream failure."""
    acc = anthropic_accumulator()
    feed_all(
        acc,
        [
            start(),
            block_start(0, {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {}}),
            *(delta(0, {"type": "input_json_delta", "partial_json": f}) for f in fragments),
            block_stop(0),
            *end("tool_use"),
        ],
    )
    with pytest.raises(LLMError, match=message) as caught:
        acc.finish()
    assert not isinstance(caught.value, UpstreamUnavailable)


def test_a_refusal_stop_reason_is_model_refusal() -> None:
    """A stream that stops for ``refusal`` fails as complete() fails the same reply."""
    acc = anthropic_accumulator()
    feed_all(
        acc,
        [
            start(),
            block_start(0, {"type": "text", "text": ""}),
            delta(0, {"type": "text_delta", "text": "Hello.."}),
            block_stop(0),
            *end(
                "refusal",
                stop_details={"type": "refusal", "category": "cyber", "explanation": "no"},
            ),
        ],
    )
    with pytest.raises(ModelRefusal):
        acc.finish()


@pytest.mark.parametrize(
    ("events", "message"),
    [
        (
            [block_start(0, {"type": "text", "text": ""})],
            "content_block_start before message_start",
        ),
        ([start(), start()], "a second message_start"),
        (
            [start(), delta(4, {"type": "text_delta", "text": "x"})],
            "for a block that never started",
        ),
        (
            [start(), block_start(0, {"type": "text"}), block_start(0, {"type": "text"})],
            "a block started twice",
        ),
        (
            [
                start(),
                block_start(0, {"type": "text"}),
                delta(0, {"type": "text_delta", "text": 5}),
            ],
            "no text string",
        ),
        ([b"event: message_start\ndata: [1, 2]\n\n"], "an event is not an object"),
    ],
)
def test_a_malformed_stream_is_an_llm_error(events: list[bytes], message: str) -> None:
    """Events out of order or of the wrong shape are a bad 200 reply (LLMError), never a crash."""
    acc = anthropic_accumulator()
    with pytest.raises(LLMError, match=message) as caught:
        feed_all(acc, events)
    assert not isinstance(caught.value, UpstreamUnavailable)
