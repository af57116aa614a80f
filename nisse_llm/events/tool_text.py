"""What the model reads of a tool's run: a return value as a result's text, and arguments
that failed validation as feedback it can act on (pure)."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError
from pydantic_core import to_json

__all__ = ["result_text", "validation_feedback"]

#: How many characters of a rejected value the feedback quotes.
_QUOTE_LIMIT = 80


def result_text(value: Any) -> str:
    """A tool's return value as the result's text, deterministically: a ``str`` as it is,
    ``bytes`` decoded as UTF-8 (invalid bytes replaced), anything else as compact JSON
    (pydantic's serializer; ``None`` is ``null``)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", "replace")
    return to_json(value, fallback=repr).decode()


def _quote(value: Any) -> str:
    text = result_text(value) if not isinstance(value, str) else repr(value)
    return text if len(text) <= _QUOTE_LIMIT else text[: _QUOTE_LIMIT - 3] + "..."


def validation_feedback(tool: str, error: ValidationError) -> str:
    """The model-facing text for arguments that failed validation: one line per problem."""
    lines = [f"Invalid arguments for tool {tool!r}:"]
    for problem in error.errors(include_url=False):
        where = ".".join(str(part) for part in problem["loc"]) or "(arguments)"
        line = f"- {where}: {problem['msg']}"
        if problem["type"] not in ("missing", "extra_forbidden") and "input" in problem:
            line += f" (got {_quote(problem['input'])})"
        lines.append(line)
    lines.append(f"Call {tool!r} again with arguments that match its schema.")
    return "\n".join(lines)
