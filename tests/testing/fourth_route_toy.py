"""A toy fourth route, defined wholly in the test tree: its wire format, descriptor,
renderer, reply parser, stream accumulator, clients and testing-kit replies.

The wire is deliberately small: a request ``{"model", "lines": [{"who", "text"}],
"max_tokens"}``, a reply ``{"model", "say", "usage": {"in", "out"}}``, and a stream of
``{"piece": ...}`` events ended by an ``end`` event holding the model and usage.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from nisse_llm import AssistantText, Completion, Usage, UserText
from nisse_llm.errors import PartialReply
from nisse_llm.events.canonical import as_events
from nisse_llm.render import CallParams, Renderer
from nisse_llm.routes import RouteDescriptor
from nisse_llm.stream.deltas import ServerSentEvent, StreamAccumulator, StreamDelta, TextDelta
from nisse_llm.testing.bodies import Text, Tokens
from nisse_llm.testing.route_kits import RouteKit
from nisse_llm.transport.clients import AsyncRouteClient, SyncRouteClient

HERE = __name__
NAME = "toy_fourth_route"

TOY_ROUTE = RouteDescriptor(
    name=NAME,
    path="/v1/toy/say",
    auth_headers=lambda token: {"authorization": f"Bearer {token}"},
    stream_fields=b',"stream":true}',
    renderer=f"{HERE}:ToyRenderer",
    accumulator=f"{HERE}:ToyStreamAccumulator",
    clients=(f"{HERE}:ToyClient", f"{HERE}:AsyncToyClient"),
    kit=f"{HERE}:TOY_KIT",
    modules=(HERE,),
)


def parse_toy_reply(
    body: bytes | str | Mapping[str, Any], *, requested_model: str, max_tokens: int | None = None
) -> Completion:
    """A toy reply as canonical events and usage."""
    data = json.loads(body) if isinstance(body, bytes | str) else body
    usage = data["usage"]
    return Completion(
        events=[AssistantText(text=data["say"], model=requested_model)],
        usage=Usage(input=usage["in"], output=usage["out"]),
        response_model=data["model"],
    )


class ToyRenderer(Renderer):
    """User and assistant text as the toy's lines (one part: the whole body)."""

    reply_parser = staticmethod(parse_toy_reply)

    def encode_parts(self, call: CallParams) -> list[bytes]:
        lines = [
            {"who": "user" if isinstance(e, UserText) else "assistant", "text": e.text}
            for e in as_events(call.events)
            if isinstance(e, UserText | AssistantText)
        ]
        body = {"model": call.model, "lines": lines, "max_tokens": call.max_tokens}
        return [json.dumps(body, separators=(",", ":")).encode()]


class ToyStreamAccumulator(StreamAccumulator):
    """Pieces of text, then an ``end`` event with the model and usage."""

    route = NAME

    def __init__(self, *, requested_model: str, parse: Any) -> None:
        super().__init__(requested_model=requested_model, parse=parse)
        self._text = ""
        self._end: dict[str, Any] = {}

    def on_data(self, name: str, data: bytes) -> list[StreamDelta]:
        value = json.loads(data)
        if name == "end":
            self._end = value
            self._done = True
            return []
        self._text += value["piece"]
        return [TextDelta(value["piece"], self._text)]

    def missing_end(self) -> str | None:
        return None if self._done else "before its end event"

    def cut_shown(self) -> str | None:
        return None

    def body_so_far(self, *, partial: bool) -> dict[str, Any]:
        return {
            "model": self._end.get("model", self.requested_model),
            "say": self._text,
            "usage": self._end.get("usage", {"in": 0, "out": 0}),
        }

    def partial(self) -> PartialReply:
        return PartialReply(
            text=self._text,
            reasoning="",
            tool_calls=(),
            events=0,
            body=self.body_so_far(partial=True),
        )


class ToyClient(SyncRouteClient):
    """The toy route's client: the package's exchange over `TOY_ROUTE`."""

    ROUTE = TOY_ROUTE


class AsyncToyClient(AsyncRouteClient):
    """`ToyClient` for asyncio."""

    ROUTE = TOY_ROUTE


def _reply_body(
    parts: Sequence[Any], *, model: str, usage: Tokens, truncated: bool, serial: int
) -> dict[str, Any]:
    said = "".join(part.text for part in parts if isinstance(part, Text))
    return {"model": model, "say": said, "usage": {"in": usage.input, "out": usage.output}}


def _events(body: Mapping[str, Any], *, chunk_size: int = 8) -> list[ServerSentEvent]:
    said = body["say"]
    pieces = [said[i : i + chunk_size] for i in range(0, len(said), chunk_size)]
    end = {"model": body["model"], "usage": body["usage"]}
    return [ServerSentEvent(data=json.dumps({"piece": piece})) for piece in pieces] + [
        ServerSentEvent(data=json.dumps(end), event="end")
    ]


TOY_KIT = RouteKit(
    reply_body=_reply_body,
    error_body=lambda message: {"error": {"message": message, "type": "server_error"}},
    events=_events,
    error_event=lambda kind, message: ServerSentEvent(
        data=json.dumps({"error": {"type": kind, "message": message}}), event="error"
    ),
)
