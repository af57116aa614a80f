"""Where streaming is strict although lenient parsers accept: the rules in the streaming guide (docs/guides/streaming.md)."""

from __future__ import annotations

import pytest

from nisse_llm.config.routing import Route
from nisse_llm.errors import LLMError, StreamInterrupted
from nisse_llm.testing.sse import sse_stream
from tests.stream._support import accumulator, load_body

ROUTES: list[Route] = ["openai_chat", "anthropic_messages"]
BODIES = {"openai_chat": "oai_text_plain", "anthropic_messages": "ant_text_plain"}


@pytest.mark.parametrize("route", ROUTES)
def test_a_final_event_without_its_blank_line_is_an_interruption(route: Route) -> None:
    """The SSE rule: an unterminated last event is discarded, so the stream never ended."""
    data = sse_stream(route, load_body(BODIES[route]))
    assert data.endswith(b"\n\n")
    whole = accumulator(route)
    whole.feed(data)
    whole.finish()
    cut = accumulator(route)
    cut.feed(data[:-1])  # the final event's line ends, its blank line never comes
    with pytest.raises(StreamInterrupted, match="before"):
        cut.finish()


def test_server_tool_blocks_streamed_are_a_failed_turn_not_an_interruption() -> None:
    """A streamed reply with server tool blocks fails as complete() fails on it: LLMError."""
    data = sse_stream("anthropic_messages", load_body("ant_pause_turn_server_tools"))
    acc = accumulator("anthropic_messages")
    acc.feed(data)
    with pytest.raises(LLMError, match="'server_tool_use' block") as caught:
        acc.finish()
    assert not isinstance(caught.value, StreamInterrupted)
