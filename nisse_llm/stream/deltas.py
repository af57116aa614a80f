"""Streaming replies (sans-I/O): SSE bytes in, typed deltas out, and at the end a `Completion`.

Each route's accumulator rebuilds, from the stream, the body the route's non-streaming
API would have returned for the same reply, and hands it to that route's ``parse``: the
final events, usage and failures (`TruncatedResponse`, `ModelRefusal`, bad tool
arguments) are then those of ``complete()`` by construction. A stream that breaks
before its final event, or carries an ``error`` event, raises `StreamInterrupted` (an
`UpstreamUnavailable`) with what arrived attached. Driving it::

    acc = accumulator_for(route, requested_model=model, parse=renderer.parse)
    try:
        for chunk in response.iter_bytes():
            for delta in acc.feed(chunk):
                ...  # show it
    except httpx.HTTPError as exc:
        raise acc.interrupted(f"connection lost: {exc}") from exc
    completion = acc.finish()

Where the pieces live: the delta types and the driver every accumulator shares in
`nisse_llm.stream.base`; the chat route's accumulator in `nisse_llm.stream.chat`, the
messages route's in `nisse_llm.stream.messages`, the Responses route's in
`nisse_llm.stream.responses` (loaded with its first stream). This module picks one by
the route table and re-exports them all.
"""

from __future__ import annotations

import json

from nisse_llm.errors import PartialReply, PartialToolCall, StreamInterrupted
from nisse_llm.events.canonical import AssistantText, Completion, Reasoning, ToolCall
from nisse_llm.routes import ROUTE_TABLE, RouteDescriptor, load
from nisse_llm.stream._sse import ServerSentEvent, SSEDecoder
from nisse_llm.stream.base import (
    ParseFn,
    ReasoningDelta,
    RefusalDelta,
    StreamAccumulator,
    StreamDelta,
    TextDelta,
    ToolArgumentsDelta,
    ToolCallStarted,
)
from nisse_llm.stream.chat import OpenAIChatStreamAccumulator
from nisse_llm.stream.messages import AnthropicStreamAccumulator

__all__ = [
    "AnthropicStreamAccumulator",
    "OpenAIChatStreamAccumulator",
    "ParseFn",
    "PartialReply",
    "PartialToolCall",
    "ReasoningDelta",
    "RefusalDelta",
    "SSEDecoder",
    "ServerSentEvent",
    "StreamAccumulator",
    "StreamDelta",
    "StreamInterrupted",
    "TextDelta",
    "ToolArgumentsDelta",
    "ToolCallStarted",
    "accumulator_for",
    "completion_deltas",
]


def accumulator_for(
    route: str | RouteDescriptor, *, requested_model: str, parse: ParseFn
) -> StreamAccumulator:
    """A fresh accumulator for one streamed reply on ``route`` (a descriptor, or a name in
    the route table)."""
    described = ROUTE_TABLE[route] if isinstance(route, str) else route
    accumulator: StreamAccumulator = load(described.accumulator)(
        requested_model=requested_model, parse=parse
    )
    return accumulator


def completion_deltas(completion: Completion) -> list[StreamDelta]:
    """The deltas a reply that arrived whole implies, in the order of its events.

    A server may answer a stream request with the complete JSON body (LiteLLM does for
    mock entries): iterating the stream still shows what `events` holds. Each text
    and reasoning block is one delta; each tool call a start and its whole arguments.
    """
    out: list[StreamDelta] = []
    calls = 0
    for event in completion.events:
        if isinstance(event, AssistantText):
            if event.text:
                out.append(TextDelta(event.text, event.text))
        elif isinstance(event, ToolCall):
            out.append(ToolCallStarted(calls, event.tool))
            out.append(ToolArgumentsDelta(calls, json.dumps(event.arguments)))
            calls += 1
        elif isinstance(event, Reasoning):
            block = event.block
            text = block.get("thinking", block.get("reasoning_content"))
            if isinstance(text, str) and text:
                out.append(ReasoningDelta(text, text))
    return out
