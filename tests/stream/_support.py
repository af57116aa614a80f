"""Shared helpers for the streaming tests: the fixture bodies, parsers, and reply outcomes."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from nisse_llm.config.routing import Route
from nisse_llm.events.canonical import Completion
from nisse_llm.render import Renderer
from nisse_llm.render.anthropic_messages import AnthropicMessagesRenderer
from nisse_llm.render.openai_chat import OpenAIChatRenderer
from nisse_llm.stream.deltas import (
    AnthropicStreamAccumulator,
    OpenAIChatStreamAccumulator,
    StreamAccumulator,
    StreamDelta,
    accumulator_for,
)

RESPONSES = Path(__file__).parent.parent / "fixtures" / "conformance" / "responses"
MODEL = "model-requested"


def load_body(name: str) -> dict[str, Any]:
    """A conformance response body by its name (file name without ``.json``)."""
    body: dict[str, Any] = json.loads((RESPONSES / f"{name}.json").read_text(encoding="utf-8"))
    return body


def manifest() -> list[dict[str, Any]]:
    """The conformance manifest: one entry per response body."""
    entries: list[dict[str, Any]] = json.loads(
        (RESPONSES / "manifest.json").read_text(encoding="utf-8")
    )
    return entries


def route_of(entry: dict[str, Any]) -> Route:
    """The route a manifest entry's body belongs to."""
    return "anthropic_messages" if entry["provider"] == "anthropic" else "openai_chat"


def accumulator(route: Route) -> StreamAccumulator:
    """A fresh accumulator for ``route`` wired to the route's real parser."""
    renderer: Renderer = (
        OpenAIChatRenderer() if route == "openai_chat" else AnthropicMessagesRenderer()
    )
    return accumulator_for(route, requested_model=MODEL, parse=renderer.parse)


def openai_accumulator() -> OpenAIChatStreamAccumulator:
    """A chat-route accumulator with the real parser."""
    return OpenAIChatStreamAccumulator(requested_model=MODEL, parse=OpenAIChatRenderer().parse)


def anthropic_accumulator() -> AnthropicStreamAccumulator:
    """A messages-route accumulator with the real parser."""
    return AnthropicStreamAccumulator(
        requested_model=MODEL, parse=AnthropicMessagesRenderer().parse
    )


def parse_body(route: Route, body: dict[str, Any]) -> Completion:
    """What ``complete()`` makes of ``body``: the route's parser, called as the client calls it."""
    renderer = OpenAIChatRenderer() if route == "openai_chat" else AnthropicMessagesRenderer()
    return renderer.parse(json.dumps(body).encode(), requested_model=MODEL)


def feed_all(acc: StreamAccumulator, chunks: Iterable[bytes]) -> list[StreamDelta]:
    """Every delta the chunks yield, in order."""
    deltas: list[StreamDelta] = []
    for chunk in chunks:
        deltas.extend(acc.feed(chunk))
    return deltas


def outcome(run: Any) -> tuple[str, Any]:
    """A reply's outcome, comparable across runs: its normalised result, or its error."""
    try:
        completion = run()
    except Exception as exc:  # any failure is part of the outcome being compared
        return ("raised", (type(exc), str(exc)))
    return ("returned", normalise(completion))


def normalise(completion: Completion) -> dict[str, Any]:
    """A completion with its minted call ids replaced by their order of appearance."""
    ids: dict[str, str] = {}
    events = []
    for event in completion.events:
        data = event.model_dump()
        if "call_id" in data:
            data["call_id"] = ids.setdefault(data["call_id"], f"call_{len(ids)}")
        events.append(data)
    return {
        "events": events,
        "usage": completion.usage.model_dump(),
        "stop_reason": completion.stop_reason,
        "response_model": completion.response_model,
    }
