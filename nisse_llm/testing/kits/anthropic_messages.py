"""How the kit's scripted upstream speaks the Anthropic messages route: its reply and
error bodies, the stream that re-tells a reply, and its kit."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, assert_never

from nisse_llm.stream._sse import ServerSentEvent
from nisse_llm.testing.kits.base import RouteKit, compact_json, pieces, sse_event
from nisse_llm.testing.parts import (
    Part,
    RedactedThinking,
    Text,
    Thinking,
    Tokens,
    ToolUse,
    call_id,
)

__all__ = [
    "ANTHROPIC_MESSAGES_KIT",
    "anthropic_error_body",
    "anthropic_message_body",
    "anthropic_messages_events",
]

_INPUT_BLOCKS = frozenset({"tool_use", "server_tool_use", "mcp_tool_use"})
_STOP_FIELDS = ("stop_reason", "stop_sequence", "stop_details")


def _map_anthropic_block(part: Part, serial: int, index: int) -> dict[str, Any]:
    if isinstance(part, Text):
        return {"type": "text", "text": part.text}
    if isinstance(part, ToolUse):
        return {
            "type": "tool_use",
            "id": call_id(part, "toolu_scripted_", serial, index),
            "name": part.name,
            "input": dict(part.arguments),
        }
    if isinstance(part, Thinking):
        return {"type": "thinking", "thinking": part.thinking, "signature": part.signature}
    if isinstance(part, RedactedThinking):
        return {"type": "redacted_thinking", "data": part.data}
    assert_never(part)


def anthropic_message_body(
    parts: Sequence[Part],
    *,
    model: str,
    usage: Tokens,
    truncated: bool = False,
    serial: int = 1,
) -> dict[str, Any]:
    """A message as the Anthropic API returns it (``input_tokens`` excludes cached ones)."""
    content = [_map_anthropic_block(part, serial, i) for i, part in enumerate(parts)]
    has_call = any(block["type"] == "tool_use" for block in content)
    stop = "max_tokens" if truncated else ("tool_use" if has_call else "end_turn")
    return {
        "id": f"msg_scripted_{serial:04d}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {
            "input_tokens": max(0, usage.input - usage.cache_read - usage.cache_write),
            "output_tokens": usage.output,
            "cache_creation_input_tokens": usage.cache_write,
            "cache_read_input_tokens": usage.cache_read,
        },
    }


def anthropic_error_body(type: str, message: str) -> dict[str, Any]:
    """``{"type": "error", "error": {"type", "message"}}``."""
    return {"type": "error", "error": {"type": type, "message": message}}


def anthropic_messages_events(
    body: Mapping[str, Any], *, chunk_size: int = 8
) -> list[ServerSentEvent]:
    """A ``message`` body as the events that stream it (``chunk_size``: characters per delta)."""
    message = {k: v for k, v in body.items() if k != "content"}
    message["content"] = []
    for key in _STOP_FIELDS:
        if key in message:
            message[key] = None
    usage = body.get("usage")
    final_output = usage.get("output_tokens") if isinstance(usage, Mapping) else None
    if isinstance(usage, Mapping) and final_output is not None:
        message["usage"] = {**usage, "output_tokens": min(1, final_output)}
    events = [sse_event({"type": "message_start", "message": message}, "message_start")]
    for index, block in enumerate(body.get("content") or ()):
        start, deltas = _anthropic_block(block, chunk_size)
        events.append(
            sse_event(
                {"type": "content_block_start", "index": index, "content_block": start},
                "content_block_start",
            )
        )
        if index == 0:
            events.append(sse_event({"type": "ping"}, "ping"))
        events.extend(
            sse_event(
                {"type": "content_block_delta", "index": index, "delta": d}, "content_block_delta"
            )
            for d in deltas
        )
        events.append(
            sse_event({"type": "content_block_stop", "index": index}, "content_block_stop")
        )
    final: dict[str, Any] = {
        "type": "message_delta",
        "delta": {key: body[key] for key in _STOP_FIELDS if key in body},
    }
    if final_output is not None:
        final["usage"] = {"output_tokens": final_output}
    events.append(sse_event(final, "message_delta"))
    events.append(sse_event({"type": "message_stop"}, "message_stop"))
    return events


def _anthropic_block(
    block: Mapping[str, Any], size: int
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    kind = block.get("type")
    if kind == "text":
        start = {**block, "text": ""}
        citations = block.get("citations")
        deltas: list[dict[str, Any]] = [
            {"type": "text_delta", "text": piece} for piece in pieces(block.get("text") or "", size)
        ]
        if isinstance(citations, list) and citations:
            start["citations"] = []
            deltas.extend({"type": "citations_delta", "citation": c} for c in citations)
        return start, deltas
    if kind in _INPUT_BLOCKS:
        arguments = block.get("input")
        text = compact_json(arguments) if arguments else ""
        parts = pieces(text, size) or [""]
        return {**block, "input": {}}, [
            {"type": "input_json_delta", "partial_json": piece} for piece in parts
        ]
    if kind == "thinking":
        start = {**block, "thinking": ""}
        deltas = [
            {"type": "thinking_delta", "thinking": piece}
            for piece in pieces(block.get("thinking") or "", size)
        ]
        signature = block.get("signature")
        if isinstance(signature, str):
            start["signature"] = ""
            deltas.append({"type": "signature_delta", "signature": signature})
        return start, deltas
    # redacted_thinking, server tool results and anything newer arrive whole.
    return dict(block), []


#: Anthropic sends ``event: error`` with its error body.
ANTHROPIC_MESSAGES_KIT = RouteKit(
    reply_body=anthropic_message_body,
    error_body=lambda message: anthropic_error_body("api_error", message),
    events=anthropic_messages_events,
    error_event=lambda kind, message: sse_event(
        {"type": "error", "error": {"type": kind, "message": message}}, "error"
    ),
)
