"""The incremental SSE decoder: WHATWG parsing rules, and the same events however bytes are split."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nisse_llm.stream.deltas import ServerSentEvent, SSEDecoder
from nisse_llm.testing.sse import encode_sse, split_bytes, sse_stream
from tests.stream._support import load_body


def decode(*chunks: bytes) -> list[ServerSentEvent]:
    """Every event a fresh decoder yields for ``chunks``."""
    decoder = SSEDecoder()
    events: list[ServerSentEvent] = []
    for chunk in chunks:
        events.extend(decoder.feed(chunk))
    decoder.close()
    return events


def split_at(data: bytes, cuts: list[int]) -> list[bytes]:
    """``data`` cut at the given offsets (in any order, repeats allowed)."""
    points = [0, *sorted(cuts), len(data)]
    return [data[a:b] for a, b in itertools.pairwise(points)]


def test_an_event_is_dispatched_at_its_blank_line() -> None:
    """Named events come out with their type and data once the blank line arrives, not before."""
    decoder = SSEDecoder()
    assert decoder.feed(b"event: ping\ndata: {}\n") == []
    assert decoder.pending
    assert decoder.feed(b"\n") == [ServerSentEvent(data="{}", event="ping")]
    assert not decoder.pending


def test_an_unnamed_event_has_type_message() -> None:
    """An event without an ``event`` field has the type ``message``."""
    assert decode(b"data: [DONE]\n\n") == [ServerSentEvent(data="[DONE]", event="message")]


def test_lf_crlf_and_cr_line_ends_are_equivalent() -> None:
    """LF, CRLF and a lone CR each end a line, mixed freely in one stream."""
    expected = [ServerSentEvent(data="a", event="x"), ServerSentEvent(data="b")]
    assert decode(b"event: x\ndata: a\n\ndata: b\n\n") == expected
    assert decode(b"event: x\r\ndata: a\r\n\r\ndata: b\r\n\r\n") == expected
    assert decode(b"event: x\rdata: a\r\rdata: b\r\r") == expected
    assert decode(b"event: x\r\ndata: a\r\rdata: b\n\r\n") == expected


def test_a_crlf_split_across_chunks_is_one_line_end() -> None:
    """A CR ending one chunk and an LF starting the next make one line end, not two."""
    assert decode(b"data: a\r", b"\ndata: b\r", b"\n\r", b"\n") == [ServerSentEvent(data="a\nb")]


def test_comment_lines_are_ignored() -> None:
    """Lines starting with a colon are comments (keep-alives) and produce nothing."""
    assert decode(b": keep-alive\n\n:another\ndata: x\n: inside\n\n") == [ServerSentEvent(data="x")]


def test_data_lines_join_with_newlines() -> None:
    """Several data lines make one event whose data joins them with LF."""
    assert decode(b"data: first\ndata:second\ndata\ndata:  indented\n\n") == [
        ServerSentEvent(data="first\nsecond\n\n indented")
    ]


def test_only_one_space_after_the_colon_is_removed() -> None:
    """The value starts after the colon and at most one space."""
    assert decode(b"data:no-space\n\ndata:   three\n\n") == [
        ServerSentEvent(data="no-space"),
        ServerSentEvent(data="  three"),
    ]


def test_an_event_without_data_is_not_dispatched() -> None:
    """An event type with no data lines is dropped, and does not leak into the next event."""
    assert decode(b"event: lonely\n\ndata: x\n\n") == [ServerSentEvent(data="x")]


def test_an_empty_data_line_dispatches_empty_data() -> None:
    """``data:`` with nothing after it is still data: an event with empty data."""
    assert decode(b"data:\n\n") == [ServerSentEvent(data="")]


def test_the_last_event_id_persists_and_a_nul_id_is_ignored() -> None:
    """``id`` applies to its event and later ones; an id containing NUL is ignored."""
    assert decode(b"id: 7\ndata: a\n\ndata: b\n\nid: 8\x00\ndata: c\n\nid\ndata: d\n\n") == [
        ServerSentEvent(data="a", id="7"),
        ServerSentEvent(data="b", id="7"),
        ServerSentEvent(data="c", id="7"),
        ServerSentEvent(data="d", id=""),
    ]


def test_retry_is_read_only_when_it_is_digits() -> None:
    """``retry`` sets the reconnection time only from ASCII digits; unknown fields do nothing."""
    decoder = SSEDecoder()
    assert decoder.feed(b"retry: 1500\nfoo: bar\n\n") == []
    assert decoder.retry_ms == 1500
    decoder.feed(b"retry: soon\n\n")
    assert decoder.retry_ms == 1500


def test_an_unterminated_event_at_the_end_is_discarded() -> None:
    """Data with no blank line after it is not an event, even after close."""
    decoder = SSEDecoder()
    assert decoder.feed(b"data: complete\n\ndata: cut off") == [ServerSentEvent(data="complete")]
    assert decoder.pending
    decoder.close()
    assert not decoder.pending
    assert decoder.feed(b"\n\n") == []


def test_a_leading_bom_is_dropped_even_when_split() -> None:
    """A UTF-8 BOM at the very start is skipped, also when it arrives a byte at a time."""
    stream = b"\xef\xbb\xbfdata: x\n\n"
    expected = [ServerSentEvent(data="x")]
    assert decode(stream) == expected
    assert decode(*split_bytes(stream, 1)) == expected


def test_a_bom_after_the_start_is_data() -> None:
    """Only the stream's first bytes can be a BOM; later it is an ordinary character."""
    assert decode(b"data: a\n\n\xef\xbb\xbfdata: b\n\n") == [ServerSentEvent(data="a")]
    assert decode(b"data: \xef\xbb\xbfb\n\n") == [ServerSentEvent(data="\ufeffb")]


