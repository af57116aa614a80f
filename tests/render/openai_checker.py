"""The chat route's pairing rules as a checker of rendered bodies, and a check against the source log.

`check_chat_body` states what the API requires of any body (a tool message answers a
call of the assistant message right before it, every call is answered before any other
message, no blank text); `check_against_log` states that nothing of the log was lost on
the way (every call, result and non-blank text is there, reasoning is not).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from nisse_llm.events.canonical import (
    AssistantText,
    CanonicalEvent,
    Reasoning,
    ToolCall,
    ToolResult,
    UserText,
)
from nisse_llm.render.openai_chat import (
    ASSISTANT_TEXT_SEPARATOR,
    INTERRUPTED_RESULT,
    TOOL_ERROR_PREFIX,
)

__all__ = ["check_against_log", "check_chat_body"]

_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def _fail(index: int, why: str) -> AssertionError:
    return AssertionError(f"messages[{index}]: {why}")


def _nonblank(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def check_chat_body(body: Mapping[str, Any]) -> None:
    """Raise `AssertionError` naming the first pairing or shape rule the body breaks."""
    messages = body["messages"]
    assert isinstance(messages, list), "messages must be a list"
    assert messages, "messages must not be empty"
    seen_ids: set[str] = set()
    waiting: list[str] = []  # ids of the last assistant message's calls not yet answered
    for index, message in enumerate(messages):
        role = message["role"]
        if waiting and role != "tool":
            raise _fail(index, f"{role} message before the results of {waiting}")
        if role == "system":
            if index != 0:
                raise _fail(index, "a system message must be the first message")
            if not _nonblank(message["content"]):
                raise _fail(index, "blank system prompt")
        elif role == "user":
            content = message["content"]
            if isinstance(content, list):
                if not content:
                    raise _fail(index, "an empty content list")
                for part in content:
                    if part["type"] == "text" and not _nonblank(part["text"]):
                        raise _fail(index, "a blank text part")
                    if part["type"] == "image_url" and not part["image_url"]["url"]:
                        raise _fail(index, "an image part without its url")
                    if part["type"] not in ("text", "image_url"):
                        raise _fail(index, f"unknown user part {part['type']!r}")
            elif not _nonblank(content):
                raise _fail(index, "blank user text")
        elif role == "assistant":
            calls = message.get("tool_calls")
            if "content" in message and not _nonblank(message["content"]):
                raise _fail(index, "blank assistant text")
            if "tool_calls" in message and not calls:
                raise _fail(index, "an empty tool_calls list")
            if "content" not in message and not calls:
                raise _fail(index, "an assistant message with no text and no calls")
            for call in calls or ():
                if call["id"] in seen_ids:
                    raise _fail(index, f"tool call id {call['id']!r} used twice")
                seen_ids.add(call["id"])
                if call["type"] != "function" or not _NAME.match(call["function"]["name"]):
                    raise _fail(index, f"bad tool call {call!r}")
                arguments = json.loads(call["function"]["arguments"])
                if not isinstance(arguments, dict):
                    raise _fail(index, "tool call arguments are not a JSON object")
                waiting.append(call["id"])
        elif role == "tool":
            if message["tool_call_id"] not in waiting:
                raise _fail(
                    index, f"tool message for {message['tool_call_id']!r} answers no pending call"
                )
            waiting.remove(message["tool_call_id"])
            if not isinstance(message["content"], str):
                raise _fail(index, "tool content must be a string")
        else:
            raise _fail(index, f"unknown role {role!r}")
    if waiting:
        raise AssertionError(f"calls {waiting} are never answered")
    tools = body.get("tools")
    if tools is not None:
        names = [tool["function"]["name"] for tool in tools]
        assert tools, "an empty tools list"
        assert len(set(names)) == len(names), f"tools must be unique: {names}"
    if "tool_choice" in body:
        assert tools, "tool_choice without tools"
    if "max_tokens" in body:
        assert isinstance(body["max_tokens"], int)
        assert body["max_tokens"] >= 1


def _expected_result(result: ToolResult | None) -> str:
    if result is None:
        return INTERRUPTED_RESULT
    return TOOL_ERROR_PREFIX + result.output if result.is_error else result.output


def check_against_log(
    body: Mapping[str, Any], events: Sequence[CanonicalEvent], system: str | None = None
) -> None:
    """Raise `AssertionError` unless every call, result and non-blank text of the log is sent once."""
    messages = body["messages"]
    if system is not None and system.strip():
        assert messages[0] == {"role": "system", "content": system}
        messages = messages[1:]
    assert all(message["role"] != "system" for message in messages)

    users = [event.text for event in events if isinstance(event, UserText) and event.text.strip()]
    assert [m["content"] for m in messages if m["role"] == "user"] == users

    said = [e.text for e in events if isinstance(e, AssistantText) and e.text.strip()]
    sent = [m["content"] for m in messages if m["role"] == "assistant" and "content" in m]
    assert ASSISTANT_TEXT_SEPARATOR.join(sent) == ASSISTANT_TEXT_SEPARATOR.join(said)

    calls = [event for event in events if isinstance(event, ToolCall)]
    sent_calls = [c for m in messages if m["role"] == "assistant" for c in m.get("tool_calls", ())]
    assert [c["id"] for c in sent_calls] == [call.call_id for call in calls]
    for call, sent_call in zip(calls, sent_calls, strict=True):
        assert sent_call["function"]["name"] == call.tool
        assert json.loads(sent_call["function"]["arguments"]) == call.arguments

    results = {event.call_id: event for event in events if isinstance(event, ToolResult)}
    answers = {m["tool_call_id"]: m["content"] for m in messages if m["role"] == "tool"}
    assert answers == {call.call_id: _expected_result(results.get(call.call_id)) for call in calls}

    # A signature is sent only if reasoning was; skip one the log's other text contains.
    encoded = json.dumps(body, ensure_ascii=False)
    other = json.dumps([e.model_dump() for e in events if not isinstance(e, Reasoning)])
    for event in events:
        if isinstance(event, Reasoning) and event.block.get("type") == "thinking":
            signature = json.dumps(event.block["signature"])[1:-1]
            assert signature in other or signature not in encoded, "reasoning was sent"
