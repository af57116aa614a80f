"""A task SIGKILLed at any of its points and reopened until it finishes ends with the log of
the uninterrupted run: no event doubled, no call lost, no side effect of a non-repeatable
tool run twice, and where such a run was cut, the stated error result in its place.

The agent is `tests.agent._killed_loop`'s: three steps of parallel calls to a repeatable
and a non-repeatable tool, and a compaction before the last call; about 80 kill points
(each record's write, before and halfway; each model call, out and back; each tool, before
and after its effect). Each example kills up to three processes in turn, each at a point
hypothesis draws (counted from that process's start), then runs one to the end. Children
are forked from a preloaded server, so a kill costs a fork, not an interpreter start.
"""

from __future__ import annotations

import json
import multiprocessing
import signal
import tempfile
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nisse_llm.agent.plan import unknown_result
from nisse_llm.events.canonical import CanonicalEvent, Compaction, ToolCall, ToolResult
from nisse_llm.task.logstore import FileTaskStore
from tests.agent._killed_loop import FINAL, run_agent
from tests.agent.helpers import numbered
from tests.task.helpers import BASE_URL, TOKEN

#: Kill points an uninterrupted run passes (a resumed process passes fewer: a draw past
#: its last point lets it finish).
POINTS = 80
#: Examples per run: 1 to 3 kills drawn each, of which about 70% land (a later process has
#: fewer points to pass), so some 280 kills a run: about 70 s on 2 idle cores, a few
#: minutes on busy ones.
EXAMPLES = 200

_CONTEXT = multiprocessing.get_context("forkserver")
_CONTEXT.set_forkserver_preload(["tests.agent._killed_loop"])


def _child(folder: Path, kill_at: int) -> int | None:
    process = _CONTEXT.Process(
        target=run_agent,
        args=(
            str(folder / "task.jsonl"),
            str(folder / "effects.jsonl"),
            kill_at,
            str(folder / "kills.jsonl"),
        ),
    )
    process.start()
    process.join(120)
    return process.exitcode


def _lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


def _comparable(events: list[CanonicalEvent]) -> list[Any]:
    """The events as JSON, call ids numbered in order and a compaction's record numbers
    left out (call records make them differ from one run to another, and an error result
    in place of a tool's output may change which outputs it elides)."""
    out = numbered(events)
    for data, event in zip(out, events, strict=True):
        if isinstance(event, Compaction):
            data.update(first_seq=None, last_seq=None, elided=bool(event.elided))
    return out


@cache
def _uninterrupted() -> list[CanonicalEvent]:
    with tempfile.TemporaryDirectory() as folder:
        assert _child(Path(folder), 0) == 0
        task = FileTaskStore(Path(folder) / "task.jsonl").resume(TOKEN, base_url=BASE_URL)
        return [record.event for record in task.history]


def _expected(unknown: set[str]) -> list[Any]:
    """The uninterrupted log, with the stated error result for each run given up as
    unknown (``unknown``: those calls' numbered ids in the final log)."""
    straight = _uninterrupted()
    calls = {
        data["call_id"]: event
        for data, event in zip(numbered(straight), straight, strict=True)
        if isinstance(event, ToolCall)
    }
    fixed: list[CanonicalEvent] = []
    for data, event in zip(numbered(straight), straight, strict=True):
        if isinstance(event, ToolResult) and data["call_id"] in unknown:
            event = unknown_result(calls[data["call_id"]])
        fixed.append(event)
    return _comparable(fixed)


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(kills=st.lists(st.integers(min_value=1, max_value=POINTS + 5), min_size=1, max_size=3))
def test_killed_anywhere_and_reopened_the_task_ends_as_the_uninterrupted_run(
    kills: list[int],
) -> None:
    """Every kill leaves a file `Task.open` finishes: the final log is the uninterrupted
    one but for runs given up as unknown; each write happened at most once, exactly once
    where its result stands; every call cut mid-way is an unknown call."""
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        for kill_at in kills:
            assert _child(folder, kill_at) in (0, -signal.SIGKILL)
        assert _child(folder, 0) == 0

        task = FileTaskStore(folder / "task.jsonl").resume(TOKEN, base_url=BASE_URL)
        history = [record.event for record in task.history]
        ids = numbered(history)
        unknown = {
            ids[i]["call_id"]
            for i, event in enumerate(history)
            if isinstance(event, ToolResult) and event == unknown_result(_call_of(history, event))
        }
        assert _comparable(history) == _expected(unknown)
        assert history[-1].text == FINAL  # type: ignore[union-attr]
        calls = [e.call_id for e in history if isinstance(e, ToolCall)]
        results = [e.call_id for e in history if isinstance(e, ToolResult)]
        assert len(calls) == len(set(calls)) == len(results) == len(set(results))

        runs = Counter((r["tool"], r["path"]) for r in _lines(folder / "effects.jsonl"))
        for event in history:
            if isinstance(event, ToolCall):
                done = _result_of(history, event)
                count = runs[(event.tool, event.arguments["path"])]
                if event.tool == "write_file":
                    assert count <= 1
                    assert done.is_error or count == 1
                else:
                    assert count >= 1
                    assert not done.is_error

        killed_mid_call = sum(k["in_flight"] for k in _lines(folder / "kills.jsonl"))
        assert len(task.unknown_calls) == killed_mid_call
        assert all(c.llm_call.role == "planner" for c in task.unknown_calls)


def _call_of(history: list[CanonicalEvent], result: ToolResult) -> ToolCall:
    return next(e for e in history if isinstance(e, ToolCall) and e.call_id == result.call_id)


def _result_of(history: list[CanonicalEvent], call: ToolCall) -> ToolResult:
    return next(e for e in history if isinstance(e, ToolResult) and e.call_id == call.call_id)
