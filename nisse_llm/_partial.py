"""What a broken stream delivered, carried by `nisse_llm.errors.StreamInterrupted`.

Exported by `nisse_llm.errors` (and `nisse_llm`); kept in a module of its own so a
program that never streams never defines these classes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["PartialReply", "PartialToolCall"]


@dataclass(frozen=True, slots=True)
class PartialToolCall:
    """A tool call as far as it arrived: its name (if it came) and raw argument JSON."""

    index: int
    tool: str | None
    arguments: str


@dataclass(frozen=True, slots=True)
class PartialReply:
    """What a broken stream delivered, for diagnosis; never a result to act on.

    ``body`` is the reply so far in the route's non-streaming shape (tool arguments
    that did not finish are kept as raw strings). It belongs to the error tree (`nisse_llm.errors`
    exports it, beside the error that carries it) and imports nothing above it.
    """

    text: str
    reasoning: str
    tool_calls: tuple[PartialToolCall, ...]
    events: int
    body: dict[str, Any] = field(repr=False)
