"""What a scripted upstream can answer: replies built from parts, failures, disconnects.

Turns are frozen and route-neutral: the same `Reply` becomes an OpenAI chat
completion on ``/chat/completions`` and an Anthropic message on ``/v1/messages``.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias, TypeVar

from nisse_llm.testing.bodies import (
    Part,
    RedactedThinking,
    Text,
    Thinking,
    Tokens,
    ToolUse,
    anthropic_error_body,
    openai_error_body,
    openai_responses_failed_body,
)

__all__ = [
    "Disconnect",
    "Failure",
    "Part",
    "RedactedThinking",
    "Reply",
    "Text",
    "Thinking",
    "Tokens",
    "ToolUse",
    "Turn",
    "anthropic_failure",
    "cut_after",
    "ended_after",
    "failure",
    "openai_failure",
    "reply",
    "responses_failure",
    "slow",
    "stalled_after",
    "truncated",
]


@dataclass(frozen=True)
class Reply:
    """A successful model turn: its parts in order, and how it ended."""

    parts: tuple[Part, ...]
    #: Cut off at the output ceiling: ``finish_reason: "length"`` / ``stop_reason: "max_tokens"``.
    truncated: bool = False
    #: Token counts to report; estimated from the request and the parts when ``None``.
    usage: Tokens | None = None
    #: The model the response names; the request's model when ``None``.
    model: str | None = None
    #: Seconds to wait before answering (to outlast a timeout, for instance).
    delay_s: float = 0.0
    headers: tuple[tuple[str, str], ...] = ()
    #: Break the body after this many bytes: a stall of ``stall_s`` there, else a cut.
    break_at: int | None = None
    #: Seconds of silence at ``break_at`` before the rest is sent (``None``: cut instead).
    stall_s: float | None = None
    #: End a cut cleanly: no content-length, the connection closed after ``break_at`` bytes,
    #: so the peer sees a body that simply ended (as from a server that stops early).
    clean_cut: bool = False


@dataclass(frozen=True)
class Failure:
    """An error answer: a status, a raw body and headers, sent as given."""

    status: int
    body: bytes
    headers: tuple[tuple[str, str], ...] = (("content-type", "application/json"),)
    delay_s: float = 0.0


@dataclass(frozen=True)
class Disconnect:
    """Close the connection without answering (after ``delay_s`` seconds)."""

    delay_s: float = 0.0


Turn: TypeAlias = Reply | Failure | Disconnect

_T = TypeVar("_T", Reply, Failure, Disconnect)


def reply(
    *parts: Part | str,
    usage: Tokens | None = None,
    model: str | None = None,
    truncated: bool = False,
) -> Reply:
    """A reply from parts; a plain string is a `Text` part."""
    return Reply(
        parts=tuple(Text(p) if isinstance(p, str) else p for p in parts),
        usage=usage,
        model=model,
        truncated=truncated,
    )


def truncated(*parts: Part | str, usage: Tokens | None = None) -> Reply:
    """A reply cut off at the output ceiling."""
    return reply(*parts, usage=usage, truncated=True)


def slow(turn: _T, seconds: float) -> _T:
    """The same turn, answered only after ``seconds``."""
    return dataclasses.replace(turn, delay_s=seconds)


def cut_after(turn: Reply, at: int) -> Reply:
    """The same reply, its connection dropped after ``at`` bytes of the body (mid-stream)."""
    return dataclasses.replace(turn, break_at=at, stall_s=None)


def ended_after(turn: Reply, at: int) -> Reply:
    """The same reply, its body ended cleanly after ``at`` bytes: no error, just no more.

    Unlike `cut_after` (a body short of its content-length, which the peer can tell),
    the body is delimited by the connection's close, so nothing below the stream's own
    events shows that the reply was cut.
    """
    return dataclasses.replace(turn, break_at=at, stall_s=None, clean_cut=True)


def stalled_after(turn: Reply, at: int, seconds: float) -> Reply:
    """The same reply, silent for ``seconds`` after ``at`` bytes of the body, then the rest."""
    return dataclasses.replace(turn, break_at=at, stall_s=seconds)


def failure(
    status: int,
    body: bytes | str | Mapping[str, Any],
    *,
    headers: Mapping[str, str] | None = None,
) -> Failure:
    """An error answer with any body: bytes and text are sent as given, a mapping as JSON."""
    if isinstance(body, Mapping):
        raw = json.dumps(body).encode()
    else:
        raw = body.encode() if isinstance(body, str) else body
    pairs = dict(headers or {})
    pairs.setdefault("content-type", "application/json")
    return Failure(status=status, body=raw, headers=tuple(pairs.items()))


def openai_failure(
    status: int,
    message: str,
    *,
    type: str = "invalid_request_error",
    code: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> Failure:
    """An error as an OpenAI-compatible provider sends it."""
    return failure(status, openai_error_body(message, type=type, code=code), headers=headers)


def anthropic_failure(
    status: int,
    type: str,
    message: str,
    *,
    headers: Mapping[str, str] | None = None,
) -> Failure:
    """An error as Anthropic sends it (``overloaded_error`` with 529, for instance)."""
    return failure(status, anthropic_error_body(type, message), headers=headers)


def responses_failure(code: str, message: str, *, model: str = "scripted") -> Failure:
    """A Responses reply with ``status: "failed"`` and its error (HTTP 200, as the API
    sends a response that failed while generating): ``code`` as OpenAI names it, such as
    ``"server_error"`` or ``"context_length_exceeded"``."""
    return failure(200, openai_responses_failed_body(code, message, model=model))
