"""How the kit's scripted upstream speaks the OpenAI Responses route: its reply bodies
(a whole one and a failed one), the stream that re-tells a reply, and its kit."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, assert_never

from nisse_llm.stream._sse import ServerSentEvent
from nisse_llm.testing.kits.base import RouteKit, pieces, sse_event
from nisse_llm.testing.parts import (
    CREATED,
    Part,
    RedactedThinking,
    Text,
    Thinking,
    Tokens,
    ToolUse,
    arguments_text,
    call_id,
    openai_error_body,
)

__all__ = [
    "OPENAI_RESPONSES_KIT",
    "openai_responses_body",
    "openai_responses_events",
    "openai_responses_failed_body",
]


def _responses_item(part: Part, serial: int, index: int) -> dict[str, Any]:
    tag = f"{serial:04d}{index:02d}"
    if isinstance(part, Text):
        return {
            "id": f"msg_scripted_{tag}",
            "type": "message",
            "status": "completed",
            "content": [
                {"type": "output_text", "annotations": [], "logprobs": [], "text": part.text}
            ],
            "role": "assistant",
        }
    if isinstance(part, ToolUse):
        return {
            "id": f"fc_scripted_{tag}",
            "type": "function_call",
            "status": "completed",
            "arguments": arguments_text(part),
            "call_id": call_id(part, "call_scripted_", serial, index),
            "name": part.name,
        }
    if isinstance(part, Thinking):
        return {
            "id": f"rs_scripted_{tag}",
            "type": "reasoning",
            "encrypted_content": part.signature,
            "summary": [{"type": "summary_text", "text": part.thinking}] if part.thinking else [],
        }
    if isinstance(part, RedactedThinking):
        return {
            "id": f"rs_scripted_{tag}",
            "type": "reasoning",
            "encrypted_content": part.data,
            "summary": [],
        }
    assert_never(part)


def openai_responses_body(
    parts: Sequence[Part],
    *,
    model: str,
    usage: Tokens,
    truncated: bool = False,
    serial: int = 1,
    reasoning_tokens: int = 0,
) -> dict[str, Any]:
    """A Responses reply as the OpenAI API returns it (``POST /v1/responses``, ``store:
    false``): one output item per part, ``status: incomplete`` when ``truncated``."""
    return {
        "id": f"resp_scripted_{serial:04d}",
        "object": "response",
        "created_at": CREATED + serial,
        "status": "incomplete" if truncated else "completed",
        "background": False,
        "error": None,
        "incomplete_details": {"reason": "max_output_tokens"} if truncated else None,
        "instructions": None,
        "model": model,
        "output": [_responses_item(part, serial, i) for i, part in enumerate(parts)],
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "store": False,
        "text": {"format": {"type": "text"}, "verbosity": "medium"},
        "tool_choice": "auto",
        "tools": [],
        "temperature": 1.0,
        "top_p": 1.0,
        "usage": {
            "input_tokens": usage.input,
            "input_tokens_details": {
                "cache_write_tokens": usage.cache_write,
                "cached_tokens": usage.cache_read,
            },
            "output_tokens": usage.output,
            "output_tokens_details": {"reasoning_tokens": reasoning_tokens},
            "total_tokens": usage.input + usage.output,
        },
        "metadata": {},
    }


def openai_responses_failed_body(
    code: str, message: str, *, model: str = "scripted"
) -> dict[str, Any]:
    """A Responses reply whose ``status`` is ``failed`` (sent with HTTP 200)."""
    return {
        "id": "resp_scripted_failed",
        "object": "response",
        "created_at": CREATED,
        "status": "failed",
        "error": {"code": code, "message": message},
        "incomplete_details": None,
        "instructions": None,
        "model": model,
        "output": [],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": None,
        "metadata": {},
    }


def _skeleton(item: Mapping[str, Any]) -> dict[str, Any]:
    """An output item as ``response.output_item.added`` shows it: nothing generated yet."""
    kind = item.get("type")
    if kind == "message":
        return {**item, "status": "in_progress", "content": []}
    if kind == "function_call":
        return {**item, "status": "in_progress", "arguments": ""}
    if kind == "reasoning":
        return {k: v for k, v in item.items() if k != "encrypted_content"} | {"summary": []}
    return dict(item)


def _item_deltas(item: Mapping[str, Any], at: int, size: int) -> list[tuple[str, dict[str, Any]]]:
    """The events between an item's ``added`` and ``done``."""
    ref = {"item_id": item.get("id"), "output_index": at}
    found: list[tuple[str, dict[str, Any]]] = []
    kind = item.get("type")
    if kind == "message":
        for number, part in enumerate(item.get("content") or ()):
            where = {**ref, "content_index": number}
            text = part.get("text") if part.get("type") == "output_text" else None
            empty = {**part, "text": ""} if text is not None else part
            found.append(("response.content_part.added", {**where, "part": empty}))
            for piece in pieces(text or "", size):
                found.append(
                    ("response.output_text.delta", {**where, "delta": piece, "logprobs": []})
                )
            if text is not None:
                found.append(("response.output_text.done", {**where, "text": text, "logprobs": []}))
            found.append(("response.content_part.done", {**where, "part": part}))
    elif kind == "function_call":
        arguments = str(item.get("arguments") or "")
        for piece in pieces(arguments, size):
            found.append(("response.function_call_arguments.delta", {**ref, "delta": piece}))
        found.append(("response.function_call_arguments.done", {**ref, "arguments": arguments}))
    elif kind == "reasoning":
        for number, part in enumerate(item.get("summary") or ()):
            where = {**ref, "summary_index": number}
            text = str(part.get("text", ""))
            found.append(
                ("response.reasoning_summary_part.added", {**where, "part": {**part, "text": ""}})
            )
            for piece in pieces(text, size):
                found.append(("response.reasoning_summary_text.delta", {**where, "delta": piece}))
            found.append(("response.reasoning_summary_text.done", {**where, "text": text}))
            found.append(("response.reasoning_summary_part.done", {**where, "part": part}))
    return found


def openai_responses_events(
    body: Mapping[str, Any], *, chunk_size: int = 8
) -> list[ServerSentEvent]:
    """A Responses body as the events that stream it, each ``event:``-named by its type
    and numbered (``sequence_number``), as OpenAI sends them."""
    status = body.get("status") or "completed"
    final = {"incomplete": "response.incomplete", "failed": "response.failed"}.get(
        status, "response.completed"
    )
    opening = {**body, "status": "in_progress", "output": [], "usage": None}
    steps: list[tuple[str, dict[str, Any]]] = [("response.created", {"response": opening})]
    for at, item in enumerate(body.get("output") or ()):
        steps.append(("response.output_item.added", {"output_index": at, "item": _skeleton(item)}))
        steps.extend(_item_deltas(item, at, chunk_size))
        steps.append(("response.output_item.done", {"output_index": at, "item": item}))
    steps.append((final, {"response": dict(body)}))
    return [
        sse_event({"type": kind, "sequence_number": number, **fields}, kind)
        for number, (kind, fields) in enumerate(steps)
    ]


#: The Responses API sends an ``error`` event with ``code`` and ``message``.
OPENAI_RESPONSES_KIT = RouteKit(
    reply_body=openai_responses_body,
    error_body=lambda message: openai_error_body(message, type="server_error"),
    events=openai_responses_events,
    error_event=lambda kind, message: sse_event(
        {"type": "error", "code": kind, "message": message}, "error"
    ),
)
