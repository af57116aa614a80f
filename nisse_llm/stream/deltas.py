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
"""

from __future__ import annotations

import json
import re
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeAlias

from pydantic_core import from_json

from nisse_llm.config.routing import Route
from nisse_llm.errors import LLMError, PartialReply, PartialToolCall, StreamInterrupted
from nisse_llm.log.canonical import (
    TOOL_NAME_PATTERN,
    AssistantText,
    Completion,
    Reasoning,
    ToolCall,
)
from nisse_llm.stream._envelope import Envelope
from nisse_llm.stream._fragments import Joined, TextFragment, fragment
from nisse_llm.stream._sse import ServerSentEvent, SSEDecoder

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


class ParseFn(Protocol):
    """A route's parser, called exactly as ``complete()`` calls it (`Renderer.parse`).

    To pass more (a ceiling to name in truncation errors), bind it:
    ``functools.partial(renderer.parse, max_tokens=n)``.
    """

    def __call__(self, body: Mapping[str, Any], *, requested_model: str) -> Completion: ...


_EXCERPT = 200
# Longest error type kept from a server (real ones are a few words).
_TYPE_LIMIT = 120
_TOOL_NAME = re.compile(TOOL_NAME_PATTERN)


# --- deltas ------------------------------------------------------------------------------


# The three text deltas are frozen (text, text_so_far) pairs whose ``text_so_far`` is
# joined from the block's fragments only when read (see nisse_llm/stream/_fragments.py).


class TextDelta(TextFragment):
    """Reply text arrived; ``text_so_far`` is the current text block (a future `AssistantText`)."""

    __slots__ = ()


class ReasoningDelta(TextFragment):
    """Reasoning text arrived; ``text_so_far`` is the current reasoning block's text."""

    __slots__ = ()


class RefusalDelta(TextFragment):
    """Refusal text arrived (chat route); the reply will end in `ModelRefusal`."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class ToolCallStarted:
    """The model began calling ``tool``; ``index`` is the call's position in the reply."""

    index: int
    tool: str


@dataclass(frozen=True, slots=True)
class ToolArgumentsDelta:
    """A fragment of call ``index``'s JSON arguments (whole only once the call ends)."""

    index: int
    partial_json: str


StreamDelta: TypeAlias = (
    TextDelta | ReasoningDelta | RefusalDelta | ToolCallStarted | ToolArgumentsDelta
)


# --- failure: `PartialReply` and `PartialToolCall` live in `errors` (below everything) ---


def _malformed(what: str, data: object) -> LLMError:
    return LLMError(f"malformed stream: {what}: {str(data)[:_EXCERPT]!r}")


