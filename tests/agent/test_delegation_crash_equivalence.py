"""A planner delegating two sub-tasks is killed at random points (SIGKILL, the property
test's way) and run again from the top until it finishes: the parent's and both children's
files end as the uninterrupted run's, the returned values are the same, each child's model
call reached the upstream once (again only for a call a kill cut), no write ran twice, no
child was begun twice, and the parent's total usage is the three files' sum."""

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

from nisse_llm import Task
from nisse_llm.events.canonical import CanonicalEvent, ToolResult
from nisse_llm.task.logstore import FileTaskStore
from nisse_llm.transport.routers import RoleRouter
from tests.agent._killed_delegation import run_program
from tests.agent.helpers import numbered
from tests.task.helpers import make_pin

#: Kill points an uninterrupted run passes (104: some 40 records, two points each, five model
#: calls out and back, four tool runs before and after).
POINTS = 110
EXAMPLES = 40
KEYS = ("task", "task.1-delegate", "task.2-delegate")

_CONTEXT = multiprocessing.get_context("forkserver")
_CONTEXT.set_forkserver_preload(["tests.agent._killed_delegation"])


def _child(folder: Path, kill_at: int) -> int | None:
    process = _CONTEXT.Process(
        target=run_program,
        args=(
            str(folder / "task.jsonl"),
            str(folder / "effects.log"),
            kill_at,
            str(folder / "kills.log"),
            str(folder / "results.log"),
        ),
    )
    process.start()
    process.join(120)
    return process.exitcode


def _lines(path: Path) -> list[Any]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _histories(folder: Path) -> dict[str, list[CanonicalEvent]]:
    return {
        key: [r.event for r in FileTaskStore(folder / f"{key}.jsonl").read().events] for key in KEYS
    }


@cache
def _uninterrupted() -> tuple[dict[str, list[Any]], dict[str, Any], tuple[str, ...]]:
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        assert _child(folder, 0) == 0
        (values,) = _lines(folder / "results.log")
        requests = tuple((folder / "requests.txt").read_text().split())
        histories = {k: numbered(v) for k, v in _histories(folder).items()}
        return histories, values, requests


def test_the_uninterrupted_planner_has_three_files_and_sums_their_usage(tmp_path: Path) -> None:
    histories, values, requests = _uninterrupted()
    assert values["keys"] == list(KEYS[1:])
    assert values["children"] == ["s1 is tidy.", "s2 is tidy."]
    assert sorted(requests) == sorted(["s1", "s1-answer", "s2", "s2-answer", "planner"])
    assert all(histories[key] for key in KEYS)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kills=st.lists(st.integers(min_value=1, max_value=POINTS), min_size=1, max_size=3))
def test_the_planner_killed_anywhere_and_rerun_ends_as_the_uninterrupted_run(
    kills: list[int],
) -> None:
    straight, values, requests = _uninterrupted()
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        for kill_at in kills:
            assert _child(folder, kill_at) in (0, -signal.SIGKILL)
        assert _child(folder, 0) == 0

        histories = _histories(folder)
        assert sorted(p.stem for p in folder.glob("*.jsonl")) == sorted(KEYS)
        for key, history in histories.items():
            assert numbered(history) == _expected(straight[key], history), key
        assert all(found == values for found in _lines(folder / "results.log"))

        runs = Counter((r["tool"], r["path"]) for r in _lines(folder / "effects.log"))
        assert all(count <= 1 for (tool, _), count in runs.items() if tool == "write_file")
        cut = sum(k["in_flight"] + k["unsaved"] for k in _lines(folder / "kills.log"))
        made = Counter((folder / "requests.txt").read_text().split())
        assert set(made) == set(requests)
        assert sum(made.values()) - len(requests) <= cut

        found = [FileTaskStore(folder / f"{key}.jsonl").read() for key in KEYS]
        parents = [r.records for r in found[1:]]
        assert all(sum(1 for r in records if hasattr(r, "parent")) == 1 for records in parents)
        _assert_total_usage(folder, found)


def _expected(straight: list[Any], history: list[CanonicalEvent]) -> list[Any]:
    """The uninterrupted history, a write given up as unknown standing as its error."""
    mine = numbered(history)
    return [
        got if _given_up(history, n) else want
        for n, (want, got) in enumerate(zip(straight, mine, strict=False))
    ] + straight[len(mine) :]


def _given_up(history: list[CanonicalEvent], n: int) -> bool:
    event = history[n]
    return isinstance(event, ToolResult) and event.is_error and "interrupted" in str(event.output)


def _assert_total_usage(folder: Path, found: list[Any]) -> None:
    pin = make_pin(planner="claude-sonnet-4-5", delegate="claude-sonnet-4-5")
    store = FileTaskStore(folder / "task.jsonl")
    with RoleRouter.from_pin(pin, store=store) as llm, Task.open(store, pin, router=llm) as task:
        total = task.total_usage
    assert total.calls == sum(f.usage.total.calls for f in found)
    assert total.input == sum(f.usage.total.input for f in found)
    assert total.unknown_calls == sum(f.usage.total.unknown_calls for f in found)
