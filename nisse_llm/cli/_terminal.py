"""Text from a server made safe to print on a terminal.

A reply or an error body may hold ESC, OSC or other control sequences (retitling the
window, rewriting earlier lines, hiding text). `printable` shows every C0 and C1 control
character, DEL included, as a visible ``\\xNN`` escape; newlines and tabs are kept.
"""

from __future__ import annotations

import re

__all__ = ["printable"]

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """``text`` with its control characters (but ``\\n`` and ``\\t``) escaped."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
