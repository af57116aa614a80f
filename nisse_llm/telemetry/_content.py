"""The canonical log as the GenAI conventions' content attributes (captured only on request).

Shapes: ``gen_ai.input.messages`` and ``gen_ai.output.messages`` are lists of
``{"role", "parts"}`` messages (text, ``tool_call``, ``tool_call_response``, ``reasoning``
parts); ``gen_ai.system_instructions`` a list of text parts; ``gen_ai.tool.definitions``
a list of ``{"type": "function", "name", "description", "parameters"}``. An image is
never sent to telemetry: a part ``{"type": "blob", "modality": "image", "mime_type",
"size"}`` stands for its bytes (a URL image is a ``uri`` part). Each attribute is one JSON
string, as the conventions ask where span attributes cannot hold structures.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, assert_never

from pydantic_core import to_json

from nisse_llm.events.canonical import (
    AssistantText,
    CanonicalEvent,
    Compaction,
    Completion,
    Reasoning,
    ToolCall,
    ToolResult,
    ToolsLike,
    UserImage,
    UserText,
    as_events,
    as_tool_specs,
)
from nisse_llm.events.images import Image

__all__ = [
    "finish_reason",
    "input_messages",
    "output_messages",
    "system_instructions",
    "to_text",
    "tool_definitions",
]

Part = dict[str, Any]

#: Provider stop reasons (a Responses reply's status among them) as the conventions'
#: finish reasons.
_FINISH = {
    "stop": "stop",
    "completed": "stop",
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_calls": "tool_call",
    "tool_use": "tool_call",
    "length": "length",
    "max_tokens": "length",
    "content_filter": "content_filter",
    "refusal": "content_filter",
}


def finish_reason(stop_reason: str | None) -> str:
    """The conventions' finish reason for a provider's stop reason (unknown ones kept)."""
    if stop_reason is None:
        return "stop"
    return _FINISH.get(stop_reason, stop_reason)


def _image(image: Image) -> Part:
    if image.url is not None:
        part: Part = {"type": "uri", "modality": "image", "uri": image.url}
    else:
        part = {"type": "blob", "modality": "image", "size": image.size}
    if image.media_type is not None:
        part["mime_type"] = image.media_type
    return part


def _reasoning(event: Reasoning) -> Part:
    block = event.block
    text = block.get("thinking") or block.get("reasoning_content") or ""
    return {"type": "reasoning", "content": text if isinstance(text, str) else ""}


def _role_and_parts(event: CanonicalEvent) -> tuple[str, list[Part]]:
    if isinstance(event, UserText):
        return "user", [{"type": "text", "content": event.text}]
    if isinstance(event, UserImage):
        return "user", [_image(event.image)]
    if isinstance(event, AssistantText):
        return "assistant", [{"type": "text", "content": event.text}]
    if isinstance(event, ToolCall):
        return "assistant", [
            {
                "type": "tool_call",
                "id": event.call_id,
                "name": event.tool,
                "arguments": event.arguments,
            }
        ]
    if isinstance(event, ToolResult):
        response: Part = {
            "type": "tool_call_response",
            "id": event.call_id,
            "response": event.output,
        }
        if event.is_error:
            response["is_error"] = True
        return "tool", [response, *(_image(image) for image in event.images)]
    if isinstance(event, Reasoning):
        return "assistant", [_reasoning(event)]
    if isinstance(event, Compaction):  # sent as user-side context (its summary)
        return "user", [{"type": "text", "content": event.text}]
    assert_never(event)


def _messages(events: Iterable[CanonicalEvent]) -> list[dict[str, Any]]:
    """Consecutive events of one role as one message, in log order."""
    messages: list[dict[str, Any]] = []
    for event in events:
        role, parts = _role_and_parts(event)
        if messages and messages[-1]["role"] == role:
            messages[-1]["parts"] += parts
        else:
            messages.append({"role": role, "parts": parts})
    return messages


def to_text(value: object) -> str:
    """Any JSON-able value as compact JSON text."""
    return to_json(value, fallback=repr).decode()


def input_messages(events: Iterable[object]) -> str:
    """``gen_ai.input.messages`` for a log."""
    return to_json(_messages(as_events(events))).decode()


def output_messages(completion: Completion) -> str:
    """``gen_ai.output.messages`` for a reply: one assistant message (the one choice)."""
    parts = [part for event in completion.events for part in _role_and_parts(event)[1]]
    message = {
        "role": "assistant",
        "parts": parts,
        "finish_reason": finish_reason(completion.stop_reason),
    }
    return to_json([message]).decode()


def system_instructions(system: str) -> str:
    """``gen_ai.system_instructions`` for a system prompt."""
    return to_json([{"type": "text", "content": system}]).decode()


def tool_definitions(tools: ToolsLike) -> str:
    """``gen_ai.tool.definitions`` for the tools a call offers."""
    return to_json(
        [
            {
                "type": "function",
                "name": spec.name,
                "description": spec.description,
                "parameters": spec.parameters,
            }
            for spec in as_tool_specs(tools)
        ]
    ).decode()
