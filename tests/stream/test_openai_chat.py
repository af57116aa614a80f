"""The chat-route accumulator: deltas, tool calls by index, usage, reasoning, and every failure."""

from __future__ import annotations

import functools
import json
import re
from typing import Any

import pytest

from nisse_llm.errors import LLMError, ModelRefusal, TruncatedResponse, UpstreamUnavailable
from nisse_llm.events.canonical import AssistantText, Reasoning, ToolCall, Usage
from nisse_llm.render.openai_chat import OpenAIChatRenderer
from nisse_llm.stream.deltas import (
    OpenAIChatStreamAccumulator,
    PartialToolCall,
    ReasoningDelta,
    RefusalDelta,
    StreamInterrupted,
    TextDelta,
    ToolArgumentsDelta,
    ToolCallStarted,
    accumulator_for,
)
from nisse_llm.testing.sse import split_bytes
from tests.stream._support import MODEL, feed_all, normalise, openai_accumulator, parse_body

SERVED = "gpt-4o-2024-08-06"
USAGE = {
    "prompt_tokens": 120,
    "completion_tokens": 30,
    "total_tokens": 150,
    "prompt_tokens_details": {"cached_tokens": 64},
}


def chunk(
    delta: dict[str, Any] | None = None, *, finish: str | None = None, index: int = 0
) -> bytes:
    """One ``chat.completion.chunk`` event as the proxy sends it (usage null until the end)."""
    data = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1767225600,
        "model": SERVED,
        "choices": [
            {"index": index, "delta": delta or {}, "logprobs": None, "finish_reason": finish}
        ],
        "usage": None,
    }
    return f"data: {json.dumps(data)}\n\n".encode()


def usage_chunk(usage: dict[str, Any] = USAGE) -> bytes:
    """The final usage chunk: empty ``choices``, as ``stream_options.include_usage`` asks."""
    data = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "model": SERVED,
        "choices": [],
        "usage": usage,
    }
    return f"data: {json.dumps(data)}\n\n".encode()


DONE = b"data: [DONE]\n\n"
ROLE = chunk({"role": "assistant", "content": None, "refusal": None})


def call_start(index: int, call_id: str, name: str) -> bytes:
    """A tool call's first delta: the only one with its id and name."""
    return chunk(
        {
            "tool_calls": [
                {
                    "index": index,
                    "id": call_id,
                    "type": "function",
                    "function": {"name": name, "arguments": ""},
                }
            ]
        }
    )


def call_args(index: int, fragment: str) -> bytes:
    """A later delta of a tool call: its index and an arguments fragment, nothing else."""
    return chunk({"tool_calls": [{"index": index, "function": {"arguments": fragment}}]})


INTERLEAVED = [
    ROLE,
    call_start(0, "call_a", "read_file"),
    call_start(1, "call_b", "run_tests"),
    call_args(1, '{"sel'),
    call_args(0, '{"path": '),
    call_args(1, 'ector": "unit"}'),
    call_args(0, '"a.py"}'),
    chunk(finish="tool_calls"),
    usage_chunk(),
    DONE,
]


def test_interleaved_tool_calls_are_assembled_by_index() -> None:
    """Fragments of two calls interleaved by index assemble into each call's own arguments."""
    acc = openai_accumulator()
    deltas = feed_all(acc, INTERLEAVED)
    assert deltas == [
        ToolCallStarted(0, "read_file"),
        ToolCallStarted(1, "run_tests"),
        ToolArgumentsDelta(1, '{"sel'),
        ToolArgumentsDelta(0, '{"path": '),
        ToolArgumentsDelta(1, 'ector": "unit"}'),
        ToolArgumentsDelta(0, '"a.py"}'),
    ]
    completion = acc.finish()
    first, second = completion.events
    assert isinstance(first, ToolCall)
    assert isinstance(second, ToolCall)
    assert (first.tool, first.arguments) == ("read_file", {"path": "a.py"})
    assert (second.tool, second.arguments) == ("run_tests", {"selector": "unit"})
    assert first.call_id != second.call_id
    assert not {first.call_id, second.call_id} & {
        "call_a",
        "call_b",
    }  # minted, never the provider's
    assert completion.stop_reason == "tool_calls"


