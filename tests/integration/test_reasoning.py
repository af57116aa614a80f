"""Reasoning blocks through the real proxy: parsed as `Reasoning`, replayed only to their own model."""

from __future__ import annotations

import pytest

from nisse_llm.events.canonical import (
    AssistantText,
    CanonicalEvent,
    Reasoning,
    ToolCall,
    ToolResult,
    UserText,
)
from nisse_llm.testing import RedactedThinking, Script, Thinking, ToolUse, reply
from nisse_llm.testing.proxy import LiteLLMProxy
from tests.corpus import READ_FILE
from tests.integration.helpers import client_for

pytestmark = pytest.mark.proxy

# Shaped like real blocks: signatures and redacted data are opaque base64 the API checks.
THINKING = Thinking(
    "The test expects add(1, 2) == 3; subtraction would give -1. Read the file first.",
    "EqQBCkYIBxgCKkDw0ZNnn9Js1nH1rq2Q3kFJ1Yd+0t1W2Qx0VnQ==",
)
REDACTED = RedactedThinking("EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP")
THINKING_BLOCK = {
    "type": "thinking",
    "thinking": THINKING.thinking,
    "signature": THINKING.signature,
}
REDACTED_BLOCK = {"type": "redacted_thinking", "data": REDACTED.data}


def _first_turn(script: Script) -> None:
    script.messages(
        reply(THINKING, REDACTED, "Let me read it.", ToolUse("read_file", {"path": "calc.py"})),
        reply("add() subtracts; it should add."),
    )


def test_thinking_comes_back_as_reasoning_and_is_replayed_verbatim_to_the_same_model(
    proxy: LiteLLMProxy, script: Script
) -> None:
    """On /v1/messages, thinking and redacted thinking become `Reasoning` and go back unchanged, in place, next turn."""
    _first_turn(script)
    log: list[CanonicalEvent] = [UserText(text="Why does test_add fail?")]
    with client_for(proxy, "messages") as h:
        events = h.client.complete(log, [READ_FILE], "claude-scripted")
        thinking, redacted, text, call = events
        assert thinking == Reasoning(
            model="claude-scripted", response_model="claude-scripted", block=THINKING_BLOCK
        )
        assert redacted == Reasoning(
            model="claude-scripted", response_model="claude-scripted", block=REDACTED_BLOCK
        )
        assert text == AssistantText(text="Let me read it.", model="claude-scripted")
        assert isinstance(call, ToolCall)
        log += [*events, ToolResult(call_id=call.call_id, output="def add(a, b): return a - b")]
        h.client.complete(log, [READ_FILE], "claude-scripted")
    replayed = script.requests[1].json["messages"][1]
    assert replayed == {
        "role": "assistant",
        "content": [
            THINKING_BLOCK,
            REDACTED_BLOCK,
            {"type": "text", "text": "Let me read it."},
            {
                "type": "tool_use",
                "id": call.call_id,
                "name": "read_file",
                "input": {"path": "calc.py"},
            },
        ],
    }


def test_reasoning_is_not_replayed_to_another_model(proxy: LiteLLMProxy, script: Script) -> None:
    """The same log sent to a different model carries no reasoning block (spec A10)."""
    _first_turn(script)
    log: list[CanonicalEvent] = [UserText(text="Why does test_add fail?")]
    with client_for(proxy, "messages") as h:
        events = h.client.complete(log, [READ_FILE], "claude-scripted")
        call = next(e for e in events if isinstance(e, ToolCall))
        log += [*events, ToolResult(call_id=call.call_id, output="def add(a, b): return a - b")]
        h.client.complete(log, [READ_FILE], "claude-alt")
    second = script.requests[1].json
    assert second["model"] == "claude-alt"
    assistant = second["messages"][1]["content"]
    assert [block["type"] for block in assistant] == ["text", "tool_use"]


def test_chat_route_parses_thinking_blocks_but_never_replays_them(
    proxy: LiteLLMProxy, script: Script
) -> None:
    """Through /chat/completions the proxy's thinking_blocks become `Reasoning`, and the next request leaves them out."""
    _first_turn(script)
    log: list[CanonicalEvent] = [UserText(text="Why does test_add fail?")]
    with client_for(proxy, "chat") as h:
        events = h.client.complete(log, [READ_FILE], "claude-scripted")
        reasoning = [e for e in events if isinstance(e, Reasoning)]
        assert [r.block for r in reasoning] == [THINKING_BLOCK, REDACTED_BLOCK]
        assert {r.model for r in reasoning} == {"claude-scripted"}
        call = next(e for e in events if isinstance(e, ToolCall))
        log += [*events, ToolResult(call_id=call.call_id, output="def add(a, b): return a - b")]
        h.client.complete(log, [READ_FILE], "claude-scripted")
    second = script.requests[1].json
    sent_types = [
        block["type"]
        for message in second["messages"]
        if isinstance(message["content"], list)
        for block in message["content"]
    ]
    assert "thinking" not in sent_types
    assert "redacted_thinking" not in sent_types
