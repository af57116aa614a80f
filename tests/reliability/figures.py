"""Measured figures of the reliability runs, printed in pytest's closing summary.

Tests call `record`; the package's conftest prints every line under one heading, so CI
logs carry the figures the docs quote without ``-s``.
"""

from __future__ import annotations

LINES: list[str] = []


def record(line: str) -> None:
    """Keep one line of figures for the closing summary."""
    LINES.append(line)
