"""Streaming replies of the Responses route: SSE events in, deltas out, the reply at the end.

The events are read by their JSON ``type`` (the proxy re-emits them as ``data:``-only SSE,
without ``event:`` lines): ``response.created`` opens the reply, each output item arrives
as ``response.output_item.added``, its deltas (``response.output_text.delta``,
``response.refusal.delta``, ``response.reasoning_summary_text.delta``,
``response.function_call_arguments.delta``) and ``response.output_item.done`` with the
whole item (the reasoning item then holds its complete ``encrypted_content``), and the
stream ends with ``response.completed``, ``response.incomplete`` or ``response.failed``,
whose ``response`` is the whole reply, parsed as ``complete()`` parses it. An ``error``
event, or a stream that ends before its final event, raises `StreamInterrupted` with what
arrived. A module of its own: a program that never streams this route loads none of it.
"""

from __future__ import annotations

from typing import Any

from nisse_llm.errors import LLMError, PartialReply, PartialToolCall, StreamInterrupted
from nisse_llm.routes.openai_responses import OPENAI_RESPONSES
from nisse_llm.stream._fragments import Joined, fragment
from nisse_llm.stream.base import (
    EXCERPT,
    ParseFn,
    ReasoningDelta,
    RefusalDelta,
    StreamAccumulator,
    StreamDelta,
    TextDelta,
    ToolArgumentsDelta,
    ToolCallStarted,
    as_dict,
    load_event,
    malformed,
    tool_name,
)

__all__ = ["ResponsesStreamAccumulator"]

_FINAL = frozenset({"response.completed", "response.incomplete", "response.failed"})


class _Item:
    """One output item as it streams: the item, its text, reasoning or argument fragments."""

    __slots__ = ("arguments", "call", "item", "reasoning", "refusal", "text")

    def __init__(self, item: dict[str, Any], call: int | None) -> None:
        self.item = item
        self.call = call
        self.text = Joined()
        self.refusal = Joined()
        self.reasoning = Joined()
        self.arguments = Joined()


class ResponsesStreamAccumulator(StreamAccumulator):
    """Rebuilds a Responses reply from its stream (module docstring)."""

    route = OPENAI_RESPONSES.name

    def __init__(self, *, requested_model: str, parse: ParseFn) -> None:
        super().__init__(requested_model=requested_model, parse=parse)
        self._top: dict[str, Any] = {}
        self._items: dict[int, _Item] = {}
        self._calls = 0
        self._final: dict[str, Any] | None = None

    def on_data(self, name: str, data: bytes) -> list[StreamDelta]:
        event = load_event(data)
        kind = event.get("type") or name
        if kind == "response.output_text.delta":
            # Nearly every event of a reply, taken first and without the calls of `_delta`.
            piece = event.get("delta")
            if type(piece) is str:
                at = event.get("output_index")
                state = self._items.get(at) if type(at) is int else None
                if state is None:
                    state = self._state(event)
                text = state.text
                text.parts.append(piece)
                return [fragment(TextDelta, piece, text)]
            return []
        if kind == "error":
            raise self._error(event)
        if kind == "response.created" or kind == "response.in_progress":
            response = as_dict(event.get("response"), "response")
            self._top = {k: v for k, v in response.items() if k != "output"}
            return []
        if kind in _FINAL:
            self._final = as_dict(event.get("response"), "response")
            self._done = True
            return []
        if kind == "response.output_item.added":
            return self._added(event)
        if kind == "response.output_item.done":
            state = self._state(event)
            state.item = as_dict(event.get("item"), "item")
            return []
        return self._delta(kind, event)

    def _added(self, event: dict[str, Any]) -> list[StreamDelta]:
        item = as_dict(event.get("item"), "item")
        at = _index(event.get("output_index"), len(self._items))
        call = None
        out: list[StreamDelta] = []
        if item.get("type") == "function_call":
            call = self._calls
            self._calls += 1
            out.append(ToolCallStarted(call, tool_name(item.get("name"))))
        self._items[at] = _Item(dict(item), call)
        return out

    def _state(self, event: dict[str, Any]) -> _Item:
        at = _index(event.get("output_index"), len(self._items) - 1)
        state = self._items.get(at)
        if state is None:
            raise malformed("an event names an output item that never began", event)
        return state

    def _delta(self, kind: str, event: dict[str, Any]) -> list[StreamDelta]:
        piece = event.get("delta")
        if not isinstance(piece, str):
            return []  # done events and anything newer carry nothing to show
        state = self._state(event)
        if kind == "response.output_text.delta":
            state.text.parts.append(piece)
            return [fragment(TextDelta, piece, state.text)]
        if kind == "response.refusal.delta":
            state.refusal.parts.append(piece)
            return [fragment(RefusalDelta, piece, state.refusal)]
        if kind == "response.reasoning_summary_text.delta":
            state.reasoning.parts.append(piece)
            return [fragment(ReasoningDelta, piece, state.reasoning)]
        if kind == "response.function_call_arguments.delta" and state.call is not None:
            state.arguments.parts.append(piece)
            return [ToolArgumentsDelta(state.call, piece)]
        return []

    def _error(self, event: dict[str, Any]) -> StreamInterrupted:
        detail = event.get("error") if isinstance(event.get("error"), dict) else event
        assert isinstance(detail, dict)
        code, message = detail.get("code") or detail.get("type"), detail.get("message")
        code = code[:EXCERPT] if isinstance(code, str) and code != "error" else None
        said = message[:EXCERPT] if isinstance(message, str) else str(event)[:EXCERPT]
        return self.interrupted(
            f"the server sent an error ({code or 'untyped'}: {said})",
            error_type=code,
            server_message=said,
        )

    def _fail(self, raw: bytes) -> StreamInterrupted:
        try:
            event = load_event(raw)
        except LLMError:
            event = {"message": raw.decode("utf-8", "replace")}
        return self._error(event)

    def missing_end(self) -> str | None:
        if self._done:
            return None
        return "before response.completed (or response.incomplete)"

    def cut_shown(self) -> str | None:
        return None

    def body_so_far(self, *, partial: bool) -> dict[str, Any]:
        if self._final is not None:
            body = dict(self._final)
            if not body.get("output") and self._items:
                body["output"] = self._output()
            return body
        body = dict(self._top)
        body.setdefault("status", "in_progress")
        body["output"] = self._output()
        return body

    def _output(self) -> list[dict[str, Any]]:
        output = []
        for _, state in sorted(self._items.items()):
            item = dict(state.item)
            if item.get("type") == "function_call" and not item.get("arguments"):
                item["arguments"] = state.arguments.text()
            elif item.get("type") == "message" and not item.get("content") and state.text.parts:
                item["content"] = [{"type": "output_text", "text": state.text.text()}]
            output.append(item)
        return output

    def partial(self) -> PartialReply:
        states = [state for _, state in sorted(self._items.items())]
        return PartialReply(
            text="".join(state.text.text() for state in states),
            reasoning="".join(state.reasoning.text() for state in states),
            tool_calls=tuple(
                PartialToolCall(
                    state.call,
                    state.item.get("name") if isinstance(state.item.get("name"), str) else None,
                    state.arguments.text() or str(state.item.get("arguments") or ""),
                )
                for state in states
                if state.call is not None
            ),
            events=self._events,
            body=self.body_so_far(partial=True),
        )


def _index(value: object, default: int) -> int:
    if value is None:
        return default
    if type(value) is not int or value < 0:
        raise malformed("an output_index is not a non-negative integer", value)
    return value