def test_calls_are_ordered_by_index_not_by_arrival() -> None:
    """A call whose index is lower comes first in the reply even when it starts streaming later."""
    acc = openai_accumulator()
    feed_all(
        acc,
        [
            ROLE,
            call_start(1, "call_b", "run_tests"),
            call_args(1, "{}"),
            call_start(0, "call_a", "read_file"),
            call_args(0, '{"path": "b.py"}'),
            chunk(finish="tool_calls"),
            DONE,
        ],
    )
    assert [event.tool for event in acc.finish().events if isinstance(event, ToolCall)] == [
        "read_file",
        "run_tests",
    ]


def test_the_streamed_reply_is_what_parse_makes_of_the_same_body() -> None:
    """Interleaved calls give exactly the events and usage of the equivalent non-streaming body."""
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1767225600,
        "model": SERVED,
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": None,
                    "refusal": None,
                    "tool_calls": [
                        {
                            "id": "call_a",
                            "type": "function",
                            "function": {"name": "read_file", "arguments": '{"path": "a.py"}'},
                        },
                        {
                            "id": "call_b",
                            "type": "function",
                            "function": {"name": "run_tests", "arguments": '{"selector": "unit"}'},
                        },
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ],
        "usage": USAGE,
    }
    acc = openai_accumulator()
    feed_all(acc, INTERLEAVED)
    assert normalise(acc.finish()) == normalise(parse_body("openai_chat", body))


def test_text_deltas_carry_the_text_so_far() -> None:
    """Each text delta says what arrived and the whole text so far; empty fragments yield nothing."""
    acc = openai_accumulator()
    deltas = feed_all(
        acc,
        [
            chunk({"role": "assistant", "content": ""}),
            chunk({"content": "Hel"}),
            chunk({"content": "lo"}),
            chunk({"content": ""}),
            chunk({"content": " wörld"}),
            chunk(finish="stop"),
            usage_chunk(),
            DONE,
        ],
    )
    assert deltas == [
        TextDelta("Hel", "Hel"),
        TextDelta("lo", "Hello"),
        TextDelta(" wörld", "Hello wörld"),
    ]
    completion = acc.finish()
    assert completion.events == [AssistantText(text="Hello wörld", model=SERVED)]
    assert completion.response_model == SERVED


def test_usage_comes_from_the_final_chunk_with_empty_choices() -> None:
    """The usage chunk after the finish chunk sets the reply's usage, cached tokens included."""
    acc = openai_accumulator()
    feed_all(acc, [chunk({"content": "ok"}), chunk(finish="stop"), usage_chunk(), DONE])
    assert acc.finish().usage == Usage(input=120, output=30, cache_read=64, cache_write=0)


def test_a_stream_without_a_usage_chunk_has_zero_usage() -> None:
    """A server that ignores include_usage still gives a reply, with zero usage."""
    acc = openai_accumulator()
    feed_all(acc, [chunk({"content": "ok"}), chunk(finish="stop"), DONE])
    assert acc.finish().usage == Usage()


