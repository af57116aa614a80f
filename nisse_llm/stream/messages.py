"""The messages route's stream (``/v1/messages``): events in, deltas out, the reply at the end."""

from __future__ import annotations

from typing import Any

from pydantic_core import from_json

from nisse_llm.errors import LLMError, PartialReply, PartialToolCall
from nisse_llm.routes.anthropic_messages import ANTHROPIC_MESSAGES
from nisse_llm.stream._envelope import Envelope
from nisse_llm.stream._fragments import Joined, TextFragment, fragment
from nisse_llm.stream.base import (
    EXCERPT,
    ParseFn,
    ReasoningDelta,
    StreamAccumulator,
    StreamDelta,
    TextDelta,
    ToolArgumentsDelta,
    ToolCallStarted,
    as_dict,
    as_index,
    load_event,
    malformed,
    tool_name,
    unterminated,
)

__all__ = ["AnthropicStreamAccumulator"]


class _BlockState:
    __slots__ = ("block", "joined", "json_parts", "tool_index")

    def __init__(self, block: dict[str, Any], tool_index: int | None) -> None:
        self.block = block
        self.json_parts: list[str] = []
        #: The block's position among the reply's client tool calls, if it is one.
        self.tool_index = tool_index
        #: Streamed text fields ("text", "thinking"), by key, as they grow.
        self.joined: dict[str, Joined] = {}

    def grow(self, key: str) -> Joined:
        """The growing text of field ``key``, started from the block's own value."""
        joined = self.joined.get(key)
        if joined is None:
            joined = self.joined[key] = Joined()
            start = self.block.get(key)
            if isinstance(start, str) and start:
                joined.parts.append(start)
        return joined

    def text_of(self, key: str) -> str:
        """Field ``key``'s text so far ("" if it is not a string)."""
        joined = self.joined.get(key)
        return joined.text() if joined is not None else _text_of(self.block, key)

    def whole(self) -> dict[str, Any]:
        """A copy of the block with its streamed text fields joined."""
        block = dict(self.block)
        for key, joined in self.joined.items():
            block[key] = joined.text()
        return block


# The deltas that grow a block's text: the field they carry, its key as the raw bytes
# show it (for the envelope), and the delta they yield.
_TEXT_DELTAS: dict[str, tuple[str, bytes, type[TextFragment]]] = {
    "text_delta": ("text", b'"text":"', TextDelta),
    "thinking_delta": ("thinking", b'"thinking":"', ReasoningDelta),
}
# Blocks whose input streams as input_json_delta; only tool_use is the client's to run.
_INPUT_BLOCKS = frozenset({"tool_use", "server_tool_use", "mcp_tool_use"})


