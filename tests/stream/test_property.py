"""Property: any reply, streamed in any fragments and split into any chunks, equals it unstreamed."""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from nisse_llm.config.routing import Route
from nisse_llm.testing import (
    RedactedThinking,
    Text,
    Thinking,
    Tokens,
    ToolUse,
    anthropic_message_body,
    openai_chat_body,
)
from nisse_llm.testing.sse import sse_stream
from tests.stream._support import accumulator, feed_all, outcome, parse_body

_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**40), 2**40)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=10),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
_PARTS = st.lists(
    st.one_of(
        st.builds(Text, st.text(max_size=80)),
        st.builds(
            ToolUse,
            name=st.from_regex(r"[a-z_]{1,12}", fullmatch=True),
            arguments=st.dictionaries(st.text(max_size=8), _JSON, max_size=4),
            # What weak models send on the chat route: cut-off, non-object and empty JSON.
            raw_arguments=st.none() | st.sampled_from(['{"path": ', "[1]", "", "null", "{}"]),
        ),
        st.builds(
            Thinking,
            thinking=st.text(max_size=60),
            signature=st.text("ABCxyz+/=", min_size=1, max_size=24),
        ),
        st.builds(RedactedThinking, data=st.text("ABCxyz+/=", min_size=1, max_size=24)),
    ),
    max_size=5,
)
_TOKENS = st.builds(
    Tokens,
    input=st.integers(0, 5000),
    output=st.integers(0, 5000),
    cache_read=st.integers(0, 1000),
    cache_write=st.integers(0, 1000),
)


def _body(route: Route, parts: list[Any], usage: Tokens, truncated: bool) -> dict[str, Any]:
    build = openai_chat_body if route == "openai_chat" else anthropic_message_body
    return build(parts, model="served-model", usage=usage, truncated=truncated)


@settings(max_examples=300, deadline=None)
@given(
    route=st.sampled_from(["openai_chat", "anthropic_messages"]),
    parts=_PARTS,
    usage=_TOKENS,
    truncated=st.sampled_from([False, False, False, True]),  # mostly replies that parse
    chunk_size=st.integers(1, 24),
    cuts=st.lists(st.integers(0, 100_000), max_size=30),
    newline=st.sampled_from(["\n", "\r\n", "\r"]),
)
def test_any_streamed_reply_equals_the_same_reply_unstreamed(
    route: Route,
    parts: list[Any],
    usage: Tokens,
    truncated: bool,
    chunk_size: int,
    cuts: list[int],
    newline: str,
) -> None:
    """Events (ids normalised), usage and stop reason, or the error and its message, are the same."""
    body = _body(route, parts, usage, truncated)
    stream = sse_stream(route, body, chunk_size=chunk_size, newline=newline)
    points = [0, *sorted(cut % (len(stream) + 1) for cut in cuts), len(stream)]

    def streamed() -> Any:
        acc = accumulator(route)
        feed_all(acc, [stream[a:b] for a, b in itertools.pairwise(points)])
        return acc.finish()

    assert outcome(streamed) == outcome(lambda: parse_body(route, body))
