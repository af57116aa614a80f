"""Incremental server-sent events decoder (sans-I/O): byte chunks in, complete events out.

Follows the WHATWG "event stream interpretation" rules: lines end in CRLF, LF or CR (a
CRLF may be split across chunks); a leading BOM is dropped; ``:`` lines are comments;
``data`` lines join with newlines; ``id`` persists across events (ignored if it holds a
NUL); an event with no data is not dispatched; an unterminated event at end of stream
is discarded. Lines are split as bytes (CR and LF never occur inside a UTF-8 sequence),
so a chunk boundary inside a character costs nothing; invalid UTF-8 becomes U+FFFD.

Bounded: a line longer than `MAX_LINE_BYTES`, or an event whose data lines add up to
more than `MAX_EVENT_BYTES`, raises `EventTooLarge` (a server flooding one line or one
event must not grow memory until the reply's size cap).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["MAX_EVENT_BYTES", "MAX_LINE_BYTES", "EventTooLarge", "SSEDecoder", "ServerSentEvent"]

_BOM = b"\xef\xbb\xbf"
#: Longest line accepted (a whole reply in one ``data:`` line fits: some servers send one).
MAX_LINE_BYTES = 16 * 1024 * 1024
#: Most data one event may carry, its lines joined.
MAX_EVENT_BYTES = 16 * 1024 * 1024


class EventTooLarge(ValueError):
    """A line or an event of the stream passed its size limit."""


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
        "_parked",
        "_partial",
        "_skip_lf",
        "_started",
        "retry_ms",
    )

    def __init__(self) -> None:
        self._partial: list[bytes] = []  # bytes of a line whose end has not arrived yet
        self._parked = 0  # their total length
        self._skip_lf = False  # the last chunk ended in CR: a leading LF completes a CRLF
        self._started = False  # past the (optional) BOM
        self._data: list[str] = []
        self._event = ""
        self._last_id: str | None = None
        #: The reconnection time the server last asked for, if it did.
        self.retry_ms: int | None = None

    @property
    def pending(self) -> bool:
        """Whether part of an event (or of a line) has arrived but not been dispatched."""
        return bool(self._partial or self._data or self._event)

    def feed(self, chunk: bytes) -> list[ServerSentEvent]:
        """The events completed by this chunk, in order (often none, sometimes several)."""
        if not chunk:
            return []
        if self._skip_lf:
            self._skip_lf = False
            if chunk[:1] == b"\n":
                chunk = chunk[1:]
                if not chunk:
                    return []
        if b"\n" not in chunk and b"\r" not in chunk:
            # No line ends here: park it (joined once, not per chunk, so a long line
            # arriving in tiny chunks stays linear).
            self._partial.append(chunk)
            self._parked += len(chunk)
            if self._parked > MAX_LINE_BYTES:
                raise EventTooLarge(f"a line of the stream passed {MAX_LINE_BYTES} bytes")
            if not self._started:
                self._strip_bom()
            return []
        if self._partial:
            self._partial.append(chunk)
            chunk = b"".join(self._partial)
            self._partial = []
            self._parked = 0
        if not self._started:
            self._started = True
            if chunk.startswith(_BOM):
                chunk = chunk[3:]
        if b"\r" in chunk:
            ends = chunk.splitlines(keepends=True)
            last = ends[-1]
            if last.endswith(b"\r"):
                self._skip_lf = True
            elif not last.endswith(b"\n"):
                self._partial.append(ends.pop())
                self._parked = len(self._partial[-1])
            lines = [line.rstrip(b"\r\n") for line in ends]
        else:
            lines = chunk.split(b"\n")
            tail = lines.pop()  # empty when the chunk ends with its line
            if tail:
                self._partial.append(tail)
                self._parked = len(tail)
        events: list[ServerSentEvent] = []
        data = self._data
        for line in lines:
            # The hot path first: nearly every line of a reply is "data: {...}".
            if line[:6] == b"data: ":
                data.append(line[6:].decode("utf-8", "replace"))
            elif line:
                self._field(line)
            else:
                if data:
                    events.append(
                        ServerSentEvent(
                            data=data[0] if len(data) == 1 else "\n".join(data),
                            event=self._event or "message",
                            id=self._last_id,
                        )
                    )
                    data = self._data = []
                self._event = ""
        if data and sum(map(len, data)) > MAX_EVENT_BYTES:
            raise EventTooLarge(f"an event of the stream passed {MAX_EVENT_BYTES} bytes of data")
        return events

    def close(self) -> None:
        """End of stream: any undispatched event is discarded, as the standard requires."""
        self._partial = []
        self._parked = 0
        self._data = []
        self._event = ""
        self._skip_lf = False

    def _strip_bom(self) -> None:
        # A BOM may itself arrive split; decide only once three bytes are known.
        head = b"".join(self._partial)
        if len(head) < 3 and _BOM.startswith(head):
            return
        self._started = True
        if head.startswith(_BOM):
            self._partial = [head[3:]] if len(head) > 3 else []

    def _field(self, line: bytes) -> None:
        if line[:1] == b":":
            return
        name, colon, value = line.partition(b":")
        if colon and value[:1] == b" ":
            value = value[1:]
        if name == b"data":
            self._data.append(value.decode("utf-8", "replace"))
        elif name == b"event":
            self._event = value.decode("utf-8", "replace")
        elif name == b"id":
            if b"\x00" not in value:
                self._last_id = value.decode("utf-8", "replace")
        elif name == b"retry" and value.isdigit():
            self.retry_ms = int(value)
        # Any other field is ignored, as the standard requires.
