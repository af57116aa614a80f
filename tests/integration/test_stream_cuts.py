"""Cut replies through the real proxy: what it dresses as finished still ends in StreamInterrupted.

The scripted upstream ends its body early but cleanly (`ended_after`), so LiteLLM sees
no failure and, on /chat/completions and on /v1/messages to an openai/ model, closes
the stream with an invented finish reason, usage and final event.
"""

from __future__ import annotations

import pytest

from nisse_llm.errors import StreamInterrupted
from nisse_llm.events.canonical import AssistantText, Completion, Reasoning, UserText
from nisse_llm.stream.deltas import StreamDelta, TextDelta, ToolArgumentsDelta
from nisse_llm.testing import Script, ended_after, reply
from nisse_llm.testing.proxy import LiteLLMProxy
from tests.integration.helpers import COMBO_IDS, COMBOS, ClientRoute, Combo, client_for
from tests.stream.record_proxy_cuts import CUT_AT, LONG_TEXT, LONG_THINKING, PARTS, WRITE_FILE

pytestmark = pytest.mark.proxy

LOG = [UserText(text="Write the plan to notes/plan.txt.")]


def _drain(proxy: LiteLLMProxy, combo: Combo, tools: bool) -> tuple[list[StreamDelta], Completion]:
    seen: list[StreamDelta] = []
    with client_for(proxy, combo.route) as h:
        with h.client.stream(LOG, [WRITE_FILE] if tools else None, combo.model()) as stream:
            seen.extend(stream)
        return seen, stream.completion


@pytest.mark.parametrize("combo", COMBOS, ids=COMBO_IDS)
def test_tool_arguments_cut_mid_json_are_stream_interrupted(
    proxy: LiteLLMProxy, script: Script, combo: Combo
) -> None:
    """On every route and entry, a call cut mid-arguments keeps its work and raises StreamInterrupted."""
    script.add(combo.upstream, ended_after(reply(*PARTS["text_tool"]), CUT_AT))
    with pytest.raises(StreamInterrupted) as caught:
        _drain(proxy, combo, tools=True)
    (call,) = caught.value.partial.tool_calls
    assert call.tool == "write_file"
    assert call.arguments.startswith('{"path":')
    assert len(call.arguments) > 100


@pytest.mark.parametrize("route", ["chat", "messages"])
def test_thinking_cut_before_its_signature_is_stream_interrupted(
    proxy: LiteLLMProxy, script: Script, route: ClientRoute
) -> None:
    """An anthropic/ model's thinking cut short is never a finished turn, on either client route."""
    combo = Combo(route, "claude")
    script.add(combo.upstream, ended_after(reply(*PARTS["thinking"]), CUT_AT))
    with pytest.raises(StreamInterrupted) as caught:
        _drain(proxy, combo, tools=False)
    reasoning = caught.value.partial.reasoning
    assert reasoning
    assert LONG_THINKING.thinking.startswith(reasoning)
    assert len(reasoning) < len(LONG_THINKING.thinking)


def test_unsigned_reasoning_of_an_openai_model_on_the_messages_route_is_a_finished_turn(
    proxy: LiteLLMProxy, script: Script
) -> None:
    """The control: LiteLLM relays reasoning_content as thinking with no signature, whole."""
    script.chat(reply(*PARTS["thinking"]))
    deltas, completion = _drain(proxy, Combo("messages", "gpt"), tools=False)
    events = completion.events
    assert isinstance(events[0], Reasoning)
    assert not events[0].block.get("signature")
    assert events[-1] == AssistantText(text="Done.", model="gpt-scripted")
    assert not any(isinstance(d, ToolArgumentsDelta) for d in deltas)


def test_a_cut_in_plain_text_reads_as_a_short_reply_on_the_chat_route(
    proxy: LiteLLMProxy, script: Script
) -> None:
    """The limit: with nothing but text, the proxy's invented ending cannot be told apart."""
    script.chat(ended_after(reply(*PARTS["text"]), CUT_AT))
    deltas, completion = _drain(proxy, Combo("chat", "gpt"), tools=False)
    text = "".join(d.text for d in deltas if isinstance(d, TextDelta))
    assert completion.events == [AssistantText(text=text, model="gpt-scripted")]
    assert LONG_TEXT.startswith(text)
    assert len(text) < len(LONG_TEXT)