def _as_dict(value: object, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _malformed(f"{what} is not an object", value)
    return value


def _as_index(value: object, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise _malformed(f"{what} has no valid index", value)
    return value


def _merge_value(target: dict[str, Any], key: str, value: Any) -> None:
    # Fields a route streams that the accumulator does not know: strings arrive in
    # fragments (joined), lists in batches (extended), anything else whole.
    if value is None:
        target.setdefault(key, None)
        return
    current = target.get(key)
    if isinstance(current, str) and isinstance(value, str):
        target[key] = current + value
    elif isinstance(current, list) and isinstance(value, list):
        current.extend(value)
    else:
        target[key] = value


def _join(text: str | None, fragment: Any, key: str) -> str:
    if not isinstance(fragment, str):
        raise _malformed(f"{key} is not a string", fragment)
    return fragment if text is None else text + fragment


def _tool_name(name: object) -> str:
    """A streamed tool name, checked as the final parse checks it, before it is yielded."""
    if isinstance(name, str) and _TOOL_NAME.fullmatch(name):
        return name
    shown = name[:80] if isinstance(name, str) else name
    raise LLMError(f"tool call {shown!r} names no valid tool (names match {TOOL_NAME_PATTERN})")


def _server_error(data: Mapping[str, Any]) -> tuple[str | None, str | None]:
    error = data.get("error")
    if isinstance(error, str):
        return None, error[:_EXCERPT]
    if not isinstance(error, dict):
        return None, str(data)[:_EXCERPT]
    kind, message = error.get("type"), error.get("message")
    return (
        kind[:_TYPE_LIMIT] if isinstance(kind, str) and kind != "None" else None,
        message[:_EXCERPT] if isinstance(message, str) else None,
    )


def _unterminated(arguments: str) -> bool:
    """Whether tool arguments are an object cut short: valid JSON up to where they stop.

    LiteLLM 1.108.7 closes a stream whose upstream ended early as if it had finished
    (on ``/chat/completions``, and on ``/v1/messages`` to an OpenAI upstream): an
    invented ``finish_reason: "stop"`` / ``stop_reason: "end_turn"``, usage and the final
    event. Arguments that are a proper prefix of a JSON object under a finish reason
    other than the tool-call one (or the output ceiling) can only come from such a cut;
    arguments that are wrong in any other way (two objects run together, stray text)
    are not a cut and still fail the reply as bad arguments.
    """
    if not arguments.lstrip().startswith("{"):
        return False
    try:
        from_json(arguments)
    except ValueError as exc:
        return str(exc).startswith("EOF while parsing")
    return False


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def _parse(data: bytes) -> Any:
    """An event's JSON; invalid UTF-8 in it reads as U+FFFD, as the SSE rules decode it."""
    try:
        return from_json(data)
    except ValueError:
        text = _text(data)
        if text.encode() == data:
            raise
        return from_json(text)


def _load(data: bytes) -> dict[str, Any]:
    try:
        value = _parse(data)
    except ValueError as exc:
        raise _malformed("an event is not JSON", _text(data)) from exc
    if type(value) is not dict:
        raise _malformed("an event is not an object", value)
    return value


# --- the shared driver -------------------------------------------------------------------


class StreamAccumulator(ABC):
    """Bytes in, deltas out; at the end the route's non-streaming body, parsed."""

    route: Route

    def __init__(self, *, requested_model: str, parse: ParseFn) -> None:
        self.requested_model = requested_model
        self._parse = parse
        self._decoder = SSEDecoder()
        self._events = 0
        self._done = False

    @property
    def done(self) -> bool:
        """Whether the route's final event arrived (later bytes are ignored)."""
        return self._done

    def feed(self, chunk: bytes) -> list[StreamDelta]:
        """The deltas this chunk completes; raises `StreamInterrupted` on an error event."""
        if self._done:
            return []
        out: list[StreamDelta] = []
        on_data = self._on_data
        for name, data, _ in self._decoder.feed_raw(chunk):
            self._events += 1
            if name == "error":
                raise self._fail(data)
            out += on_data(name, data)
            if self._done:
                break
        return out

    def feed_event(self, event: ServerSentEvent) -> list[StreamDelta]:
        """The deltas one decoded event yields."""
        if self._done:
            return []
        self._events += 1
        data = event.data.encode("utf-8", "surrogatepass")
        if event.event == "error":
            raise self._fail(data)
        return self._on_data("" if event.event == "message" else event.event, data)

    def finish(self) -> Completion:
        """End of stream: the reply exactly as ``complete()`` would have parsed it.

        Raises `StreamInterrupted` if the final event never came, and whatever the
        route's parser raises for the rebuilt body (`TruncatedResponse`, `LLMError`).
        """
        self._decoder.close()
        missing = self._missing_end()
        if missing is not None:
            raise self.interrupted(f"the stream ended {missing}")
        cut = self._cut_shown()
        if cut is not None:
            raise self.interrupted(f"the stream was closed as finished, but {cut}")
        return self._parse(self.response_body(), requested_model=self.requested_model)

    def interrupted(
        self,
        reason: str,
        *,
        error_type: str | None = None,
        server_message: str | None = None,
    ) -> StreamInterrupted:
        """The exception for a stream that broke now (cut, stalled, error), with what arrived."""
        partial = self.partial()
        return StreamInterrupted(
            f"{self.route} stream for {self.requested_model} interrupted: {reason} "
            f"(after {partial.events} events, {len(partial.text)} characters of text)",
            partial=partial,
            error_type=error_type,
            server_message=server_message,
        )

    def response_body(self) -> dict[str, Any]:
        """The body the route's non-streaming API would have returned for this reply."""
        return self._body(partial=False)

    @abstractmethod
    def partial(self) -> PartialReply:
        """What has arrived so far."""

    @abstractmethod
    def _on_data(self, name: str, data: bytes) -> list[StreamDelta]:
        """The deltas of one event (its type, ``""`` if unnamed); sets ``_done`` at the end."""

    @abstractmethod
    def _missing_end(self) -> str | None:
        """Why the stream is not complete (``ended ...``), or ``None`` if it is."""

    @abstractmethod
    def _cut_shown(self) -> str | None:
        """What shows a stream closed as finished was cut (see `_unterminated`), or ``None``."""

    @abstractmethod
    def _body(self, *, partial: bool) -> dict[str, Any]:
        """The non-streaming body so far; ``partial`` keeps unfinished arguments raw."""

    def _fail(self, raw: bytes) -> StreamInterrupted:
        try:
            data = _parse(raw)
        except ValueError:
            data = None  # an error event need not be JSON to end the stream
        if isinstance(data, dict):
            error_type, message = _server_error(data)
        else:
            error_type, message = None, _text(raw)[:_EXCERPT]
        return self.interrupted(
            f"the server sent an error ({error_type or 'untyped'}: {message})",
            error_type=error_type,
            server_message=message,
        )


# --- OpenAI chat completions -------------------------------------------------------------


class _ToolCallState:
    __slots__ = ("arguments", "extra", "id", "name", "type")

    def __init__(self) -> None:
        self.id: str | None = None
        self.type: str | None = None
        self.name: str | None = None
        self.arguments = ""
        self.extra: dict[str, Any] = {}


class _ChoiceState:
    __slots__ = (
        "content",
        "extra",
        "finish_reason",
        "nulls",
        "reasoning",
        "refusal",
        "role",
        "text",
        "thinking",
        "thinking_at",
        "tool_calls",
    )

    def __init__(self) -> None:
        self.role: str | None = None
        # None: the field never came as text (a Joined) or as content parts (a list).
        self.text: Joined | None = None
        self.content: list[Any] | None = None
        self.refusal: str | None = None
        self.reasoning: Joined | None = None
        self.thinking: list[dict[str, Any]] = []
        self.thinking_at: dict[int, dict[str, Any]] = {}
        self.tool_calls: dict[int, _ToolCallState] = {}
        self.finish_reason: str | None = None
        self.extra: dict[str, Any] = {}
        #: Known fields that came only as null (kept, so the rebuilt body has them too).
        self.nulls: set[str] = set()


# Known delta fields with their own rules; `provider_specific_fields` is LiteLLM's
# duplicate of thinking_blocks and citations, already carried by the fields themselves.
_OPENAI_KNOWN = frozenset(
    {
        "role",
        "content",
        "refusal",
        "reasoning_content",
        "thinking_blocks",
        "tool_calls",
        "provider_specific_fields",
    }
)
# Chunk fields that are not the completion's: OpenAI pads each chunk with random
# `obfuscation` characters against length side channels.
_OPENAI_NOT_TOP = frozenset({"choices", "usage", "object", "obfuscation", "error"})


class OpenAIChatStreamAccumulator(StreamAccumulator):
    """``chat.completion.chunk`` events -> deltas -> the ``chat.completion`` body.

    Tool calls are assembled by ``index`` (id and name may come only on a call's first
    delta; calls may interleave); usage comes from the final chunk with empty
    ``choices`` (requests send ``stream_options.include_usage``); LiteLLM's
    ``reasoning_content`` and ``thinking_blocks`` fragments are joined. Deltas are
    yielded for choice 0, the one a reply is parsed from.
    """

    route: Route = "openai_chat"

    def __init__(self, *, requested_model: str, parse: ParseFn) -> None:
        super().__init__(requested_model=requested_model, parse=parse)
        self._top: dict[str, Any] = {}
        # Top-level fields already known (non-null), checked as a set before a slower walk.
        self._top_known: set[str] = set(_OPENAI_NOT_TOP)
        self._choices: dict[int, _ChoiceState] = {}
        self._first: _ChoiceState | None = None  # choice 0, the reply
        self._usage: Any = None
        # The last text-only chunk's bytes around its text (see nisse_llm/stream/_envelope.py).
        self._envelope = Envelope()

    def _on_data(self, name: str, data: bytes) -> list[StreamDelta]:
        if data[:1] != b"{" and data.strip() == b"[DONE]":
            self._done = True
            return []
        text = self._envelope.match(data)
        if text is not None:
            # The last text-only chunk again, with new text: its other fields are the
            # same bytes, already applied.
            state = self._first
            if state is not None and state.text is not None and state.content is None:
                if not text:
                    return []
                state.text.parts.append(text)
                return [fragment(TextDelta, text, state.text)]
        try:
            chunk = from_json(data)
        except ValueError:
            chunk = _load(data)  # invalid UTF-8 read as U+FFFD, or the malformed-stream error
        if type(chunk) is not dict:
            chunk = _load(data)
        if chunk.get("error") is not None:
            # LiteLLM reports a failure after the first byte as a chunk {"error": {...}}.
            raise self._fail(data)
        if not chunk.keys() <= self._top_known:
            for key, value in chunk.items():
                if key not in self._top_known:
                    self._top[key] = value
                    if value is not None:
                        self._top_known.add(key)
        usage = chunk.get("usage")
        if usage is not None:
            self._usage = usage
        choices = chunk.get("choices")
        if choices is None:
            return []
        if not isinstance(choices, list):
            raise _malformed("choices is not a list", choices)
        out: list[StreamDelta] = []
        for choice in choices:
            if type(choice) is not dict:
                choice = _as_dict(choice, "a choice")
            index = choice.get("index", 0)
            target: list[StreamDelta] | None = out
            if index == 0 and type(index) is int:
                state = self._first
                if state is None:
                    state = self._first = self._choices[0] = _ChoiceState()
            else:
                index = _as_index(index, "a choice")
                state = self._choices.get(index)
                if state is None:
                    state = self._choices[index] = _ChoiceState()
                if index:
                    target = None
            delta = choice.get("delta")
            if delta:
                if type(delta) is not dict:
                    delta = _as_dict(delta, "a delta")
                text = delta.get("content")
                if len(delta) == 1 and type(text) is str and state.content is None:
                    # The hot path: a delta of reply text and nothing else.
                    joined = state.text
                    if joined is None:
                        joined = state.text = Joined()
                    if text:
                        joined.parts.append(text)
                        if target is not None:
                            target.append(fragment(TextDelta, text, joined))
                    if target is not None and len(choices) == 1 and self._envelope.tries > 0:
                        self._envelope.learn(data, b'"content":"', text)
                else:
                    self._apply(state, delta, target)
            elif delta is not None:
                self._apply(state, _as_dict(delta, "a delta"), target)
            finish = choice.get("finish_reason")
            if finish is not None:
                state.finish_reason = finish
        return out

    def _apply(
        self, state: _ChoiceState, delta: dict[str, Any], out: list[StreamDelta] | None
    ) -> None:
        for key, value in delta.items():
            if value is None:
                if key in _OPENAI_KNOWN:
                    state.nulls.add(key)
                else:
                    _merge_value(state.extra, key, None)
            elif key == "content":
                self._apply_content(state, value, out)
            elif key == "tool_calls":
                if not isinstance(value, list):
                    raise _malformed("tool_calls is not a list", value)
                for call in value:
                    self._apply_tool_call(state, _as_dict(call, "a tool call delta"), out)
            elif key == "role":
                if state.role is None and isinstance(value, str):
                    state.role = value
            elif key == "refusal":
                state.refusal = _join(state.refusal, value, key)
                if out is not None and value:
                    out.append(RefusalDelta(value, state.refusal))
            elif key == "reasoning_content":
                if type(value) is not str:
                    raise _malformed(f"{key} is not a string", value)
                reasoning = state.reasoning
                if reasoning is None:
                    reasoning = state.reasoning = Joined()
                if value:
                    reasoning.parts.append(value)
                    if out is not None:
                        out.append(fragment(ReasoningDelta, value, reasoning))
            elif key == "thinking_blocks":
                if not isinstance(value, list):
                    raise _malformed("thinking_blocks is not a list", value)
                for block in value:
                    _merge_thinking(state, _as_dict(block, "a thinking block"))
            elif key != "provider_specific_fields":
                _merge_value(state.extra, key, value)

    @staticmethod
    def _apply_content(state: _ChoiceState, text: Any, out: list[StreamDelta] | None) -> None:
        if type(text) is str:
            if state.content is not None:
                raise _malformed("content mixes parts and text", text)
            joined = state.text
            if joined is None:
                joined = state.text = Joined()
            if text:
                joined.parts.append(text)
                if out is not None:
                    out.append(fragment(TextDelta, text, joined))
        elif isinstance(text, list):
            if state.text is not None and state.text.parts:
                raise _malformed("content mixes text and parts", text)
            state.content = [*(state.content or []), *text]
        elif text is not None:
            raise _malformed("content is not a string", text)

    @staticmethod
    def _apply_tool_call(
        state: _ChoiceState, call: dict[str, Any], out: list[StreamDelta] | None
    ) -> None:
        raw_index = call.get("index")
        function = call.get("function")
        if function is None:
            function = {}
        function = _as_dict(function, "a tool call's function")
        name = function.get("name")
        if raw_index is None:
            # Some compatible servers omit the index: a name starts a call, else continue.
            count = len(state.tool_calls)
            raw_index = count if (name or count == 0) else max(state.tool_calls)
        index = _as_index(raw_index, "a tool call delta")
        tool = state.tool_calls.get(index)
        if tool is None:
            tool = state.tool_calls[index] = _ToolCallState()
        call_id, kind = call.get("id"), call.get("type")
        if isinstance(call_id, str) and call_id and not tool.id:
            tool.id = call_id
        if isinstance(kind, str) and kind and tool.type is None:
            tool.type = kind
        if isinstance(name, str) and name and not tool.name:
            tool.name = _tool_name(name)
            if out is not None:
                out.append(ToolCallStarted(index, name))
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            if arguments:
                tool.arguments += arguments
                if out is not None:
                    out.append(ToolArgumentsDelta(index, arguments))
        elif isinstance(arguments, dict):
            # A compatible server may send the arguments object whole.
            text = json.dumps(arguments)
            tool.arguments += text
            if out is not None:
                out.append(ToolArgumentsDelta(index, text))
        elif arguments is not None:
            raise _malformed("tool call arguments are not a string", arguments)
        for key, value in call.items():
            if key not in ("index", "id", "type", "function"):
                _merge_value(tool.extra, key, value)

    def _missing_end(self) -> str | None:
        if not self._done:
            return "before [DONE]"
        if not self._choices:
            return "with no choices"
        # Only choice 0 is the reply: LiteLLM's re-streamed chunks drop finish_reason for
        # the choices after the first, so their missing finish is no interruption.
        first = self._choices.get(0)
        if first is None or first.finish_reason is None:
            return "without a finish_reason for choice 0"
        return None

    def _cut_shown(self) -> str | None:
        state = self._choices[0]
        finish = state.finish_reason
        if finish in ("length", "content_filter"):
            return None  # the parser's own failure says more (TruncatedResponse, ModelRefusal)
        if finish not in ("tool_calls", "function_call"):
            for _, call in sorted(state.tool_calls.items()):
                if _unterminated(call.arguments):
                    return (
                        f"tool call {call.name!r}'s arguments stop mid-JSON "
                        f"(finish_reason {finish!r})"
                    )
        for block in state.thinking:
            # A finished Anthropic thinking block always carries its signature; LiteLLM
            # sends it last, in a fragment of its own.
            if block.get("type") == "thinking" and not block.get("signature"):
                return "a thinking block came without its signature"
        return None

    def _body(self, *, partial: bool) -> dict[str, Any]:
        body: dict[str, Any] = dict(self._top)
        body["object"] = "chat.completion"
        body["choices"] = [
            {
                "index": index,
                "message": _openai_message(state),
                "finish_reason": state.finish_reason,
                "logprobs": None,
            }
            for index, state in sorted(self._choices.items())
        ]
        if self._usage is not None:
            body["usage"] = self._usage
        return body

    def partial(self) -> PartialReply:
        state = self._choices.get(0) or _ChoiceState()
        return PartialReply(
            text=state.text.text() if state.text is not None and state.content is None else "",
            reasoning=state.reasoning.text() if state.reasoning is not None else "",
            tool_calls=tuple(
                PartialToolCall(index, call.name, call.arguments)
                for index, call in sorted(state.tool_calls.items())
            ),
            events=self._events,
            body=self._body(partial=True),
        )


def _merge_thinking(state: _ChoiceState, fragment: dict[str, Any]) -> None:
    # LiteLLM streams each Anthropic thinking block as fragments tagged with the block's
    # index: its text in pieces, then one with empty text and the signature. The
    # non-streaming message carries the blocks whole and untagged.
    at = fragment.get("index")
    block: dict[str, Any] | None
    if isinstance(at, int):
        block = state.thinking_at.get(at)
    else:
        last = state.thinking[-1] if state.thinking else None
        joinable = (
            last is not None
            and last.get("type") == "thinking" == fragment.get("type")
            and not last.get("signature")
        )
        block = last if joinable else None
    if block is None:
        block = {}
        state.thinking.append(block)
        if isinstance(at, int):
            state.thinking_at[at] = block
    for key, value in fragment.items():
        if key == "index":
            continue
        current = block.get(key)
        if key in ("thinking", "signature", "data") and isinstance(value, str):
            block[key] = (current or "") + value if isinstance(current, str | None) else value
        elif value is not None or key not in block:
            block[key] = value


def _openai_message(state: _ChoiceState) -> dict[str, Any]:
    message: dict[str, Any] = {"role": state.role or "assistant"}
    # Fields that came only as null first, so that any value that came later wins.
    message.update((key, None) for key in state.nulls if key != "provider_specific_fields")
    message.update(state.extra)
    if state.content is not None:
        message["content"] = state.content
    else:
        message["content"] = state.text.text() if state.text is not None else None
    if state.refusal is not None:
        message["refusal"] = state.refusal
    if state.reasoning is not None:
        message["reasoning_content"] = state.reasoning.text()
    if state.thinking:
        message["thinking_blocks"] = [dict(block) for block in state.thinking]
    if state.tool_calls:
        message["tool_calls"] = [
            {
                **call.extra,
                "id": call.id or "",
                "type": call.type or "function",
                "function": {"name": call.name or "", "arguments": call.arguments},
            }
            for _, call in sorted(state.tool_calls.items())
        ]
    return message


# --- Anthropic messages ------------------------------------------------------------------


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

    route: Route = "anthropic_messages"

    def __init__(self, *, requested_model: str, parse: ParseFn) -> None:
        super().__init__(requested_model=requested_model, parse=parse)
        self._message: dict[str, Any] | None = None
        self._blocks: dict[int, _BlockState] = {}
        self._tools = 0
        # The last text or thinking delta's bytes around its fragment, and where such
        # fragments go (see nisse_llm/stream/_envelope.py).
        self._envelope = Envelope()
        self._envelope_to: tuple[type[TextFragment], Joined] | None = None

    def _on_data(self, name: str, raw: bytes) -> list[StreamDelta]:
        text = self._envelope.match(raw)
        if text is not None and self._envelope_to is not None:
            # The last text (or thinking) delta again, for the same block, with new text.
            if not text:
                return []
            cls, joined = self._envelope_to
            joined.parts.append(text)
            return [fragment(cls, text, joined)]
        data = _load(raw)
        kind = data.get("type", name or "message")
        if kind == "content_block_delta" and self._message is not None:
            return self._delta(data, raw)
        if kind == "error":
            raise self._fail(raw)
        if kind == "ping":
            return []
        if kind == "message_start":
            if self._message is not None:
                raise _malformed("a second message_start", data)
            started = dict(_as_dict(data.get("message"), "message_start's message"))
            started["content"] = []
            self._message = started
            return []
        message = self._message
        if message is None:
            if kind in _ANTHROPIC_EVENTS:
                raise _malformed(f"{kind} before message_start", data)
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
        index = _as_index(data.get("index"), str(data.get("type")))
        state = self._blocks.get(index)
        if state is None:
            raise _malformed(f"{data.get('type')} for a block that never started", data)
        return state

    def _start_block(self, data: dict[str, Any]) -> list[StreamDelta]:
        index = _as_index(data.get("index"), "content_block_start")
        if index in self._blocks:
            raise _malformed("a block started twice", data)
        block = dict(_as_dict(data.get("content_block"), "content_block_start's block"))
        kind = block.get("type")
        tool_index = None
        out: list[StreamDelta] = []
        if kind == "tool_use":
            tool_index = self._tools
            self._tools += 1
            out.append(ToolCallStarted(tool_index, _tool_name(block.get("name"))))
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
            delta = _as_dict(delta, "content_block_delta's delta")
        block = state.block
        kind = delta.get("type")
        if kind == "text_delta":
            text = delta.get("text")
            if type(text) is not str:
                text = _fragment(delta, "text")
            joined = state.grow("text")
            self._learn(data, delta, raw, b'"text":"', text, (TextDelta, joined))
            if not text:
                return []
            joined.parts.append(text)
            return [fragment(TextDelta, text, joined)]
        if kind == "input_json_delta":
            text = _fragment(delta, "partial_json")
            state.json_parts.append(text)
            if state.tool_index is None or not text:
                return []
            return [ToolArgumentsDelta(state.tool_index, text)]
        if kind == "thinking_delta":
            text = _fragment(delta, "thinking")
            joined = state.grow("thinking")
            self._learn(data, delta, raw, b'"thinking":"', text, (ReasoningDelta, joined))
            if not text:
                return []
            joined.parts.append(text)
            return [fragment(ReasoningDelta, text, joined)]
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

    def _missing_end(self) -> str | None:
        if self._message is None:
            return "before message_start"
        if not self._done:
            return "before message_stop"
        return None

    def _cut_shown(self) -> str | None:
        stop = (self._message or {}).get("stop_reason")
        if stop in ("tool_use", "max_tokens"):
            return None
        for _, state in sorted(self._blocks.items()):
            if state.tool_index is not None and _unterminated("".join(state.json_parts)):
                name = state.block.get("name")
                return f"tool call {name!r}'s arguments stop mid-JSON (stop_reason {stop!r})"
        return None

    def _body(self, *, partial: bool) -> dict[str, Any]:
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
        raise LLMError(f"tool call {name!r} had arguments that are {shape}: {raw[:_EXCERPT]!r}")

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
            body=self._body(partial=True),
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
        raise _malformed(f"{delta.get('type')} has no {key} string", delta)
    return value


def _text_of(block: dict[str, Any], key: str) -> str:
    value = block.get(key)
    return value if isinstance(value, str) else ""


def _merge_message_delta(message: dict[str, Any], data: dict[str, Any]) -> None:
    delta = data.get("delta")
    if delta is not None:
        message.update(_as_dict(delta, "message_delta's delta"))
    usage = data.get("usage")
    if usage is not None:
        merged = dict(message.get("usage") or {})
        # Counts in message_delta are cumulative; absent or null ones keep message_start's.
        merged.update(
            (k, v) for k, v in _as_dict(usage, "message_delta's usage").items() if v is not None
        )
        message["usage"] = merged


def accumulator_for(route: Route, *, requested_model: str, parse: ParseFn) -> StreamAccumulator:
    """A fresh accumulator for one streamed reply on ``route``."""
    if route == "openai_responses":
        from nisse_llm.stream.responses import ResponsesStreamAccumulator

        return ResponsesStreamAccumulator(requested_model=requested_model, parse=parse)
    cls: type[StreamAccumulator] = (
        OpenAIChatStreamAccumulator if route == "openai_chat" else AnthropicStreamAccumulator
    )
    return cls(requested_model=requested_model, parse=parse)


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
