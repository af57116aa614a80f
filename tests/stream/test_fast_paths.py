"""The fast paths of stream reading agree with the slow ones, and hold nothing back.

Events are cut at blank lines, text events that repeat the last one's envelope are read
without a parse (nisse_llm/stream/_envelope.py), and text is joined only when read
(nisse_llm/stream/_fragments.py). None of that may change a delta, delay one past the chunk
that completes its event, or let a changed envelope through unparsed.
"""

from __future__ import annotations

import json
import pickle
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nisse_llm.config.routing import Route
from nisse_llm.errors import LLMError
from nisse_llm.stream._envelope import Envelope
from nisse_llm.stream._sse import SSEDecoder
from nisse_llm.stream.deltas import (
    ReasoningDelta,
    ServerSentEvent,
    StreamDelta,
    TextDelta,
)
from nisse_llm.testing import Text, Thinking, Tokens, anthropic_message_body, openai_chat_body
from nisse_llm.testing.sse import encode_sse, split_bytes, sse_stream, stream_events
from tests.stream._support import accumulator

ROUTES: list[Route] = ["openai_chat", "anthropic_messages"]
_TEXT = st.text(st.characters(exclude_categories=["Cs"]), max_size=40)


def _body(route: Route, text: str, thinking: str = "") -> dict[str, Any]:
    parts: list[Any] = [Text(text)]
    if thinking:
        parts.insert(0, Thinking(thinking, "c2ln"))
    build = openai_chat_body if route == "openai_chat" else anthropic_message_body
    return build(parts, model="m", usage=Tokens(input=3, output=4))


def _slow(route: Route, events: list[ServerSentEvent]) -> list[StreamDelta]:
    """Deltas from feeding decoded events one by one (no byte fast paths, no envelope reuse)."""
    acc = accumulator(route)
    out: list[StreamDelta] = []
    for event in events:
        out.extend(acc.feed_event(event))
    return out


@pytest.mark.parametrize("route", ROUTES)
@settings(max_examples=150, deadline=None)
@given(text=_TEXT, thinking=_TEXT, size=st.integers(1, 9), cut=st.integers(1, 300))
def test_any_text_streamed_any_way_gives_the_same_deltas_and_reply(
    route: Route, text: str, thinking: str, size: int, cut: int
) -> None:
    """Quotes, backslashes, controls, non-ASCII, split anywhere: same deltas, same reply."""
    body = _body(route, text, thinking)
    events = stream_events(route, body, chunk_size=size)
    data = encode_sse(events)
    fast = accumulator(route)
    deltas: list[StreamDelta] = []
    for chunk in split_bytes(data, cut):
        deltas.extend(fast.feed(chunk))
    assert deltas == _slow(route, events)
    assert "".join(d.text for d in deltas if isinstance(d, TextDelta)) == text
    assert "".join(d.text for d in deltas if isinstance(d, ReasoningDelta)) == thinking
    slow = accumulator(route)
    for event in events:
        slow.feed_event(event)
    assert fast.finish() == slow.finish()


@pytest.mark.parametrize("route", ROUTES)
def test_each_delta_comes_with_the_chunk_that_completes_its_event(route: Route) -> None:
    """No batching: after every chunk, the text so far is that of the events complete in it."""
    text = "".join(f"w{i}-" for i in range(300))
    data = sse_stream(route, _body(route, text), chunk_size=5)
    acc = accumulator(route)
    seen = ""
    for end in range(0, len(data), 53):
        chunk = data[end : end + 53]
        seen += "".join(d.text for d in acc.feed(chunk) if isinstance(d, TextDelta))
        complete = data[: data.rfind(b"\n\n", 0, end + len(chunk)) + 2]
        expected = "".join(
            d.text for d in _slow(route, encode_and_decode(complete)) if isinstance(d, TextDelta)
        )
        assert seen == expected


def encode_and_decode(data: bytes) -> list[ServerSentEvent]:
    """The events whole in ``data``."""
    return SSEDecoder().feed(data)


def _chat(content: str, extra: str = "") -> bytes:
    return (
        b'data: {"id":"c","choices":[{"index":0,"delta":{"content":"'
        + content.encode()
        + b'"}'
        + extra.encode()
        + b"}]}\n\n"
    )


