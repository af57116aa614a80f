"""The two-role program (a planner's `run_as`, a `say` handing its plan over, an executor's
`run` with tools) is one task: SIGKILLed at any of its points and run again from the top
until it finishes, it ends with the uninterrupted run's log, returns the same values, said
its handover once, ran no non-repeatable tool twice, and made each model call of the
uninterrupted run once upstream (plus a repeat of a call a kill cut short). A program that
asks something else afterwards gets `TaskDiverged`.

The program is `tests.agent._killed_program`'s, driven by `Task` or by `AsyncTask` running
a reply's tool calls concurrently (hypothesis draws which). Each example kills up to three
processes in turn, each at a point counted from that process's start, then runs one to the
end; children are forked from a preloaded server, as in `test_crash_equivalence`.
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

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nisse_llm import Task, TaskDiverged
from nisse_llm.agent.plan import unknown_result
from nisse_llm.events.canonical import CanonicalEvent, ToolCall, ToolResult, UserText
from nisse_llm.task.logstore import FileTaskStore
from nisse_llm.transport.routers import RoleRouter
from tests.agent._killed_program import EXECUTOR, HANDOVER, PLANNER, Plan, run_program
from tests.agent.helpers import numbered
from tests.task.helpers import BASE_URL, TOKEN, make_pin

#: Kill points an uninterrupted run passes (about 35 records, two points each, four model
#: calls out and back, four tool runs before and after).
POINTS = 86
#: Examples per run: some 200 kills, about a minute on 2 idle cores.
EXAMPLES = 80

_CONTEXT = multiprocessing.get_context("forkserver")
_CONTEXT.set_forkserver_preload(["tests.agent._killed_program"])


def _child(folder: Path, kill_at: int, concurrent: int) -> int | None:
    process = _CONTEXT.Process(
        target=run_program,
        args=(
            str(folder / "task.jsonl"),
            str(folder / "effects.jsonl"),
            kill_at,
            str(folder / "kills.jsonl"),
            str(folder / "results.jsonl"),
            concurrent,
        ),
    )
    process.start()
    process.join(120)
    return process.exitcode


def _lines(path: Path) -> list[Any]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


@cache
def _uninterrupted() -> tuple[list[CanonicalEvent], dict[str, Any], tuple[str, ...]]:
    """The uninterrupted run's log, returned values and upstream requests."""
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        assert _child(folder, 0, 1) == 0
        task = FileTaskStore(folder / "task.jsonl").resume(TOKEN, base_url=BASE_URL)
        (values,) = _lines(folder / "results.jsonl")
        requests = tuple((folder / "requests.txt").read_text().split())
        return [record.event for record in task.history], values, requests


def _expected(history: list[CanonicalEvent]) -> list[Any]:
    """The uninterrupted log, with the stated error result where ``history`` gave a run up
    as unknown."""
    straight, _, _ = _uninterrupted()
    ids = numbered(history)
    unknown = {
        ids[i]["call_id"]
        for i, event in enumerate(history)
        if isinstance(event, ToolResult) and event == unknown_result(_call_of(history, event))
    }
    calls = {
        data["call_id"]: event
        for data, event in zip(numbered(straight), straight, strict=True)
        if isinstance(event, ToolCall)
    }
    fixed = [
        unknown_result(calls[data["call_id"]])
        if isinstance(event, ToolResult) and data["call_id"] in unknown
        else event
        for data, event in zip(numbered(straight), straight, strict=True)
    ]
    return numbered(fixed)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    kills=st.lists(st.integers(min_value=1, max_value=POINTS + 5), min_size=1, max_size=3),
    concurrent=st.sampled_from([1, 3]),
)
def test_the_two_role_program_killed_anywhere_and_rerun_ends_as_the_uninterrupted_run(
    kills: list[int], concurrent: int
) -> None:
    """Every kill leaves a task the program, run again from the top, finishes: the log and
    the returned values are the uninterrupted run's (but for runs given up as unknown), the
    handover is said once, each write ran at most once, each model call reached the upstream
    once, again only for a call a kill cut (mid-call, or before its reply was written); a
    changed program is refused."""
    _, values, requests = _uninterrupted()
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        for kill_at in kills:
            assert _child(folder, kill_at, concurrent) in (0, -signal.SIGKILL)
        assert _child(folder, 0, concurrent) == 0

        task = FileTaskStore(folder / "task.jsonl").resume(TOKEN, base_url=BASE_URL)
        history = [record.event for record in task.history]
        assert numbered(history) == _expected(history)
        assert all(found == values for found in _lines(folder / "results.jsonl"))
        said = [e for e in history if isinstance(e, UserText) and e.text.startswith(HANDOVER)]
        assert len(said) == 1

        runs = Counter((r["tool"], r["path"]) for r in _lines(folder / "effects.jsonl"))
        for event in history:
            if isinstance(event, ToolCall) and event.tool == "write_file":
                count = runs[(event.tool, event.arguments["path"])]
                assert count <= 1
                assert _result_of(history, event).is_error or count == 1

        killed_mid_call = sum(k["in_flight"] for k in _lines(folder / "kills.jsonl"))
        assert len(task.unknown_calls) == killed_mid_call
        cut = sum(k["in_flight"] + k["unsaved"] for k in _lines(folder / "kills.jsonl"))
        made = Counter((folder / "requests.txt").read_text().split())
        assert set(made) == set(requests)
        assert sum(made.values()) - len(requests) <= cut

        _assert_a_changed_program_diverges(folder / "task.jsonl")


def _assert_a_changed_program_diverges(path: Path) -> None:
    before = path.read_bytes()
    pin = make_pin(planner=PLANNER, executor=EXECUTOR)
    store = FileTaskStore(path)
    with (
        RoleRouter.from_pin(pin, store=store) as llm,
        Task.open(store, pin, router=llm) as task,
        pytest.raises(TaskDiverged, match=r"run_as\('planner', Plan\).*run_as\('executor'"),
    ):
        task.run_as("executor", Plan, tools=None)
    assert path.read_bytes() == before


def _call_of(history: list[CanonicalEvent], result: ToolResult) -> ToolCall:
    return next(e for e in history if isinstance(e, ToolCall) and e.call_id == result.call_id)


def _result_of(history: list[CanonicalEvent], call: ToolCall) -> ToolResult:
    return next(e for e in history if isinstance(e, ToolResult) and e.call_id == call.call_id)
