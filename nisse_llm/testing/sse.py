"""Non-streaming reply bodies re-told as realistic SSE streams, whole or broken, for tests.

The reverse of `nisse_llm.stream.deltas`: a chat-completions body becomes a role chunk,
content and refusal in fragments, reasoning and LiteLLM thinking-block fragments, tool
calls interleaved by ``index`` (id and name only on each call's first delta, arguments
in fragments), a finish chunk, a usage chunk with empty ``choices`` and ``[DONE]``; a
messages body becomes ``message_start`` (usage with one output token), a ``ping``, each
block's start, deltas (``text_delta``, ``input_json_delta``, ``thinking_delta``,
``signature_delta``, ``citations_delta``) and stop, ``message_delta`` (stop reason,
final output tokens) and ``message_stop``; a Responses body becomes ``response.created``,
per output item ``response.output_item.added``, its deltas (``output_text``, reasoning
summary text, function-call arguments) and ``response.output_item.done`` with the whole
item, and ``response.completed`` (``response.incomplete``, ``response.failed``) with the
whole body. Accumulating the stream rebuilds the body.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from nisse_llm.routes import ROUTE_TABLE, load
from nisse_llm.stream._sse import ServerSentEvent
from nisse_llm.testing.kits.anthropic_messages import anthropic_messages_events
from nisse_llm.testing.kits.openai_chat import openai_chat_events
from nisse_llm.testing.kits.openai_responses import openai_responses_events

__all__ = [
    "anthropic_messages_events",
    "cut",
    "encode_sse",
    "openai_chat_events",
    "openai_responses_events",
    "split_bytes",
    "sse_stream",
    "stream_events",
    "with_error_event",
    "without_final_event",
]


# --- bytes -------------------------------------------------------------------------------


def _kit(route: str) -> Any:
    """The testing kit's `RouteKit` of ``route`` (`nisse_llm.testing.route_kits`)."""
    return load(ROUTE_TABLE[route].kit)


def stream_events(
    route: str, body: Mapping[str, Any], *, chunk_size: int = 8
) -> list[ServerSentEvent]:
    """The events that stream ``body`` on ``route`` (its kit's, by the route table)."""
    events: list[ServerSentEvent] = _kit(route).events(body, chunk_size=chunk_size)
    return events


def encode_sse(
    events: Iterable[ServerSentEvent], *, newline: str = "\n", comments: bool = False
) -> bytes:
    """Events as SSE bytes; ``newline`` may be LF, CRLF or CR, ``comments`` adds keep-alives."""
    lines: list[str] = []
    for event in events:
        if comments:
            lines.append(": keep-alive")
        if event.event != "message":
            lines.append(f"event: {event.event}")
        if event.id is not None:
            lines.append(f"id: {event.id}")
        lines.extend(f"data: {line}" for line in event.data.split("\n"))
        lines.append("")
    return "".join(line + newline for line in lines).encode()


def sse_stream(
    route: str, body: Mapping[str, Any], *, chunk_size: int = 8, newline: str = "\n"
) -> bytes:
    """``body`` streamed on ``route``, as the bytes a server sends."""
    return encode_sse(stream_events(route, body, chunk_size=chunk_size), newline=newline)


def split_bytes(data: bytes, size: int) -> list[bytes]:
    """``data`` in chunks of ``size`` bytes, cut wherever that falls (inside characters too)."""
    return [data[i : i + size] for i in range(0, len(data), size)]


# --- broken streams ----------------------------------------------------------------------


def cut(data: bytes, *, at: int) -> bytes:
    """The stream as a client sees it when the connection drops after ``at`` bytes."""
    return data[:at]


def without_final_event(events: Sequence[ServerSentEvent]) -> list[ServerSentEvent]:
    """The stream with its last event (``message_stop`` or ``[DONE]``) missing."""
    return list(events[:-1])


def with_error_event(
    route: str,
    events: Sequence[ServerSentEvent],
    *,
    after: int,
    error_type: str = "overloaded_error",
    message: str = "Overloaded",
) -> list[ServerSentEvent]:
    """The first ``after`` events, then the error event that ends the stream on ``route``.

    Anthropic sends ``event: error`` with its error body; LiteLLM's chat route sends a
    chunk ``{"error": {...}}`` in the OpenAI error shape; the Responses API an ``error``
    event with ``code`` and ``message``.
    """
    error: ServerSentEvent = _kit(route).error_event(error_type, message)
    return [*events[:after], error]
