"""The approval sequence killed at every point: the run that stops on the pending push,
the approval written with only the store, the run that pushes and finishes. Each phase is
a process SIGKILLed at one of its kill points, then run again unkilled, then the next
phase runs; whatever the point, the push runs at most once (exactly once unless a kill cut
it mid-run, when the model reads that its outcome is unknown), the read's result and the
approval are not lost, and the task ends with the uninterrupted run's answer."""

from __future__ import annotations

import json
import multiprocessing
import signal
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

from nisse_llm.agent.plan import unknown_result
from nisse_llm.events.canonical import ToolCall, ToolResult
from nisse_llm.task.logstore import FileTaskStore
from tests.agent._killed_approval import FINAL, run_phase
from tests.task.helpers import BASE_URL, TOKEN

_CONTEXT = multiprocessing.get_context("forkserver")
_CONTEXT.set_forkserver_preload(["tests.agent._killed_approval"])
PHASES = ("run", "approve", "run")


def _child(folder: Path, phase: str, kill_at: int) -> int | None:
    process = _CONTEXT.Process(
        target=run_phase,
        args=(
            phase,
            str(folder / "task.jsonl"),
            str(folder / "effects.log"),
            kill_at,
            str(folder / "kills.log"),
        ),
    )
    process.start()
    process.join(120)
    return process.exitcode


def _lines(path: Path) -> list[Any]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _points(folder: Path) -> list[int]:
    """How many kill points each phase of an uninterrupted sequence passes (a kill point far
    past the end counts them: the child notes none and exits 0)."""
    counts = []
    for phase in PHASES:
        low, high = 1, 200
        while low < high:  # the first point the phase does not reach
            middle = (low + high) // 2
            with tempfile.TemporaryDirectory() as name:
                trial = Path(name)
                for earlier in PHASES[: len(counts)]:
                    assert _child(trial, earlier, 0) == 0
                reached = _child(trial, phase, middle) == -signal.SIGKILL
            low, high = (middle + 1, high) if reached else (low, middle)
        counts.append(low - 1)
    return counts


@cache
def _uninterrupted() -> tuple[list[Any], list[int]]:
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        for phase in PHASES:
            assert _child(folder, phase, 0) == 0
        task = FileTaskStore(folder / "task.jsonl").resume(TOKEN, base_url=BASE_URL)
        return [r.event for r in task.history], _points(folder)


def _cases() -> list[tuple[int, int]]:
    _, counts = _uninterrupted()
    return [(phase, at) for phase, count in enumerate(counts) for at in range(1, count + 1)]


def test_the_approval_sequence_killed_at_every_point_runs_nothing_twice() -> None:
    straight, counts = _uninterrupted()
    assert counts[1] >= 2  # the approval's record: before it, halfway
    for phase_at, kill_at in _cases():
        with tempfile.TemporaryDirectory() as name:
            folder = Path(name)
            for n, phase in enumerate(PHASES):
                if n == phase_at:
                    assert _child(folder, phase, kill_at) == -signal.SIGKILL, (phase, kill_at)
                assert _child(folder, phase, 0) == 0, (phase, kill_at)
            _check(folder, straight, (phase_at, kill_at))


def _check(folder: Path, straight: list[Any], case: tuple[int, int]) -> None:
    task = FileTaskStore(folder / "task.jsonl").resume(TOKEN, base_url=BASE_URL)
    history = [r.event for r in task.history]
    runs = [r["tool"] for r in _lines(folder / "effects.log")]
    push = next(e for e in history if isinstance(e, ToolCall) and e.tool == "git_push")
    result = next(e for e in history if isinstance(e, ToolResult) and e.call_id == push.call_id)
    assert runs.count("git_push") <= 1, case
    assert runs.count("git_push") == 1 or result == unknown_result(push), case
    assert len(history) == len(straight), case
    assert _lines(folder / "results.jsonl")[-1] == {"text": FINAL, "pending": 0}, case
    found = FileTaskStore(folder / "task.jsonl").read()
    assert [r.approval.outcome for r in found.approvals] == ["pending", "approved"], case
