"""What every route's testing kit is: a `RouteKit` (how a scripted upstream answers on
the route), and the helpers its stream encoders share."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from nisse_llm.stream._sse import ServerSentEvent

__all__ = ["ReplyBody", "RouteKit", "compact_json", "pieces", "sse_event"]

#: ``(parts, *, model, usage, truncated, serial)`` -> the route's reply body.
ReplyBody = Callable[..., dict[str, Any]]


@dataclass(frozen=True, slots=True)
class RouteKit:
    """One route as a scripted upstream answers it."""

    #: The reply body for a scripted turn's parts: ``(parts, *, model, usage, truncated,
    #: serial)``.
    reply_body: ReplyBody
    #: The body of a server error naming ``message``.
    error_body: Callable[[str], dict[str, Any]]
    #: The events that stream a reply body: ``(body, *, chunk_size)``.
    events: Callable[..., list[ServerSentEvent]]
    #: The event that ends a stream with an error: ``(error_type, message)``.
    error_event: Callable[[str, str], ServerSentEvent]


def compact_json(value: Any) -> str:
    """``value`` as providers send it: compact and raw UTF-8 (so multi-byte characters
    cross chunk cuts)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def pieces(text: str, size: int) -> list[str]:
    """``text`` in pieces of ``size`` characters."""
    return [text[i : i + size] for i in range(0, len(text), size)]


def sse_event(data: Any, event: str = "message") -> ServerSentEvent:
    """One event carrying ``data`` as compact JSON."""
    return ServerSentEvent(data=compact_json(data), event=event)
