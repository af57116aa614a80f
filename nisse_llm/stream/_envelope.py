"""Reading a stream's text events without parsing them: the envelope of the last one.

Nearly every event of a streamed reply is the same JSON envelope around a new text
fragment: ``{"id":"chatcmpl-1",...,"delta":{"content":"<fragment>"},...}`` on the chat
route, ``{"type":"content_block_delta","index":0,"delta":{"type":"text_delta",
"text":"<fragment>"}}`` on the messages route. Once one such event has been parsed,
the bytes before and after its fragment are kept; an event made of exactly those bytes
around a run of plain string characters (no quote, backslash or control character, so
it cannot end the string or change the structure, and needs no unescaping) is the same
event with another fragment, and its text is that run, decoded. Anything else, or
bytes that are not UTF-8, is parsed as JSON as before. A stream whose envelopes never
repeat (OpenAI pads each chunk with random ``obfuscation``) stops being learnt from
after a few tries, so it costs nothing.
"""

from __future__ import annotations

import re

__all__ = ["Envelope"]

# What a JSON string's raw run may not hold: a quote, a backslash, a control character.
_UNSAFE = re.compile(rb'["\\\x00-\x1f]')
_TRIES = 4


class Envelope:
    """The bytes around one string field of the last text event on a stream."""

    __slots__ = ("_prefix", "_size", "_suffix", "tries")

    def __init__(self) -> None:
        self._prefix = b""
        self._suffix = b""
        self._size = -1  # len(prefix) + len(suffix); -1: nothing learnt
        #: Learning attempts left; a match gives them back.
        self.tries = _TRIES

    def learn(self, data: bytes, key: bytes, text: str) -> bool:
        """Keep ``data``'s envelope around the string ``key`` whose parsed value is ``text``.

        ``key`` is the field's name with its colon and opening quote (``b'"text":"'``);
        it must occur exactly once, and its value be written raw (no escapes), so the
        kept bytes surround exactly the value.
        """
        self.tries -= 1
        self._size = -1
        at = data.find(key)
        if at < 0 or data.find(key, at + 1) >= 0:
            return False
        start = at + len(key)
        end = data.find(b'"', start)
        raw = data[start:end]
        if end < 0 or _UNSAFE.search(raw) is not None or raw != text.encode():
            return False
        self._prefix, self._suffix = data[:start], data[end:]
        self._size = start + len(data) - end
        return True

    def match(self, data: bytes) -> str | None:
        """The fragment, if ``data`` is the kept envelope around a plain run; else ``None``."""
        size = self._size
        if (
            size < 0
            or len(data) < size
            or not data.startswith(self._prefix)
            or not data.endswith(self._suffix)
        ):
            return None
        raw = data[len(self._prefix) : len(data) - len(self._suffix)]
        if _UNSAFE.search(raw) is not None:
            return None
        try:
            text = raw.decode()
        except UnicodeDecodeError:
            return None
        self.tries = _TRIES
        return text
