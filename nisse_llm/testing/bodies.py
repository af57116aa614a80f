"""Realistic provider bodies: OpenAI chat completions and Responses, Anthropic messages, errors.

The shapes follow recorded provider responses (usage detail objects, ``refusal: null``,
``stop_sequence: null``), so a parser tested against them meets no surprise upstream.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias, assert_never

__all__ = [
    "Part",
    "RedactedThinking",
    "Text",
    "Thinking",
    "Tokens",
    "ToolUse",
    "anthropic_error_body",
    "anthropic_message_body",
    "estimate_tokens",
    "openai_chat_body",
    "openai_error_body",
    "openai_responses_body",
    "openai_responses_failed_body",
]

# A fixed clock keeps scripted bodies reproducible; providers send seconds since 1970.
_CREATED = 1_767_225_600


@dataclass(frozen=True)
class Text:
    """Assistant text."""

    text: str


@dataclass(frozen=True)
class ToolUse:
    """A tool call; ``raw_arguments`` replaces the JSON arguments string on the chat route.

    ``raw_arguments`` lets a script send what weak models send (``'{"path": '``);
    Anthropic's ``input`` is always an object, so that route sends ``arguments``.
    """

    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    raw_arguments: str | None = None
    #: The provider's call id; a deterministic one is made when ``None``.
    id: str | None = None


@dataclass(frozen=True)
class Thinking:
    """An Anthropic extended-thinking block with its signature.

    On the chat route it becomes ``message.reasoning_content`` (no signature there); on the
    Responses route a reasoning item whose summary is the text and whose
    ``encrypted_content`` is the signature.
    """

    thinking: str
    signature: str


@dataclass(frozen=True)
class RedactedThinking:
    """An Anthropic ``redacted_thinking`` block (opaque data); absent on the chat route, a
    reasoning item with no summary and the data as ``encrypted_content`` on the Responses
    route."""

    data: str


Part: TypeAlias = Text | ToolUse | Thinking | RedactedThinking


@dataclass(frozen=True)
class Tokens:
    """Token counts to report. ``input`` counts every prompt token, cached or not."""

    input: int
    output: int
    cache_read: int = 0
    cache_write: int = 0


def estimate_tokens(request_body: bytes, parts: Sequence[Part]) -> Tokens:
    """Plausible counts (about four bytes a token) for a reply that names none."""
    produced = 0
    for part in parts:
        if isinstance(part, Text):
            produced += len(part.text)
        elif isinstance(part, ToolUse):
            produced += len(part.name) + len(json.dumps(dict(part.arguments)))
        elif isinstance(part, Thinking):
            produced += len(part.thinking)
        elif isinstance(part, RedactedThinking):
            produced += len(part.data)
        else:
            assert_never(part)
    return Tokens(input=max(1, len(request_body) // 4), output=max(1, produced // 4))


def _call_id(part: ToolUse, prefix: str, serial: int, index: int) -> str:
    return part.id or f"{prefix}{serial:04d}{index:02d}"


def _arguments_text(part: ToolUse) -> str:
    """The arguments string the OpenAI routes send: the raw text given, else the JSON."""
    if part.raw_arguments is not None:
        return part.raw_arguments
    return json.dumps(dict(part.arguments))


def openai_chat_body(
    parts: Sequence[Part],
    *,
    model: str,
    usage: Tokens,
    truncated: bool = False,
    serial: int = 1,
) -> dict[str, Any]:
    """A chat completion as an OpenAI-compatible provider returns it."""
    texts: list[str] = []
    reasoning: list[str] = []
    calls: list[dict[str, Any]] = []
    for index, part in enumerate(parts):
        if isinstance(part, Text):
            texts.append(part.text)
        elif isinstance(part, ToolUse):
            calls.append(
                {
                    "id": _call_id(part, "call_scripted_", serial, index),
                    "type": "function",
                    "function": {"name": part.name, "arguments": _arguments_text(part)},
                }
            )
        elif isinstance(part, Thinking):
            reasoning.append(part.thinking)
        elif isinstance(part, RedactedThinking):
            pass  # no chat-completions form exists for an opaque block
        else:
            assert_never(part)
    message: dict[str, Any] = {
        "role": "assistant",
        "content": "".join(texts) if texts else None,
        "refusal": None,
    }
    if calls:
        message["tool_calls"] = calls
    if reasoning:
        message["reasoning_content"] = "".join(reasoning)
    finish = "length" if truncated else ("tool_calls" if calls else "stop")
    return {
        "id": f"chatcmpl-scripted-{serial:04d}",
        "object": "chat.completion",
        "created": _CREATED + serial,
        "model": model,
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
        "usage": {
            "prompt_tokens": usage.input,
            "completion_tokens": usage.output,
            "total_tokens": usage.input + usage.output,
            "prompt_tokens_details": {"cached_tokens": usage.cache_read, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
        },
        "system_fingerprint": None,
    }


def _map_anthropic_block(part: Part, serial: int, index: int) -> dict[str, Any]:
    if isinstance(part, Text):
        return {"type": "text", "text": part.text}
    if isinstance(part, ToolUse):
        return {
            "type": "tool_use",
            "id": _call_id(part, "toolu_scripted_", serial, index),
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
            "arguments": _arguments_text(part),
            "call_id": _call_id(part, "call_scripted_", serial, index),
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
        "created_at": _CREATED + serial,
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
        "created_at": _CREATED,
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


def openai_error_body(
    message: str,
    *,
    type: str = "invalid_request_error",
    code: str | None = None,
    param: str | None = None,
) -> dict[str, Any]:
    """``{"error": {"message", "type", "param", "code"}}``."""
    return {"error": {"message": message, "type": type, "param": param, "code": code}}


def anthropic_error_body(type: str, message: str) -> dict[str, Any]:
    """``{"type": "error", "error": {"type", "message"}}``."""
    return {"type": "error", "error": {"type": type, "message": message}}
