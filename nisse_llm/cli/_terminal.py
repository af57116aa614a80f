"""Text from a server made safe to print on a terminal, and tables of text.

A reply or an error body may hold ESC, OSC or other control sequences (retitling the
window, rewriting earlier lines, hiding text). `printable` shows every C0 and C1 control
character, DEL included, as a visible ``\\xNN`` escape; newlines and tabs are kept.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TextIO

__all__ = ["printable", "table"]

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """``text`` with its control characters (but ``\\n`` and ``\\t``) escaped."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def table(out: TextIO, rows: Sequence[tuple[str, ...]]) -> None:
    """Write ``rows`` as left-aligned columns two spaces apart, trailing spaces cut."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        out.write("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
        out.write("\n")