def test_litellm_thinking_fragments_become_whole_blocks_with_signatures() -> None:
    """LiteLLM's indexed thinking fragments join into the blocks complete() returns, signature intact."""
    acc = openai_accumulator()
    deltas = feed_all(
        acc,
        [
            ROLE,
            chunk(
                {
                    "reasoning_content": "Read the ",
                    "thinking_blocks": [{"type": "thinking", "thinking": "Read the ", "index": 0}],
                }
            ),
            chunk(
                {
                    "reasoning_content": "test first.",
                    "thinking_blocks": [
                        {"type": "thinking", "thinking": "test first.", "index": 0}
                    ],
                }
            ),
            chunk(
                {
                    "reasoning_content": "",
                    "thinking_blocks": [
                        {"type": "thinking", "thinking": "", "signature": "EqQBsig==", "index": 0}
                    ],
                }
            ),
            chunk(
                {"thinking_blocks": [{"type": "redacted_thinking", "data": "EmwKAh==", "index": 1}]}
            ),
            chunk({"content": "Reading it."}),
            chunk(finish="stop"),
            DONE,
        ],
    )
    assert deltas == [
        ReasoningDelta("Read the ", "Read the "),
        ReasoningDelta("test first.", "Read the test first."),
        TextDelta("Reading it.", "Reading it."),
    ]
    events = acc.finish().events
    assert events == [
        Reasoning(
            model=MODEL,
            response_model=SERVED,
            block={
                "type": "thinking",
                "thinking": "Read the test first.",
                "signature": "EqQBsig==",
            },
        ),
        Reasoning(
            model=MODEL,
            response_model=SERVED,
            block={"type": "redacted_thinking", "data": "EmwKAh=="},
        ),
        AssistantText(text="Reading it.", model=SERVED),
    ]


def test_unindexed_thinking_fragments_join_until_a_signature() -> None:
    """Without indexes, thinking text joins the open block; after a signature a new block starts."""
    acc = openai_accumulator()
    feed_all(
        acc,
        [
            chunk({"thinking_blocks": [{"type": "thinking", "thinking": "one "}]}),
            chunk(
                {"thinking_blocks": [{"type": "thinking", "thinking": "two", "signature": "s1"}]}
            ),
            chunk({"thinking_blocks": [{"type": "thinking", "thinking": "three"}]}),
            chunk({"thinking_blocks": [{"type": "thinking", "thinking": "", "signature": "s2"}]}),
            chunk(finish="stop"),
            DONE,
        ],
    )
    assert acc.response_body()["choices"][0]["message"]["thinking_blocks"] == [
        {"type": "thinking", "thinking": "one two", "signature": "s1"},
        {"type": "thinking", "thinking": "three", "signature": "s2"},
    ]


def test_a_refusal_streams_as_refusal_deltas_and_ends_in_model_refusal() -> None:
    """Refusal text is shown as it arrives, and the reply fails as complete() fails it."""
    acc = openai_accumulator()
    deltas = feed_all(
        acc,
        [
            ROLE,
            chunk({"refusal": "I can't"}),
            chunk({"refusal": " help."}),
            chunk(finish="stop"),
            DONE,
        ],
    )
    assert deltas == [RefusalDelta("I can't", "I can't"), RefusalDelta(" help.", "I can't help.")]
    with pytest.raises(ModelRefusal) as caught:
        acc.finish()
    assert caught.value.server_message == "I can't help."


def test_truncation_raises_truncated_response_at_the_end() -> None:
    """A reply cut at the ceiling streams its deltas, then fails with TruncatedResponse."""
    acc = openai_accumulator()
    deltas = feed_all(
        acc, [ROLE, chunk({"content": '{"'}), chunk(finish="length"), usage_chunk(), DONE]
    )
    assert deltas == [TextDelta('{"', '{"')]
    with pytest.raises(TruncatedResponse):
        acc.finish()


def test_the_ceiling_reaches_the_parser_for_the_truncation_message() -> None:
    """A parser bound to the request's ceiling names it in the error, as complete() would."""
    acc = accumulator_for(
        "openai_chat",
        requested_model=MODEL,
        parse=functools.partial(OpenAIChatRenderer().parse, max_tokens=4096),
    )
    assert isinstance(acc, OpenAIChatStreamAccumulator)
    feed_all(acc, [ROLE, chunk({"content": "{"}), chunk(finish="length"), DONE])
    with pytest.raises(TruncatedResponse, match="4096"):
        acc.finish()


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        # The parser words it; the call's name and what was wrong must be in it.
        ('{"path": "a.py"', "'read_file'.*non-JSON"),
        ('["a.py"]', "'read_file'.*list"),
    ],
)
def test_arguments_that_are_not_a_json_object_are_a_failed_turn(
    arguments: str, message: str
) -> None:
    """Arguments that do not assemble into an object raise LLMError, not an upstream failure."""
    acc = openai_accumulator()
    feed_all(
        acc,
        [
            ROLE,
            call_start(0, "call_a", "read_file"),
            call_args(0, arguments),
            chunk(finish="tool_calls"),
            DONE,
        ],
    )
    with pytest.raises(LLMError, match=message) as caught:
        acc.finish()
    assert not isinstance(caught.value, UpstreamUnavailable)


