"""What changed between the tools a task was offered and the tools offered now (pure).

A resumed task compares the specs it last recorded with the toolbox's current ones (an MCP
server may have been upgraded, removed or reconfigured in between): the same tools, or a
`ToolChanges` saying which were added, removed or changed, so the caller can refuse to
resume or tell the model. A spec is compared as the model sees it: whether a tool may run
again after a cut run is the loop's business, not the model's, and no record keeps it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from nisse_llm.events.tools import ToolSpec

__all__ = ["ToolChanges", "tool_changes"]


@dataclass(frozen=True, slots=True)
class ToolChanges:
    """Tools by name: offered now but not then, then but not now, and offered both times
    with another description or schema. Empty (false) when nothing changed."""

    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.changed)

    def __str__(self) -> str:
        if not self:
            return "the same tools"
        parts = [
            f"{label} {', '.join(names)}"
            for label, names in (
                ("added", self.added),
                ("removed", self.removed),
                ("changed", self.changed),
            )
            if names
        ]
        return "tools changed since the task last offered them: " + "; ".join(parts)


def tool_changes(
    recorded: Iterable[ToolSpec | Mapping[str, Any]], current: Iterable[ToolSpec]
) -> ToolChanges:
    """How ``current`` differs from ``recorded`` (specs, or their JSON as a task file holds
    them), each list of names in the order of the list it comes from."""
    before = {spec.name: _seen(spec) for spec in map(_spec, recorded)}
    now = {spec.name: _seen(spec) for spec in current}
    return ToolChanges(
        added=tuple(name for name in now if name not in before),
        removed=tuple(name for name in before if name not in now),
        changed=tuple(name for name in now if name in before and now[name] != before[name]),
    )


def _seen(spec: ToolSpec) -> dict[str, Any]:
    """The spec as the model sees it (its JSON: ``repeatable`` left out)."""
    return spec.model_dump(mode="json")


def _spec(value: ToolSpec | Mapping[str, Any]) -> ToolSpec:
    return value if isinstance(value, ToolSpec) else ToolSpec.model_validate(value)
