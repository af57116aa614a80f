"""Incremental server-sent events decoder (sans-I/O): byte chunks in, complete events out.

Follows the WHATWG "event stream interpretation" rules: lines end in CRLF, LF or CR (a
CRLF may be split across chunks); a leading BOM is dropped; ``:`` lines are comments;
``data`` lines join with newlines; ``id`` persists across events (ignored if it holds a
NUL); an event with no data is not dispatched; an unterminated event at end of stream
is discarded. Lines are split as bytes (CR and LF never occur inside a UTF-8 sequence),
so a chunk boundary inside a character costs nothing; invalid UTF-8 becomes U+FFFD.

Speed: while a stream holds no CR (every LLM API and proxy measured ends lines in LF),
bytes are cut at blank lines (``\\n\\n``) into whole events, and an event that is one
``data:`` line, optionally after one ``event:`` line (nearly every event of a reply),
is taken without a line loop. Anything else in an event goes through the line rules,
and the first CR switches the stream to them for good.

Bounded: an event whose bytes pass `MAX_EVENT_BYTES` before its blank line, a line
longer than `MAX_LINE_BYTES`, or an event whose data lines add up to more than
`MAX_EVENT_BYTES` raises `EventTooLarge` (a server flooding one line or one event must
not grow memory until the reply's size cap).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias

__all__ = [
    "MAX_EVENT_BYTES",
    "MAX_LINE_BYTES",
    "EventTooLarge",
    "RawEvent",
    "SSEDecoder",
    "ServerSentEvent",
]

_BOM = b"\xef\xbb\xbf"
#: Longest line accepted (a whole reply in one ``data:`` line fits: some servers send one).
MAX_LINE_BYTES = 16 * 1024 * 1024
#: Most bytes one event may carry before its blank line (its data lines joined, by lines).
MAX_EVENT_BYTES = 16 * 1024 * 1024


class EventTooLarge(ValueError):
    """A line or an event of the stream passed its size limit."""


#: One dispatched event before decoding: its type ("" when unnamed), data bytes, last id.
RawEvent: TypeAlias = tuple[str, bytes, str | None]


@dataclass(frozen=True, slots=True)
class ServerSentEvent:
    """One dispatched event: its type (``message`` when unnamed), data and last event id."""

    data: str
    event: str = "message"
    id: str | None = None


class SSEDecoder:
    """Feed byte chunks split anywhere; get back each event as soon as its blank line arrives."""

    __slots__ = (
        "_data",
        "_event",
        "_last_id",
        "_lines",
        "_names",
        "_parked",
        "_partial",
        "_skip_lf",
        "_started",
        "retry_ms",
    )

    def __init__(self) -> None:
        # Bytes not yet dispatched: since the last blank line (by events), or of a line
        # whose end has not arrived yet (by lines).
        self._partial: list[bytes] = []
        self._parked = 0  # their total length
        self._lines = False  # a CR was seen: decode line by line from now on
        self._skip_lf = False  # the last chunk ended in CR: a leading LF completes a CRLF
        self._started = False  # past the (optional) BOM
        self._data: list[bytes] = []
        self._event = ""
        self._last_id: str | None = None
        self._names: dict[bytes, str] = {}
        #: The reconnection time the server last asked for, if it did.
        self.retry_ms: int | None = None

    @property
    def pending(self) -> bool:
        """Whether part of an event (or of a line) has arrived but not been dispatched."""
        return bool(self._partial or self._data or self._event)

    def feed(self, chunk: bytes) -> list[ServerSentEvent]:
        """The events completed by this chunk, in order (often none, sometimes several)."""
        return [
            ServerSentEvent(data.decode("utf-8", "replace"), name or "message", last_id)
            for name, data, last_id in self.feed_raw(chunk)
        ]

    def feed_raw(self, chunk: bytes) -> list[RawEvent]:
        """`feed`, with each event's data left as bytes and an unnamed event's type ``""``."""
        if not chunk:
            return []
        if not self._started:
            chunk = self._strip_bom(chunk)
            if not chunk:
                return []
        if self._lines:
            return self._feed_lines(chunk)
        if b"\r" in chunk:
            self._lines = True
            pending = b"".join(self._partial)
            self._partial = []
            self._parked = 0
            return self._feed_lines(pending + chunk)
        partial = self._partial
        if b"\n\n" not in chunk and not (
            chunk[:1] == b"\n" and partial and partial[-1][-1:] == b"\n"
        ):
            # No event ends here: park it (joined once, not per chunk, so a long event
            # arriving in tiny chunks stays linear).
            partial.append(chunk)
            self._park(len(chunk), MAX_EVENT_BYTES, "an event")
            return []
        if partial:
            partial.append(chunk)
            chunk = b"".join(partial)
            self._partial = partial = []
        blocks = chunk.split(b"\n\n")
        tail = blocks.pop()  # empty when the chunk ends with its event
        self._parked = 0
        if tail:
            partial.append(tail)
            self._park(len(tail), MAX_EVENT_BYTES, "an event")
        events: list[RawEvent] = []
        names = self._names
        for block in blocks:
            # The hot path first: "data: {...}", with or without one "event: x" line before.
            if block[:6] == b"data: ":
                if b"\n" not in block:
                    events.append(("", block[6:], self._last_id))
                    continue
            elif block[:7] == b"event: ":
                head, _, rest = block.partition(b"\n")
                if rest[:6] == b"data: " and b"\n" not in rest:
                    name = names.get(head)
                    if name is None:
                        name = names[head] = head[7:].decode("utf-8", "replace")
                    events.append((name, rest[6:], self._last_id))
                    continue
            for line in block.split(b"\n"):
                self._line(line, events)
            self._line(b"", events)
        return events

    def close(self) -> None:
        """End of stream: any undispatched event is discarded, as the standard requires."""
        self._partial = []
        self._parked = 0
        self._data = []
        self._event = ""
        self._skip_lf = False

    def _strip_bom(self, chunk: bytes) -> bytes:
        # A BOM may itself arrive split; decide only once three bytes are known.
        head = b"".join(self._partial) + chunk if self._partial else chunk
        if len(head) < 3 and _BOM.startswith(head):
            self._partial = [head]
            return b""
        self._partial = []
        self._started = True
        return head[3:] if head.startswith(_BOM) else head

    def _feed_lines(self, chunk: bytes) -> list[RawEvent]:
        if self._skip_lf:
            self._skip_lf = False
            if chunk[:1] == b"\n":
                chunk = chunk[1:]
                if not chunk:
                    return []
        if b"\n" not in chunk and b"\r" not in chunk:
            self._partial.append(chunk)
            self._park(len(chunk), MAX_LINE_BYTES, "a line")
            return []
        if self._partial:
            self._partial.append(chunk)
            chunk = b"".join(self._partial)
            self._partial = []
        self._parked = 0
        ends = chunk.splitlines(keepends=True)
        last = ends[-1]
        if last.endswith(b"\r"):
            self._skip_lf = True
        elif not last.endswith(b"\n"):
            self._partial.append(ends.pop())
            self._park(len(self._partial[-1]), MAX_LINE_BYTES, "a line")
        events: list[RawEvent] = []
        for line in ends:
            self._line(line.rstrip(b"\r\n"), events)
        if self._data and sum(map(len, self._data)) > MAX_EVENT_BYTES:
            raise EventTooLarge(f"an event of the stream passed {MAX_EVENT_BYTES} bytes of data")
        return events

    def _park(self, size: int, limit: int, what: str) -> None:
        self._parked += size
        if self._parked > limit:
            raise EventTooLarge(f"{what} of the stream passed {limit} bytes")

    def _line(self, line: bytes, events: list[RawEvent]) -> None:
        if not line:
            data = self._data
            if data:
                events.append(
                    (self._event, data[0] if len(data) == 1 else b"\n".join(data), self._last_id)
                )
                self._data = []
            self._event = ""
            return
        if line[:6] == b"data: ":
            self._data.append(line[6:])
            return
        if line[:1] == b":":
            return
        name, colon, value = line.partition(b":")
        if colon and value[:1] == b" ":
            value = value[1:]
        if name == b"data":
            self._data.append(value)
        elif name == b"event":
            self._event = value.decode("utf-8", "replace")
        elif name == b"id":
            if b"\x00" not in value:
                self._last_id = value.decode("utf-8", "replace")
        elif name == b"retry" and value.isdigit():
            self.retry_ms = int(value)
        # Any other field is ignored, as the standard requires.
