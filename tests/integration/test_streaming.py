"""Streaming through the real proxy: both routes, both kinds of model entry, tools, thinking, a cut."""

from __future__ import annotations

import pytest

from nisse_llm.errors import LLMError, StreamInterrupted, UpstreamUnavailable
from nisse_llm.events.canonical import (
    AssistantText,
    CanonicalEvent,
    Reasoning,
    ToolCall,
    Usage,
    UserText,
)
from nisse_llm.stream.deltas import (
    ReasoningDelta,
    StreamDelta,
    TextDelta,
    ToolArgumentsDelta,
    ToolCallStarted,
)
from nisse_llm.testing import Script, Thinking, ToolUse, cut_after, reply
from nisse_llm.testing.proxy import LiteLLMProxy
from tests.corpus import READ_FILE, RUN_TESTS
from tests.integration.helpers import COMBO_IDS, COMBOS, Combo, client_for

pytestmark = pytest.mark.proxy

TEXT = "I'll read the file, then run its test. " * 4
THINKING = Thinking(
    "The test expects add(1, 2) == 3; subtraction would give -1. Read the file first.",
    "EqQBCkYIBxgCKkDw0ZNnn9Js1nH1rq2Q3kFJ1Yd+0t1W2Qx0VnQ==",
)
THINKING_BLOCK = {
    "type": "thinking",
    "thinking": THINKING.thinking,
    "signature": THINKING.signature,
}
LOG: list[CanonicalEvent] = [UserText(text="The calc test fails. Fix it.")]
CALLS = [
    ToolUse("read_file", {"path": "calc.py"}),
    ToolUse("run_tests", {"selector": "tests/test_calc.py", "verbose": True}),
]


def _stream(
    proxy: LiteLLMProxy, combo: Combo, model: str
) -> tuple[list[StreamDelta], list[CanonicalEvent], object]:
    with (
        client_for(proxy, combo.route) as h,
        h.client.stream(LOG, [READ_FILE, RUN_TESTS], model) as stream,
    ):
        deltas = list(stream)
        return deltas, stream.events, h.client.last_usage


# LiteLLM 1.108.7 rebuilding an OpenAI stream as Anthropic events (/v1/messages to an
# openai/ model) appends every argument fragment to the newest tool_use block, so calls
# whose fragments interleave (as the scripted upstream sends them) come out garbled.
MERGES_INTERLEAVED_CALLS = Combo("messages", "gpt")


def _calls_for(combo: Combo) -> list[ToolUse]:
    return CALLS[:1] if combo == MERGES_INTERLEAVED_CALLS else CALLS


@pytest.mark.parametrize("combo", COMBOS, ids=COMBO_IDS)
def test_text_and_tool_calls_stream_end_to_end(
    proxy: LiteLLMProxy, script: Script, combo: Combo
) -> None:
    """Text deltas, then each tool call by name and arguments, add up to the events complete() returns."""
    calls = _calls_for(combo)
    script.add(combo.upstream, reply(TEXT, *calls), reply(TEXT, *calls))
    model = combo.model()
    with client_for(proxy, combo.route) as h:
        completed = h.client.complete(LOG, [READ_FILE, RUN_TESTS], model)
    deltas, events, usage = _stream(proxy, combo, model)
    assert script.requests[1].json["stream"] is True
    assert script.requests[0].json.get("stream") in (None, False)

    text = "".join(d.text for d in deltas if isinstance(d, TextDelta))
    assert text == TEXT
    assert [d.tool for d in deltas if isinstance(d, ToolCallStarted)] == [c.name for c in calls]
    assert any(isinstance(d, ToolArgumentsDelta) for d in deltas)
    assert [type(e) for e in events] == [AssistantText, *(ToolCall for _ in calls)]
    assert events[0] == completed[0]
    streamed_calls = [(e.tool, e.arguments) for e in events if isinstance(e, ToolCall)]
    completed_calls = [(e.tool, e.arguments) for e in completed if isinstance(e, ToolCall)]
    assert streamed_calls == completed_calls == [(c.name, c.arguments) for c in calls]
    assert isinstance(usage, Usage)
    assert usage.input > 0
    assert usage.output > 0


def test_calls_the_proxy_garbles_fail_the_turn_rather_than_run(
    proxy: LiteLLMProxy, script: Script
) -> None:
    """Interleaved calls that LiteLLM merges on /v1/messages to an openai/ model raise LLMError, never run."""
    script.chat(reply(TEXT, *CALLS))
    with pytest.raises(LLMError, match="had arguments that are not JSON") as caught:
        _stream(proxy, MERGES_INTERLEAVED_CALLS, "gpt-scripted")
    assert not isinstance(caught.value, UpstreamUnavailable)


def test_thinking_streams_through_the_messages_route_with_its_signature(
    proxy: LiteLLMProxy, script: Script
) -> None:
    """On /v1/messages to an anthropic/ model, reasoning deltas arrive and the Reasoning keeps its signature."""
    script.messages(reply(THINKING, "Let me read it.", ToolUse("read_file", {"path": "calc.py"})))
    combo = Combo("messages", "claude")
    deltas, events, _ = _stream(proxy, combo, "claude-scripted")
    reasoning = "".join(d.text for d in deltas if isinstance(d, ReasoningDelta))
    assert reasoning == THINKING.thinking
    assert events[0] == Reasoning(
        model="claude-scripted", response_model="claude-scripted", block=THINKING_BLOCK
    )
    assert isinstance(events[1], AssistantText)
    assert isinstance(events[2], ToolCall)


def test_thinking_streams_through_the_chat_route_as_reasoning(
    proxy: LiteLLMProxy, script: Script
) -> None:
    """On /chat/completions to an anthropic/ model, the proxy's rebuilt stream carries the thinking."""
    script.messages(reply(THINKING, "Let me read it."))
    combo = Combo("chat", "claude")
    deltas, events, _ = _stream(proxy, combo, "claude-scripted")
    reasoning = "".join(d.text for d in deltas if isinstance(d, ReasoningDelta))
    assert reasoning == THINKING.thinking
    assert [e.block for e in events if isinstance(e, Reasoning)] == [THINKING_BLOCK]
    assert events[-1] == AssistantText(text="Let me read it.", model="claude-scripted")


@pytest.mark.parametrize("combo", COMBOS, ids=COMBO_IDS)
def test_an_upstream_cut_mid_stream_is_stream_interrupted(
    proxy: LiteLLMProxy, script: Script, combo: Combo
) -> None:
    """The upstream dropping the connection half-way reaches the client as StreamInterrupted."""
    script.add(combo.upstream, cut_after(reply(TEXT * 20), 20_000))
    with client_for(proxy, combo.route) as h:
        seen: list[StreamDelta] = []
        stream = h.client.stream(LOG, None, combo.model())
        with pytest.raises(StreamInterrupted) as caught, stream:
            seen.extend(stream)
        assert h.client.last_usage is None
    assert caught.value.partial.text == "".join(d.text for d in seen if isinstance(d, TextDelta))
    assert len(caught.value.partial.text) < len(TEXT * 20)