def test_a_character_split_across_chunks_is_decoded_whole() -> None:
    """A multi-byte UTF-8 character cut between chunks arrives intact."""
    stream = "data: 日本🚀\n\n".encode()
    assert decode(*split_bytes(stream, 1)) == [ServerSentEvent(data="日本🚀")]


def test_invalid_utf8_becomes_the_replacement_character() -> None:
    """Bytes that are not UTF-8 decode to U+FFFD instead of failing the stream."""
    assert decode(b"data: a\xffb\n\n") == [ServerSentEvent(data="a\ufffdb")]


def test_a_long_line_in_tiny_chunks_is_assembled() -> None:
    """A 200 KB line fed a few bytes at a time comes out whole."""
    payload = "x" * 200_000
    assert decode(*split_bytes(f"data: {payload}\n\n".encode(), 3)) == [
        ServerSentEvent(data=payload)
    ]


STREAMS = {
    "openai_tools": sse_stream(
        "openai_chat", load_body("compat_deepseek_reasoning_content_parallel_tools"), chunk_size=3
    ),
    "anthropic_thinking_crlf": sse_stream(
        "anthropic_messages",
        load_body("ant_thinking_text_tool_use"),
        chunk_size=5,
        newline="\r\n",
    ),
    "anthropic_cr": sse_stream(
        "anthropic_messages", load_body("ant_multiple_tool_use"), chunk_size=4, newline="\r"
    ),
}


@pytest.mark.parametrize("name", sorted(STREAMS))
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_any_split_of_a_stream_yields_the_same_events(name: str, data: st.DataObject) -> None:
    """However a real stream is cut into chunks (inside characters, inside CRLF), events agree."""
    stream = STREAMS[name]
    whole = decode(stream)
    cuts = data.draw(st.lists(st.integers(0, len(stream)), max_size=40))
    assert decode(*split_at(stream, cuts)) == whole


@pytest.mark.parametrize("name", sorted(STREAMS))
def test_a_stream_fed_byte_by_byte_yields_the_same_events(name: str) -> None:
    """The worst split, one byte per chunk, changes nothing."""
    stream = STREAMS[name]
    assert decode(*split_bytes(stream, 1)) == decode(stream)


_TEXT = st.text(
    st.characters(exclude_categories=["Cs"], exclude_characters="\r\n\x00"), max_size=30
)
_EVENTS = st.lists(
    st.builds(
        ServerSentEvent,
        data=st.lists(_TEXT, min_size=1, max_size=4).map("\n".join),
        event=st.sampled_from(["message", "content_block_delta", "ping", "ünï"]),
        id=st.none() | _TEXT,
    ),
    max_size=8,
)


@settings(max_examples=200, deadline=None)
@given(
    events=_EVENTS,
    newline=st.sampled_from(["\n", "\r\n", "\r"]),
    comments=st.booleans(),
    data=st.data(),
)
def test_encoded_events_decode_to_themselves(
    events: list[ServerSentEvent], newline: str, comments: bool, data: st.DataObject
) -> None:
    """Any events, encoded with any line end and keep-alives, split anywhere, decode unchanged."""
    stream = encode_sse(events, newline=newline, comments=comments)
    cuts = data.draw(st.lists(st.integers(0, len(stream)), max_size=20))
    decoded = decode(*split_at(stream, cuts))
    # An id persists to later events until a new one is sent, as the standard says.
    expected, last_id = [], None
    for event in events:
        last_id = event.id if event.id is not None else last_id
        expected.append(ServerSentEvent(data=event.data, event=event.event, id=last_id))
    assert decoded == expected


def decode_by_lines(*chunks: bytes) -> list[ServerSentEvent]:
    """The events the line-by-line rules yield (a leading CR puts the decoder on them)."""
    decoder = SSEDecoder()
    events = decoder.feed(b"\r\n")  # a blank line: dispatches nothing
    for chunk in chunks:
        events.extend(decoder.feed(chunk))
    decoder.close()
    return events


# Raw streams made of the pieces that matter to the event-cutting fast path.
_PIECES = st.sampled_from(
    [
        b"data: {}",
        b"data: x",
        b"data:y",
        b"data: ",
        b"data",
        b"event: ping",
        b"event:e",
        b"event: ",
        b"id: 7",
        b"id",
        b": keep-alive",
        b"retry: 10",
        b"other: z",
        b"\xc3\xa9",
        b"\xff",
        b"\n",
        b"\n",
        b"\n\n",
        b" ",
    ]
)


@settings(max_examples=300, deadline=None)
@given(pieces=st.lists(_PIECES, max_size=30), data=st.data())
def test_cutting_at_blank_lines_agrees_with_the_line_rules(
    pieces: list[bytes], data: st.DataObject
) -> None:
    """Any LF-only stream, split anywhere, decodes as the line-by-line rules decode it."""
    stream = b"".join(pieces)
    cuts = data.draw(st.lists(st.integers(0, len(stream)), max_size=12))
    chunks = split_at(stream, cuts)
    assert decode(*chunks) == decode_by_lines(stream) == decode_by_lines(*chunks)
