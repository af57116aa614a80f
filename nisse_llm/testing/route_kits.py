"""How the kit's scripted upstream speaks each route: its reply and error bodies, and the
events that stream them. A route's descriptor names its kit (`nisse_llm.routes`)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from nisse_llm.stream._sse import ServerSentEvent
from nisse_llm.testing.bodies import (
    anthropic_error_body,
    anthropic_message_body,
    openai_chat_body,
    openai_error_body,
    openai_responses_body,
)
from nisse_llm.testing.sse import (
    anthropic_messages_events,
    openai_chat_events,
    openai_responses_events,
)

__all__ = [
    "ANTHROPIC_MESSAGES_KIT",
    "OPENAI_CHAT_KIT",
    "OPENAI_RESPONSES_KIT",
    "ReplyBody",
    "RouteKit",
]

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


def _sent(data: Any, event: str = "message") -> ServerSentEvent:
    # Compact and raw UTF-8, as providers send it.
    return ServerSentEvent(
        data=json.dumps(data, ensure_ascii=False, separators=(",", ":")), event=event
    )


#: LiteLLM's chat route ends a broken stream with a chunk in the OpenAI error shape.
OPENAI_CHAT_KIT = RouteKit(
    reply_body=openai_chat_body,
    error_body=lambda message: openai_error_body(message, type="server_error"),
    events=openai_chat_events,
    error_event=lambda kind, message: _sent(
        {"error": {"message": message, "type": kind, "param": None, "code": "500"}}
    ),
)
#: Anthropic sends ``event: error`` with its error body.
ANTHROPIC_MESSAGES_KIT = RouteKit(
    reply_body=anthropic_message_body,
    error_body=lambda message: anthropic_error_body("api_error", message),
    events=anthropic_messages_events,
    error_event=lambda kind, message: _sent(
        {"type": "error", "error": {"type": kind, "message": message}}, "error"
    ),
)
#: The Responses API sends an ``error`` event with ``code`` and ``message``.
OPENAI_RESPONSES_KIT = RouteKit(
    reply_body=openai_responses_body,
    error_body=lambda message: openai_error_body(message, type="server_error"),
    events=openai_responses_events,
    error_event=lambda kind, message: _sent(
        {"type": "error", "code": kind, "message": message}, "error"
    ),
)