class AnthropicStreamAccumulator(StreamAccumulator):
    """Messages-route events -> deltas -> the ``message`` body.

    ``message_start`` opens the message; ``content_block_start/delta/stop`` build its
    blocks (``text_delta``, ``input_json_delta``, ``thinking_delta``,
    ``signature_delta``, ``citations_delta``; redacted thinking arrives whole);
    ``message_delta`` sets the stop reason and updates usage (its counts are
    cumulative); ``message_stop`` ends it. ``ping`` and event types this version does
    not know are ignored, as Anthropic's versioning policy asks of clients.
    """

    route = ANTHROPIC_MESSAGES.name

    def __init__(self, *, requested_model: str, parse: ParseFn) -> None:
        super().__init__(requested_model=requested_model, parse=parse)
        self._message: dict[str, Any] | None = None
        self._blocks: dict[int, _BlockState] = {}
        self._tools = 0
        # The last text or thinking delta's bytes around its fragment, and where such
        # fragments go (see nisse_llm/stream/_envelope.py).
        self._envelope = Envelope()
        self._envelope_to: tuple[type[TextFragment], Joined] | None = None

    def on_data(self, name: str, raw: bytes) -> list[StreamDelta]:
        text = self._envelope.match(raw)
        if text is not None and self._envelope_to is not None:
            # The last text (or thinking) delta again, for the same block, with new text.
            if not text:
                return []
            cls, joined = self._envelope_to
            joined.parts.append(text)
            return [fragment(cls, text, joined)]
        data = load_event(raw)
        kind = data.get("type", name or "message")
        if kind == "content_block_delta" and self._message is not None:
            return self._delta(data, raw)
        if kind == "error":
            raise self._fail(raw)
        if kind == "ping":
            return []
        if kind == "message_start":
            if self._message is not None:
                raise malformed("a second message_start", data)
            started = dict(as_dict(data.get("message"), "message_start's message"))
            started["content"] = []
            self._message = started
            return []
        message = self._message
        if message is None:
            if kind in _ANTHROPIC_EVENTS:
                raise malformed(f"{kind} before message_start", data)
            return []
        if kind == "content_block_start":
            return self._start_block(data)
        if kind == "content_block_delta":
            return self._delta(data, raw)
        if kind == "content_block_stop":
            self._block(data)
            return []
        if kind == "message_delta":
            _merge_message_delta(message, data)
            return []
        if kind == "message_stop":
            self._done = True
        return []

    def _block(self, data: dict[str, Any]) -> _BlockState:
        index = as_index(data.get("index"), str(data.get("type")))
        state = self._blocks.get(index)
        if state is None:
            raise malformed(f"{data.get('type')} for a block that never started", data)
        return state

    def _start_block(self, data: dict[str, Any]) -> list[StreamDelta]:
        index = as_index(data.get("index"), "content_block_start")
        if index in self._blocks:
            raise malformed("a block started twice", data)
        block = dict(as_dict(data.get("content_block"), "content_block_start's block"))
        kind = block.get("type")
        tool_index = None
        out: list[StreamDelta] = []
        if kind == "tool_use":
            tool_index = self._tools
            self._tools += 1
            out.append(ToolCallStarted(tool_index, tool_name(block.get("name"))))
        state = self._blocks[index] = _BlockState(block, tool_index)
        if kind == "text" and isinstance(block.get("text"), str) and block["text"]:
            out.append(fragment(TextDelta, block["text"], state.grow("text")))
        elif kind == "thinking" and isinstance(block.get("thinking"), str) and block["thinking"]:
            out.append(fragment(ReasoningDelta, block["thinking"], state.grow("thinking")))
        return out

    def _delta(self, data: dict[str, Any], raw: bytes = b"") -> list[StreamDelta]:
        index = data.get("index")
        state = self._blocks.get(index) if type(index) is int else None
        if state is None:
            state = self._block(data)
        delta = data.get("delta")
        if type(delta) is not dict:
            delta = as_dict(delta, "content_block_delta's delta")
        block = state.block
        kind = delta.get("type")
        grows = _TEXT_DELTAS.get(kind) if type(kind) is str else None
        if grows is not None:
            key, raw_key, cls = grows
            text = delta.get(key)
            if type(text) is not str:
                text = _fragment(delta, key)
            joined = state.grow(key)
            self._learn(data, delta, raw, raw_key, text, (cls, joined))
            if not text:
                return []
            joined.parts.append(text)
            return [fragment(cls, text, joined)]
        if kind == "input_json_delta":
            text = _fragment(delta, "partial_json")
            state.json_parts.append(text)
            if state.tool_index is None or not text:
                return []
            return [ToolArgumentsDelta(state.tool_index, text)]
        if kind == "signature_delta":
            block["signature"] = _text_of(block, "signature") + _fragment(delta, "signature")
            return []
        if kind == "citations_delta":
            citations = block.get("citations")
            if not isinstance(citations, list):
                citations = block["citations"] = []
            citations.append(delta.get("citation"))
        return []

    def _learn(
        self,
        data: dict[str, Any],
        delta: dict[str, Any],
        raw: bytes,
        key: bytes,
        text: str,
        to: tuple[type[TextFragment], Joined],
    ) -> None:
        # Only an event holding nothing but the block's index and the fragment: applying
        # its other bytes again changes nothing.
        envelope = self._envelope
        if raw and envelope.tries > 0 and len(data) == 3 and len(delta) == 2:
            self._envelope_to = to if envelope.learn(raw, key, text) else None

    def missing_end(self) -> str | None:
        if self._message is None:
            return "before message_start"
        if not self._done:
            return "before message_stop"
        return None

    def cut_shown(self) -> str | None:
        stop = (self._message or {}).get("stop_reason")
        if stop in ("tool_use", "max_tokens"):
            return None
        for _, state in sorted(self._blocks.items()):
            if state.tool_index is not None and unterminated("".join(state.json_parts)):
                name = state.block.get("name")
                return f"tool call {name!r}'s arguments stop mid-JSON (stop_reason {stop!r})"
        return None

    def body_so_far(self, *, partial: bool) -> dict[str, Any]:
        body = dict(self._message or {})
        body["content"] = [
            self._finish_block(state, partial=partial) for _, state in sorted(self._blocks.items())
        ]
        return body

    def _finish_block(self, state: _BlockState, *, partial: bool) -> dict[str, Any]:
        block = state.whole()
        if block.get("type") not in _INPUT_BLOCKS or not state.json_parts:
            return block
        raw = "".join(state.json_parts)
        if not raw.strip():
            return block
        try:
            arguments = from_json(raw)
        except ValueError:
            arguments = None
        if isinstance(arguments, dict):
            block["input"] = arguments
            return block
        if partial or (self._message or {}).get("stop_reason") == "max_tokens":
            # Cut off mid-arguments: the parser raises TruncatedResponse for the reply,
            # as it does for the same reply unstreamed; keep the raw text for diagnosis.
            block["partial_json"] = raw
            return block
        name = block.get("name")
        shape = "not JSON" if arguments is None else f"{type(arguments).__name__}, not an object"
        raise LLMError(f"tool call {name!r} had arguments that are {shape}: {raw[:EXCERPT]!r}")

    def partial(self) -> PartialReply:
        blocks = [state for _, state in sorted(self._blocks.items())]
        return PartialReply(
            text="".join(s.text_of("text") for s in blocks if s.block.get("type") == "text"),
            reasoning="".join(
                s.text_of("thinking") for s in blocks if s.block.get("type") == "thinking"
            ),
            tool_calls=tuple(
                PartialToolCall(
                    s.tool_index,
                    s.block.get("name") if isinstance(s.block.get("name"), str) else None,
                    "".join(s.json_parts),
                )
                for s in blocks
                if s.tool_index is not None
            ),
            events=self._events,
            body=self.body_so_far(partial=True),
        )


_ANTHROPIC_EVENTS = frozenset(
    {
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    }
)


def _fragment(delta: dict[str, Any], key: str) -> str:
    value = delta.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise malformed(f"{delta.get('type')} has no {key} string", delta)
    return value


def _text_of(block: dict[str, Any], key: str) -> str:
    value = block.get(key)
    return value if isinstance(value, str) else ""


def _merge_message_delta(message: dict[str, Any], data: dict[str, Any]) -> None:
    delta = data.get("delta")
    if delta is not None:
        message.update(as_dict(delta, "message_delta's delta"))
    usage = data.get("usage")
    if usage is not None:
        merged = dict(message.get("usage") or {})
        # Counts in message_delta are cumulative; absent or null ones keep message_start's.
        merged.update(
            (k, v) for k, v in as_dict(usage, "message_delta's usage").items() if v is not None
        )
        message["usage"] = merged