def test_an_error_chunk_mid_stream_is_upstream_unavailable_with_the_partial_reply() -> None:
    """LiteLLM's ``{"error": ...}`` chunk ends the stream as StreamInterrupted, text so far attached."""
    acc = openai_accumulator()
    feed_all(acc, [ROLE, chunk({"content": "Half an ans"})])
    error = {
        "error": {"message": "upstream overloaded", "type": "None", "param": None, "code": "503"}
    }
    with pytest.raises(StreamInterrupted) as caught:
        acc.feed(f"data: {json.dumps(error)}\n\n".encode())
    exc = caught.value
    assert isinstance(exc, UpstreamUnavailable)
    assert exc.error_type is None  # LiteLLM's "None" string means no type
    assert exc.server_message == "upstream overloaded"
    assert exc.partial.text == "Half an ans"
    assert exc.partial.events == 3
    assert "the server sent an error" in str(exc)


def test_a_stream_without_done_is_interrupted() -> None:
    """Finish and usage chunks without the closing [DONE] are not a complete reply."""
    acc = openai_accumulator()
    feed_all(acc, [ROLE, chunk({"content": "All done"}), chunk(finish="stop"), usage_chunk()])
    with pytest.raises(StreamInterrupted, match="ended before \\[DONE\\]") as caught:
        acc.finish()
    assert caught.value.partial.text == "All done"


def test_done_without_a_finish_reason_is_interrupted() -> None:
    """[DONE] after a reply that never said why it stopped is a broken stream, not a success."""
    acc = openai_accumulator()
    feed_all(acc, [ROLE, chunk({"content": "Half"}), DONE])
    with pytest.raises(StreamInterrupted, match="without a finish_reason for choice 0"):
        acc.finish()


def test_a_connection_cut_mid_call_keeps_the_arguments_so_far() -> None:
    """Bytes that stop mid-stream (even mid-event) interrupt it, with the partial call attached."""
    stream = b"".join(INTERLEAVED)
    cut_at = stream.index(b"a.py")  # inside the event that would finish call 0
    acc = openai_accumulator()
    feed_all(acc, split_bytes(stream[:cut_at], 10))
    with pytest.raises(StreamInterrupted) as caught:
        acc.finish()
    assert caught.value.partial.tool_calls == (
        PartialToolCall(0, "read_file", '{"path": '),
        PartialToolCall(1, "run_tests", '{"selector": "unit"}'),
    )


def test_a_transport_failure_becomes_stream_interrupted() -> None:
    """``interrupted()`` builds the exception a client raises when the connection breaks or stalls."""
    acc = openai_accumulator()
    feed_all(acc, [ROLE, chunk({"content": "so far"})])
    exc = acc.interrupted("no bytes for 30 s (idle timeout)")
    assert isinstance(exc, UpstreamUnavailable)
    assert str(exc) == (
        f"openai_chat stream for {MODEL} interrupted: no bytes for 30 s (idle timeout) "
        "(after 2 events, 6 characters of text)"
    )
    assert exc.partial.body["choices"][0]["message"]["content"] == "so far"


