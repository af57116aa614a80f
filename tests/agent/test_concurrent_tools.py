"""`AsyncTask` runs a reply's tool calls at most ``max_concurrent_tools`` at once: each start
record written before its tool starts, the results appended in call order; 1 keeps the
order of one after another."""

from __future__ import annotations

import asyncio
import itertools
import time
from pathlib import Path

import pytest

from nisse_llm import AsyncTask, StoredEvent, Toolbox, ToolCall, ToolResult
from nisse_llm.task.logstore import FileTaskStore
from nisse_llm.task.records import StoredToolRun
from nisse_llm.testing import ToolUse, reply
from tests.agent.helpers import QUESTION, scripted

#: How long each tool takes: long enough that three overlap on a busy machine.
NAP_S = 0.3


def _napping(spans: dict[str, tuple[float, float]]) -> Toolbox:
    async def nap(name: str) -> str:
        """Wait a while."""
        began = time.monotonic()
        await asyncio.sleep(NAP_S if name != "a" else NAP_S * 2)  # the first ends last
        spans[name] = (began, time.monotonic())
        return f"napped {name}"

    return Toolbox([nap])


def _three_naps() -> list[object]:
    return [reply(*(ToolUse("nap", {"name": n}) for n in "abc")), "Rested."]


async def _step(path: Path, limit: int) -> tuple[dict[str, tuple[float, float]], list[object]]:
    spans: dict[str, tuple[float, float]] = {}
    llm = scripted(path, *_three_naps(), asynchronous=True)
    async with llm, AsyncTask.open(path, llm.pin, router=llm, prompt=QUESTION) as task:
        step = await task.step("executor", tools=_napping(spans), max_concurrent_tools=limit)
    return spans, list(step.results)


async def test_three_tools_of_one_reply_run_at_once(tmp_path: Path) -> None:
    """With room for three, the three runs overlap (each starts before any ends); every
    start record precedes every result, and the results follow the calls' order."""
    path = tmp_path / "task.jsonl"
    spans, results = await _step(path, 3)
    assert max(began for began, _ in spans.values()) < min(ended for _, ended in spans.values())
    records = [
        r for r in FileTaskStore(path).read().records if isinstance(r, StoredToolRun | StoredEvent)
    ]
    calls = [
        r.event for r in records if isinstance(r, StoredEvent) and isinstance(r.event, ToolCall)
    ]
    starts = [n for n, r in enumerate(records) if isinstance(r, StoredToolRun)]
    ended = [
        n
        for n, r in enumerate(records)
        if isinstance(r, StoredEvent) and isinstance(r.event, ToolResult)
    ]
    assert len(starts) == 3
    assert max(starts) < min(ended)
    answered = [records[n].event.call_id for n in ended]  # type: ignore[union-attr]
    assert answered == [c.call_id for c in calls]
    assert [r.output for r in results] == ["napped a", "napped b", "napped c"]  # type: ignore[attr-defined]


async def test_one_at_a_time_keeps_todays_order(tmp_path: Path) -> None:
    """``max_concurrent_tools=1`` (the default) runs each tool after the one before ended."""
    spans, _ = await _step(tmp_path / "task.jsonl", 1)
    ordered = [spans[n] for n in "abc"]
    assert all(before[1] <= after[0] for before, after in itertools.pairwise(ordered))


async def test_a_limit_below_one_is_refused(tmp_path: Path) -> None:
    """``max_concurrent_tools=0`` is a `ValueError`, before any tool runs."""
    with pytest.raises(ValueError, match="max_concurrent_tools"):
        await _step(tmp_path / "task.jsonl", 0)