def test_a_changed_envelope_is_parsed_not_reused() -> None:
    """Once the envelope is learnt, anything but a plain run inside it goes through the parser."""
    acc = accumulator("openai_chat")
    stream = [
        _chat("one "),
        _chat("two "),
        # A quote ends the string early: the rest is structure the parser must see.
        b'data: {"id":"c","choices":[{"index":0,"delta":{"content":"x","role":"assistant"}}]}\n\n',
        _chat("three ", ',"finish_reason":"stop"'),
        _chat("\\u00e9 "),  # an escape: parsed, and decoded by the parser
        b"data: [DONE]\n\n",
    ]
    deltas = [d for chunk in stream for d in acc.feed(chunk)]
    assert [d.text for d in deltas if isinstance(d, TextDelta)] == [
        "one ",
        "two ",
        "x",
        "three ",
        "\u00e9 ",
    ]
    assert acc.finish().events[0].text == "one two xthree \u00e9 "  # type: ignore[union-attr]


def test_a_control_character_in_a_reused_envelope_is_still_malformed() -> None:
    """A raw newline inside a JSON string is invalid JSON whether or not the envelope is known."""
    acc = accumulator("openai_chat")
    acc.feed(_chat("one ") + _chat("two "))
    with pytest.raises(LLMError, match="malformed stream: an event is not JSON"):
        acc.feed(_chat("bad\tstring"))


def test_invalid_utf8_in_a_reused_envelope_reads_as_the_replacement_character() -> None:
    """As the SSE rules decode it: the fast path hands bytes that are not UTF-8 to the slow one."""
    acc = accumulator("openai_chat")
    acc.feed(_chat("one ") + _chat("two "))
    (delta,) = acc.feed(b'data: {"id":"c","choices":[{"index":0,"delta":{"content":"\xff!"}}]}\n\n')
    assert delta == TextDelta("\ufffd!", "one two \ufffd!")


def test_an_envelope_is_learnt_only_from_a_raw_unique_field() -> None:
    """Escaped values and repeated keys teach nothing; a few misses stop the learning."""
    envelope = Envelope()
    assert not envelope.learn(b'{"text":"a\\"b"}', b'"text":"', 'a"b')
    assert not envelope.learn(b'{"text":"a","text":"a"}', b'"text":"', "a")
    assert envelope.learn(b'{"x":1,"text":"ab"}', b'"text":"', "ab")
    assert envelope.match(b'{"x":1,"text":"cd"}') == "cd"
    assert envelope.match(b'{"x":2,"text":"cd"}') is None
    assert envelope.match(b'{"x":1,"text":"c"d"}') is None
    assert envelope.match(b'{"x":1,"text":""}') == ""
    assert envelope.match(b'{"x":1,"tex') is None
    spent = Envelope()
    for _ in range(4):
        spent.learn(b'{"text":"a\\n"}', b'"text":"', "a\n")
    assert spent.tries == 0


def test_text_deltas_behave_as_frozen_values() -> None:
    """Equality, hashing, repr, pickling and immutability, as the dataclasses they were."""
    acc = accumulator("openai_chat")
    deltas = acc.feed(_chat("ab") + _chat("cd"))
    assert deltas == [TextDelta("ab", "ab"), TextDelta("cd", "abcd")]
    assert deltas[1] != ReasoningDelta("cd", "abcd")
    assert hash(deltas[1]) == hash(TextDelta(text="cd", text_so_far="abcd"))
    assert repr(deltas[1]) == "TextDelta(text='cd', text_so_far='abcd')"
    assert pickle.loads(pickle.dumps(deltas[1])) == deltas[1]
    with pytest.raises(AttributeError):
        deltas[0].text = "x"  # type: ignore[misc]
    match deltas[0]:
        case TextDelta(text, so_far):
            assert (text, so_far) == ("ab", "ab")
    # Read out of order, each still has its own prefix.
    assert deltas[0].text_so_far == "ab"
    assert json.dumps([d.text_so_far for d in reversed(deltas)]) == '["abcd", "ab"]'
