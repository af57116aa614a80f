"""What every route's stream accumulator shares: the delta types, the driver, the checks.

The public deltas a stream yields (`TextDelta`, `ReasoningDelta`, `RefusalDelta`,
`ToolCallStarted`, `ToolArgumentsDelta`); `StreamAccumulator`, the driver each route's
accumulator fills in (`nisse_llm.stream.chat`, `nisse_llm.stream.messages`,
`nisse_llm.stream.responses`); and the helpers they read events with, which raise the
malformed-stream `LLMError`. `nisse_llm.stream.deltas` picks the accumulator for a route.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeAlias

from pydantic_core import from_json

from nisse_llm.errors import LLMError, PartialReply, StreamInterrupted
from nisse_llm.events.canonical import TOOL_NAME_PATTERN, Completion
from nisse_llm.stream._fragments import TextFragment
from nisse_llm.stream._sse import ServerSentEvent, SSEDecoder

__all__ = [
    "EXCERPT",
    "ParseFn",
    "ReasoningDelta",
    "RefusalDelta",
    "StreamAccumulator",
    "StreamDelta",
    "TextDelta",
    "ToolArgumentsDelta",
    "ToolCallStarted",
    "as_dict",
    "as_index",
    "join_text",
    "load_event",
    "malformed",
    "merge_value",
    "server_error",
    "tool_name",
    "unterminated",
]


class ParseFn(Protocol):
    """A route's parser, called exactly as ``complete()`` calls it (`Renderer.parse`).

    To pass more (a ceiling to name in truncation errors), bind it:
    ``functools.partial(renderer.parse, max_tokens=n)``.
    """

    def __call__(self, body: Mapping[str, Any], *, requested_model: str) -> Completion: ...


EXCERPT = 200
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


# --- reading events: each helper raises the malformed-stream `LLMError` ----------------
# (`PartialReply` and `PartialToolCall` live in `errors`, below everything)


def malformed(what: str, data: object) -> LLMError:
    return LLMError(f"malformed stream: {what}: {str(data)[:EXCERPT]!r}")


def as_dict(value: object, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise malformed(f"{what} is not an object", value)
    return value


def as_index(value: object, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise malformed(f"{what} has no valid index", value)
    return value


def merge_value(target: dict[str, Any], key: str, value: Any) -> None:
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


def join_text(text: str | None, fragment: Any, key: str) -> str:
    if not isinstance(fragment, str):
        raise malformed(f"{key} is not a string", fragment)
    return fragment if text is None else text + fragment


def tool_name(name: object) -> str:
    """A streamed tool name, checked as the final parse checks it, before it is yielded."""
    if isinstance(name, str) and _TOOL_NAME.fullmatch(name):
        return name
    shown = name[:80] if isinstance(name, str) else name
    raise LLMError(f"tool call {shown!r} names no valid tool (names match {TOOL_NAME_PATTERN})")


def server_error(data: Mapping[str, Any]) -> tuple[str | None, str | None]:
    error = data.get("error")
    if isinstance(error, str):
        return None, error[:EXCERPT]
    if not isinstance(error, dict):
        return None, str(data)[:EXCERPT]
    kind, message = error.get("type"), error.get("message")
    return (
        kind[:_TYPE_LIMIT] if isinstance(kind, str) and kind != "None" else None,
        message[:EXCERPT] if isinstance(message, str) else None,
    )


def unterminated(arguments: str) -> bool:
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


def load_event(data: bytes) -> dict[str, Any]:
    """An event's JSON object; raises the malformed-stream `LLMError` for anything else."""
    try:
        # Parsed here first, not through `_parse`: one call less on every event.
        value = from_json(data)
    except ValueError:
        try:
            value = _parse(data)
        except ValueError as exc:
            raise malformed("an event is not JSON", _text(data)) from exc
    if type(value) is not dict:
        raise malformed("an event is not an object", value)
    return value


# --- the shared driver -------------------------------------------------------------------


class StreamAccumulator(ABC):
    """Bytes in, deltas out; at the end the route's non-streaming body, parsed.

    A route's accumulator fills the public hooks `on_data` (one event's deltas; it sets
    ``_done`` at the route's final event), `missing_end`, `cut_shown`, `body_so_far` and
    `partial`."""

    #: The route's name (its descriptor's, in `nisse_llm.routes`).
    route: str

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
        on_data = self.on_data
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
        return self.on_data("" if event.event == "message" else event.event, data)

    def finish(self) -> Completion:
        """End of stream: the reply exactly as ``complete()`` would have parsed it.

        Raises `StreamInterrupted` if the final event never came, and whatever the
        route's parser raises for the rebuilt body (`TruncatedResponse`, `LLMError`).
        """
        self._decoder.close()
        missing = self.missing_end()
        if missing is not None:
            raise self.interrupted(f"the stream ended {missing}")
        cut = self.cut_shown()
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
        return self.body_so_far(partial=False)

    @abstractmethod
    def partial(self) -> PartialReply:
        """What has arrived so far."""

    @abstractmethod
    def on_data(self, name: str, data: bytes) -> list[StreamDelta]:
        """The deltas of one event (its type, ``""`` if unnamed); sets ``_done`` at the end."""

    @abstractmethod
    def missing_end(self) -> str | None:
        """Why the stream is not complete (``ended ...``), or ``None`` if it is."""

    @abstractmethod
    def cut_shown(self) -> str | None:
        """What shows a stream closed as finished was cut (see `unterminated`), or ``None``."""

    @abstractmethod
    def body_so_far(self, *, partial: bool) -> dict[str, Any]:
        """The non-streaming body so far; ``partial`` keeps unfinished arguments raw."""

    def _fail(self, raw: bytes) -> StreamInterrupted:
        try:
            data = _parse(raw)
        except ValueError:
            data = None  # an error event need not be JSON to end the stream
        if isinstance(data, dict):
            error_type, message = server_error(data)
        else:
            error_type, message = None, _text(raw)[:EXCERPT]
        return self.interrupted(
            f"the server sent an error ({error_type or 'untyped'}: {message})",
            error_type=error_type,
            server_message=message,
        )
