"""What a scripted reply is made of: its parts (text, tool calls, thinking), the token
counts it reports, and the small facts every route's body builds from them.

The shapes follow recorded provider responses, so a parser tested against them meets no
surprise upstream; each route's bodies are its kit's (`nisse_llm.testing.kits`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias, assert_never

__all__ = [
    "CREATED",
    "Part",
    "RedactedThinking",
    "Text",
    "Thinking",
    "Tokens",
    "ToolUse",
    "arguments_text",
    "call_id",
    "estimate_tokens",
    "openai_error_body",
]

# A fixed clock keeps scripted bodies reproducible; providers send seconds since 1970.
CREATED = 1_767_225_600


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


def call_id(part: ToolUse, prefix: str, serial: int, index: int) -> str:
    """The provider's call id of ``part``: its own, else one made from its place."""
    return part.id or f"{prefix}{serial:04d}{index:02d}"


def arguments_text(part: ToolUse) -> str:
    """The arguments string the OpenAI routes send: the raw text given, else the JSON."""
    if part.raw_arguments is not None:
        return part.raw_arguments
    return json.dumps(dict(part.arguments))


def openai_error_body(
    message: str,
    *,
    type: str = "invalid_request_error",
    code: str | None = None,
    param: str | None = None,
) -> dict[str, Any]:
    """``{"error": {"message", "type", "param", "code"}}``: the error body of both OpenAI
    routes."""
    return {"error": {"message": message, "type": type, "param": param, "code": code}}
