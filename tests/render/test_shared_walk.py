"""The routes' shared walk: one replay rule for thinking, and no state shared between renderers."""

from __future__ import annotations

from typing import Any

import pytest

from nisse_llm import RequestOptions
from nisse_llm.events.canonical import AssistantText, Reasoning, ToolCall, ToolResult, UserText
from nisse_llm.render.anthropic_messages import AnthropicMessagesRenderer
from nisse_llm.render.openai_chat import OpenAIChatRenderer
from nisse_llm.render.openai_responses import OpenAIResponsesRenderer

MODEL = "claude-sonnet-4-5"
THINKING = RequestOptions(reasoning="high", max_output_tokens=32000)


def _log(block: dict[str, Any]) -> list[Any]:
    return [
        UserText(text="Read it."),
        Reasoning(model=MODEL, block=block),
        AssistantText(text="Reading.", model=MODEL),
        ToolCall(call_id="c1", tool="read", arguments={}),
        ToolResult(call_id="c1", output="ok"),
    ]


def _chat_thinking(block: dict[str, Any]) -> list[Any]:
    body = OpenAIChatRenderer().render(_log(block), None, MODEL, options=THINKING)
    return [m.get("thinking_blocks") for m in body["messages"] if m["role"] == "assistant"]


def _messages_thinking(block: dict[str, Any]) -> list[Any]:
    body = AnthropicMessagesRenderer().render(_log(block), None, MODEL, options=THINKING)
    return [
        b
        for m in body["messages"]
        for b in m["content"]
        if b["type"] in {"thinking", "redacted_thinking"}
    ]


@pytest.mark.parametrize(
    "block",
    [
        {"type": "redacted_thinking", "data": 5},
        {"type": "redacted_thinking", "data": None},
        {"type": "thinking", "thinking": "t", "signature": 7},
        {"type": "thinking", "thinking": "t", "signature": "s", "extra": "x"},
    ],
)
def test_both_routes_leave_out_a_block_that_is_not_replayable(block: dict[str, Any]) -> None:
    """The stricter rule on both routes: a replayed block's values must be strings."""
    assert _chat_thinking(block) == [None]
    assert _messages_thinking(block) == []


@pytest.mark.parametrize(
    "block",
    [
        {"type": "redacted_thinking", "data": "opaque"},
        {"type": "thinking", "thinking": "t", "signature": "s"},
    ],
)
def test_both_routes_replay_a_block_as_stored(block: dict[str, Any]) -> None:
    assert _chat_thinking(block) == [[block]]
    assert _messages_thinking(block) == [block]


@pytest.mark.parametrize(
    "make", [OpenAIChatRenderer, AnthropicMessagesRenderer, OpenAIResponsesRenderer]
)
def test_renderers_share_no_walks(make: Any) -> None:
    """One renderer's cached walks are its own: another starts cold, and forgetting one
    leaves the other's intact."""
    first, second = make(), make()
    log = [
        UserText(text="One."),
        AssistantText(text="Two.", model="gpt-4o-mini"),
        UserText(text="Three."),
    ]
    body = first.render_bytes(log, None, "gpt-4o-mini")
    assert first._walks is not second._walks
    assert first._walks.lock is not second._walks.lock
    assert len(first._walks._entries) == 1
    assert len(second._walks._entries) == 0
    assert second.render_bytes(log, None, "gpt-4o-mini") == body
    first.forget()
    assert len(first._walks._entries) == 0
    assert len(second._walks._entries) == 1
