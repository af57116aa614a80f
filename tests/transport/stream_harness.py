"""Read a stream from either kind of client the same way, from an async test."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from nisse_llm.config.options import RequestOptions
from nisse_llm.events.canonical import CanonicalEvent, Completion
from nisse_llm.stream.deltas import StreamDelta
from nisse_llm.transport.clients import AnthropicPassthroughClient, LiteLLMClient
from nisse_llm.transport.responses_client import OpenAIResponsesClient
from tests.transport.harness import EVENTS, MODEL
from tests.transport.stream_upstream import StreamingUpstream, serve


@pytest.fixture
def upstream() -> Iterator[StreamingUpstream]:
    """A streaming loopback upstream on 127.0.0.1 and a free port."""
    yield from serve()


def is_sync(client: Any) -> bool:
    """Whether ``client`` is one of the sync clients."""
    return isinstance(client, LiteLLMClient | AnthropicPassthroughClient | OpenAIResponsesClient)


async def read_stream(
    client: Any,
    events: list[CanonicalEvent] | None = None,
    tools: Any = None,
    *,
    model: str | None = None,
    seen: list[StreamDelta] | None = None,
    options: RequestOptions | None = None,
) -> tuple[list[StreamDelta], Completion]:
    """Stream one reply to its end: the deltas in order and the completion.

    ``seen`` (if given) collects the deltas as they arrive, so a test can inspect what
    came before a failure.
    """
    deltas = seen if seen is not None else []
    args = (EVENTS if events is None else events, tools, model or MODEL[client.route])
    if is_sync(client):
        with client.stream(*args, options=options) as stream:
            for delta in stream:
                deltas.append(delta)
    else:
        async with client.stream(*args, options=options) as stream:
            async for delta in stream:
                deltas.append(delta)
    return deltas, stream.completion


def normalised(events: list[CanonicalEvent]) -> list[dict[str, Any]]:
    """Events as dicts with minted call ids replaced by their order of appearance (and
    Responses reasoning item ids, which a server makes per reply, by a placeholder)."""
    ids: dict[str, str] = {}
    out = []
    for event in events:
        data = event.model_dump()
        if "call_id" in data:
            data["call_id"] = ids.setdefault(data["call_id"], f"call_{len(ids)}")
        if data.get("kind") == "reasoning" and data["block"].get("type") == "reasoning":
            data["block"] = {**data["block"], "id": "rs"}
        out.append(data)
    return out