def test_an_event_that_is_not_json_is_a_malformed_reply() -> None:
    """A data line that is not JSON is an LLMError (a bad 200 body), never a decoding crash."""
    acc = openai_accumulator()
    with pytest.raises(LLMError, match="malformed stream: an event is not JSON") as caught:
        acc.feed(b"data: {not json\n\n")
    assert not isinstance(caught.value, UpstreamUnavailable)


@pytest.mark.parametrize(
    ("deltas", "message"),
    [
        (
            [{"role": "assistant", "content": "text"}, {"content": [{"type": "text"}]}],
            "content mixes text and parts",
        ),
        (
            [{"content": [{"type": "text", "text": "a"}]}, {"role": "assistant", "content": "b"}],
            "content mixes parts and text",
        ),
        ([{"reasoning_content": ["not", "text"]}], "reasoning_content is not a string"),
        ([{"role": "assistant", "content": 7}], "content is not a string"),
    ],
)
def test_content_of_two_shapes_is_a_malformed_reply(
    deltas: list[dict[str, Any]], message: str
) -> None:
    """A choice's content comes as text or as parts, never both; reasoning only as text."""
    acc = openai_accumulator()
    with pytest.raises(LLMError, match=f"malformed stream: {message}") as caught:
        feed_all(acc, [chunk(delta) for delta in deltas])
    assert not isinstance(caught.value, UpstreamUnavailable)


def test_text_and_reasoning_beside_other_fields_carry_their_text_so_far() -> None:
    """Text or reasoning in a delta with other fields (the general path, not the text-only
    one) grows the same way: one delta per fragment, none for an empty one."""
    acc = openai_accumulator()
    deltas = feed_all(
        acc,
        [
            chunk({"role": "assistant", "content": "", "reasoning_content": "Think"}),
            chunk({"role": "assistant", "content": "An", "reasoning_content": "ing."}),
            chunk({"role": "assistant", "content": "swer", "reasoning_content": ""}),
            chunk(finish="stop"),
            DONE,
        ],
    )
    assert [(type(d).__name__, d.text, d.text_so_far) for d in deltas] == [
        ("ReasoningDelta", "Think", "Think"),
        ("TextDelta", "An", "An"),
        ("ReasoningDelta", "ing.", "Thinking."),
        ("TextDelta", "swer", "Answer"),
    ]


def test_bytes_after_done_are_ignored() -> None:
    """Once [DONE] arrives the reply is complete; anything after it changes nothing."""
    acc = openai_accumulator()
    feed_all(acc, [chunk({"content": "ok"}), chunk(finish="stop"), DONE])
    assert acc.done
    assert acc.feed(chunk({"content": "late"}) + b"data: {broken\n\n") == []
    assert acc.finish().events == [AssistantText(text="ok", model=SERVED)]


def test_a_call_whose_name_repeats_on_every_delta_is_not_doubled() -> None:
    """Ids and names are taken once: a server repeating them on later deltas does not garble them."""
    acc = openai_accumulator()
    repeated = {"index": 0, "id": "call_a", "type": "function"}
    feed_all(
        acc,
        [
            chunk(
                {
                    "tool_calls": [
                        {**repeated, "function": {"name": "read_file", "arguments": '{"path"'}}
                    ]
                }
            ),
            chunk(
                {
                    "tool_calls": [
                        {**repeated, "function": {"name": "read_file", "arguments": ': "x"}'}}
                    ]
                }
            ),
            chunk(finish="tool_calls"),
            DONE,
        ],
    )
    call = acc.response_body()["choices"][0]["message"]["tool_calls"][0]
    assert call == {
        "id": "call_a",
        "type": "function",
        "function": {"name": "read_file", "arguments": '{"path": "x"}'},
    }


def test_minted_ids_follow_the_canonical_pattern() -> None:
    """Streamed tool calls get locally minted ids in the canonical pattern, like complete()."""
    acc = openai_accumulator()
    feed_all(acc, INTERLEAVED)
    for event in acc.finish().events:
        assert isinstance(event, ToolCall)
        assert re.fullmatch(r"[A-Za-z0-9_-]{1,40}", event.call_id)
