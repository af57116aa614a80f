"""The task store scale bench at its smoke size (16 tasks, 2 workers, 3 steps, one worker
killed), so `python -m bench.taskstore_scale` never rots: real PostgreSQL, real PgBouncer,
worker processes."""

from __future__ import annotations

import pytest

from bench.taskstore_scale import SMOKE, Result, probe, render, run
from nisse_llm.errors import TaskBusy
from nisse_llm.task.postgres import PostgresTaskStore
from nisse_llm.testing.pgbouncer import LocalPgBouncer
from nisse_llm.testing.postgres import LocalPostgres


@pytest.fixture(scope="module")
def result(tmp_path_factory: pytest.TempPathFactory) -> Result:
    return run(SMOKE, tmp_path_factory.mktemp("scale"))


def test_every_task_finishes_and_nothing_is_lost_or_done_twice(result: Result) -> None:
    """Every task ends with its answer; no acknowledged record is missing and the numbers
    have no gap; no step's side effect was made twice, though a worker was killed."""
    print(render(result))
    assert not result.timed_out
    assert result.finished == SMOKE.tasks
    assert result.lost == 0
    assert result.doubled == 0
    assert result.records >= SMOKE.tasks * SMOKE.steps


def test_the_killed_workers_tasks_are_taken_over(result: Result) -> None:
    assert len(result.killed) == SMOKE.kills
    assert result.killed_tasks >= 1
    assert result.takeover_s


def test_the_report_has_every_figure(result: Result) -> None:
    """Connections, appends, latencies, the file store's share and `task list`'s time
    were all measured, and the report says which way the tasks went and why."""
    assert result.peak_connections >= 1
    assert result.append_s
    assert result.store_step_ms > 0
    assert result.file_store_step_ms > 0
    assert result.list_rows >= SMOKE.list_records
    assert result.list_s > 0
    text = render(result)
    assert f"| tasks finished | {SMOKE.tasks} of {SMOKE.tasks} |" in text
    assert all(ms > 0 for ms in result.list_page_ms)
    # The store keeps no session state, so every task goes through the transaction pool,
    # within its server connections.
    assert (result.via, result.blocked) == ("pgbouncer", "")
    assert result.peak_connections <= 40


def test_the_probe_passes_straight_to_the_server(postgres: LocalPostgres) -> None:
    """The probe holds the store to what it promises on a plain connection: a leased
    task is busy for a second driver, and a store writes many times."""
    assert probe(postgres.database("scale_probe_direct")) == ""


def test_the_probes_verdict_through_the_pool_is_what_a_second_driver_meets(
    pgbouncer: LocalPgBouncer,
) -> None:
    """Through PgBouncer in transaction mode the store passes the probe, and a second
    driver of a leased task meets `TaskBusy` there, as it does straight to the server."""
    url = pgbouncer.database("scale_probe_pooled")
    found = probe(url)
    first = PostgresTaskStore(url, "held", holder="first")
    second = PostgresTaskStore(url, "held", holder="second")
    try:
        first.lease()
        try:
            second.lease()
            fenced = False
        except TaskBusy:
            fenced = True
    finally:
        first.close()
        second.close()
    assert (found, fenced) == ("", True)
