"""Shared pieces of the loop's tests: tools with side effects kept in a file, a task over a
scripted router, and the log with its call ids numbered in order."""

from __future__ import annotations

import dataclasses
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

from nisse_llm.events.canonical import CanonicalEvent, ToolCall, ToolResult
from nisse_llm.task.logstore import AsyncFileTaskStore, FileTaskStore
from nisse_llm.testing import Reply, ScriptedRouter, ToolUse, reply
from nisse_llm.testing.router import AsyncScriptedRouter

QUESTION = "Fix the failing test."


class SideEffects:
    """Tools whose every run is appended to ``effects`` (a file, so a killed process's runs
    are counted too): ``read_file`` (repeatable) and ``write_file`` (not)."""

    def __init__(self, effects: Path) -> None:
        self.effects = effects

    def _note(self, tool: str, path: str) -> None:
        with self.effects.open("a", encoding="utf-8") as out:
            out.write(json.dumps({"tool": tool, "path": path}) + "\n")

    def read_file(self, path: str) -> str:
        """Read a file."""
        self._note("read_file", path)
        return f"contents of {path}"

    def write_file(self, path: str, text: str) -> str:
        """Write a file."""
        self._note("write_file", path)
        return f"wrote {len(text)} characters to {path}"

    def runs(self) -> list[dict[str, str]]:
        if not self.effects.exists():
            return []
        return [json.loads(line) for line in self.effects.read_text().splitlines()]


def priced(turn: Reply, cost: str) -> Reply:
    """``turn`` with the proxy's cost header."""
    return dataclasses.replace(turn, headers=(("x-litellm-response-cost", cost),))


def scripted(path: Path, *turns: Reply | str, asynchronous: bool = False) -> Any:
    """A scripted router whose executor answers ``turns``, recording in the task file (an
    async router in an `AsyncTaskStore`)."""
    if asynchronous:
        return AsyncScriptedRouter({"executor": list(turns)}, store=AsyncFileTaskStore(path))
    return ScriptedRouter({"executor": list(turns)}, store=FileTaskStore(path))


def two_steps() -> list[Reply | str]:
    """Read, then write, then a final answer."""
    return [
        reply("Let me look.", ToolUse("read_file", {"path": "a.py"})),
        reply(ToolUse("write_file", {"path": "a.py", "text": "fixed"})),
        "Fixed it.",
    ]


def numbered(events: list[CanonicalEvent]) -> list[Any]:
    """The events as JSON with call ids renumbered in order of appearance (a call made again
    gets a fresh minted id; the log is otherwise the same)."""
    ids: dict[str, str] = {}
    out = []
    for event in events:
        data = event.model_dump(mode="json")
        if isinstance(event, ToolCall | ToolResult):
            data["call_id"] = ids.setdefault(event.call_id, f"call_{len(ids)}")
        out.append(data)
    return out


ZERO = Decimal(0)
