"""A fleet that survives a worker: worker processes on a procrastinate queue in a real
PostgreSQL and two real proxies sharing Redis, each task run as a `Task` with a tool that
is not repeatable, one worker SIGKILLed mid-tool, then the database crashed and started
again a few seconds later (the smoke size of `bench.fleet_durable`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.fleet_durable import SMOKE, STALLED_S, Result, render, run

pytestmark = pytest.mark.proxy


@pytest.fixture(scope="module")
def result(litellm_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> Result:
    """The smoke-size run: 8 tasks, 3 workers, one killed while a tool of it runs, the
    database down 3 s."""
    return run(SMOKE, tmp_path_factory.mktemp("durable"))


def test_every_task_finishes_and_nothing_is_lost_or_run_twice(result: Result) -> None:
    """All tasks end with the model's answer; no acknowledged record is missing and the
    numbers have no gap; no tool call was run twice."""
    print(render(result))
    assert result.finished == SMOKE.tasks
    assert result.lost_events == 0
    assert result.duplicated_tool_runs == 0
    assert len(result.steps) >= SMOKE.tasks


def test_the_tool_run_the_kill_cut_is_answered_unknown_not_run_again(result: Result) -> None:
    """The kill landed mid-tool: on take-over the loop wrote the unknown-outcome result for
    that run (the tool is not repeatable), so its ledger holds it once."""
    assert result.unknown_tool_runs >= 1
    assert result.duplicated_tool_runs == 0


def test_a_task_leased_by_a_live_holder_is_tried_again_later(result: Result) -> None:
    """The worker that found the first task busy (`TaskBusy`) did not crash: its job went
    back to the queue and the task finished."""
    assert result.busy_retries >= 1
    assert result.finished == SMOKE.tasks


def test_the_killed_workers_tasks_are_taken_over_by_another(result: Result) -> None:
    """Each task the killed worker held is finished by another worker, its next record
    written within the queue's stalled time plus a margin for a loaded machine."""
    assert result.killed
    assert result.killed_tasks
    for key in result.killed_tasks:
        assert result.taken_over_by[key] not in ("-", *result.killed)
    assert result.takeover_s
    assert max(result.takeover_s) < STALLED_S + 30
    for name in result.killed:
        assert result.exit_codes[name] == -9


def test_no_worker_dies_when_the_database_restarts(result: Result) -> None:
    """The database crashed with jobs in flight and came back: every worker not killed
    was still running at the end, and stopped cleanly when told to."""
    assert result.down_s >= SMOKE.down_s
    assert result.tasks_open_at_crash >= 1
    assert result.died == []
    for name, code in result.exit_codes.items():
        if name not in result.killed:
            assert code == 0, (name, code)
