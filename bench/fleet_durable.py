"""``python -m bench.fleet_durable [--smoke] [--out PATH]``: a fleet that survives its workers
and its database.

Worker processes (`bench.fleet_worker`, standing in for machines) take agent tasks from a
procrastinate queue in a real PostgreSQL (`LocalPostgres`), call the models through two
LiteLLM proxy instances sharing one Redis (`bench.fleet.fleet_for`), and keep every task
in `PostgresTaskStore`, each run as a `Task`. The driver holds the first task's lease until
a worker has met it busy (`TaskBusy`: that job is tried again later). While they work,
workers seen mid-tool (a non-repeatable tool started, not yet done) are SIGKILLed one by
one; a supervisor loop hands their stalled jobs back to the queue (procrastinate's worker
heartbeats), and another worker resumes each task from the store once the dead worker's
lease is gone, answering the cut tool run with the loop's unknown-outcome result. Then
the database (fsync on) is stopped as a crash would (``pg_ctl stop -m immediate``), kept
down for `Plan.down_s`, and started again: the workers ride it out (`bench.fleet_worker`
says how) and every task still ends. The report (bench/FLEET-DURABLE.md for the full run)
gives tasks finished, events lost, duplicated tool runs, unknown tool runs, workers that
died, time to take over, and the store's share of a step.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import procrastinate
import psycopg

from bench.fleet import SMOKE as LOAD_SMOKE
from bench.fleet import fleet_for
from bench.fleet_worker import LEDGER, QUEUE, STALLED_WORKER_S, TASK, TOOL_S, make_app
from nisse_llm.events.canonical import AssistantText
from nisse_llm.task.postgres import PostgresTaskStore, close_pools
from nisse_llm.testing.fleet import LiteLLMFleet
from nisse_llm.testing.postgres import LocalPostgres

ROOT = Path(__file__).resolve().parent.parent
#: A worker whose heartbeat is older than this is dead: its jobs go back to the queue.
STALLED_S = STALLED_WORKER_S


@dataclass(frozen=True)
class Plan:
    tasks: int
    workers: int
    #: Workers SIGKILLed mid-tool, one after the other.
    kills: int = 1
    #: Seconds the database stays down after its crash (0: no restart).
    down_s: float = 0.0
    timeout_s: float = 300.0


FULL = Plan(tasks=40, workers=5, kills=2, down_s=10.0)
SMOKE = Plan(tasks=8, workers=3, kills=1, down_s=3.0)


@dataclass
class Result:
    plan: Plan
    finished: int = 0
    lost_events: int = 0
    duplicated_tool_runs: int = 0
    tool_runs: int = 0
    unknown_tool_runs: int = 0
    busy_retries: int = 0
    unavailable_retries: int = 0
    loop_restarts: int = 0
    killed: list[str] = field(default_factory=list)
    #: Workers not killed that were gone before the run's end.
    died: list[str] = field(default_factory=list)
    down_s: float = 0.0
    tasks_open_at_crash: int = 0
    #: When each task the killed workers held lost its driver.
    killed_at: dict[str, datetime] = field(default_factory=dict)
    killed_tasks: list[str] = field(default_factory=list)
    taken_over_by: dict[str, str] = field(default_factory=dict)
    takeover_s: list[float] = field(default_factory=list)
    steps: list[dict[str, Any]] = field(default_factory=list)
    wall_s: float = 0.0
    exit_codes: dict[str, int | None] = field(default_factory=dict)


def run(plan: Plan, workdir: Path) -> Result:
    """One run: the database, the proxies, the workers, one kill; the tally."""
    result = Result(plan)
    with LocalPostgres(fsync=True) as database, fleet_for(LOAD_SMOKE) as (fleet, _script):
        url = database.url
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(LEDGER)
        with PostgresTaskStore(url, "fleet") as tables:
            tables.read()  # the task tables, made before any worker starts
        app = make_app(url)
        with app.open():
            app.schema_manager.apply_schema()
            for n in range(plan.tasks):
                app.configure_task(name=TASK, queue=QUEUE).defer(key=f"task-{n:02d}")
        held = PostgresTaskStore(url, "task-00", holder="the driver")
        held.lease()  # a live holder: the worker that takes this job meets TaskBusy
        release = threading.Thread(target=_hold_until_met, args=(held, workdir, plan))
        workers = {
            f"worker-{w}": _spawn(f"worker-{w}", url, fleet, workdir) for w in range(plan.workers)
        }
        began = time.monotonic()
        release.start()
        try:
            _kill(url, plan, workers, result)
            supervisor = threading.Thread(target=asyncio.run, args=(_supervise(url, plan, began),))
            supervisor.start()
            if plan.down_s > 0:
                _crash_and_restart(database, plan, result)
            supervisor.join()
            result.wall_s = time.monotonic() - began
            if result.wall_s >= plan.timeout_s:
                raise TimeoutError(f"not every task finished within {plan.timeout_s} s")
            result.died = [
                name
                for name, process in workers.items()
                if name not in result.killed and process.poll() is not None
            ]
        finally:
            release.join()
            for process in workers.values():
                if process.poll() is None:
                    process.send_signal(signal.SIGTERM)
            for name, process in workers.items():
                try:
                    result.exit_codes[name] = process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    process.kill()
                    result.exit_codes[name] = process.wait()
        if plan.down_s > 0:
            # This process's pooled connections died with the server; the first statement
            # on each would be TaskStoreUnavailable (a worker retries its job on that, a
            # tally would not): the tally reads on fresh ones.
            close_pools()
        _tally(url, plan, workdir, result)
    return result


def _spawn(name: str, url: str, fleet: LiteLLMFleet, workdir: Path) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "NISSE_FLEET_PG_URL": url,
        "NISSE_FLEET_BASE_URLS": ",".join(proxy.base_url for proxy in fleet.instances),
        "NISSE_FLEET_TOKEN": fleet.token,
    }
    with (workdir / f"{name}.out").open("wb") as out, (workdir / f"{name}.err").open("wb") as err:
        return subprocess.Popen(
            [sys.executable, "-m", "bench.fleet_worker", name],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=err,
        )


def _hold_until_met(held: PostgresTaskStore, workdir: Path, plan: Plan) -> None:
    """Release ``held``'s lease once a worker has printed that it found the task busy."""
    deadline = time.monotonic() + plan.timeout_s
    while time.monotonic() < deadline:
        if any('"busy"' in path.read_text() for path in workdir.glob("worker-*.out")):
            break
        time.sleep(0.1)
    held.close()


def _kill(
    url: str, plan: Plan, workers: dict[str, subprocess.Popen[bytes]], result: Result
) -> datetime:
    """SIGKILL ``plan.kills`` workers, each the first seen mid-tool (a run in the ledger
    not yet done) among those alive; the moment of the first kill."""
    first: datetime | None = None
    for _ in range(plan.kills):
        at = _kill_one(url, plan, workers, result)
        first = first or at
    assert first is not None
    return first


def _kill_one(
    url: str, plan: Plan, workers: dict[str, subprocess.Popen[bytes]], result: Result
) -> datetime:
    """SIGKILL a live worker seen mid-tool (a run in the ledger not yet done); the
    moment of the kill. The run's ledger row stays locked until the worker is dead, so the
    tool cannot end first, however late the kill comes on a loaded machine."""
    deadline = time.monotonic() + plan.timeout_s
    with psycopg.connect(url, autocommit=True) as conn:
        while time.monotonic() < deadline:
            with conn.transaction():
                rows = conn.execute(
                    "SELECT worker, task FROM fleet_tool_runs WHERE done_at IS NULL"
                    " AND worker <> ALL(%s) FOR UPDATE",
                    (result.killed,),
                ).fetchall()
                if rows:
                    victim = str(rows[0][0])
                    held = conn.execute(
                        "SELECT key FROM nisse.nisse_tasks"
                        " WHERE holder = %s AND lease_expires > now()",
                        (victim,),
                    ).fetchall()
                    workers[victim].send_signal(signal.SIGKILL)
                    workers[victim].wait()
                    now = datetime.now(UTC)
                    result.killed.append(victim)
                    result.killed_at |= {str(task): now for (task,) in held}
                    result.killed_tasks = sorted(result.killed_at)
                    return now
            time.sleep(0.05)
    raise TimeoutError("no worker was ever seen mid-tool")


def _crash_and_restart(database: LocalPostgres, plan: Plan, result: Result) -> None:
    """Stop the database as a crash would while tasks are open, keep it down
    ``plan.down_s``, start it again on the same port and data."""
    with psycopg.connect(database.url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM procrastinate_jobs WHERE status <> 'succeeded'"
        ).fetchone()
    result.tasks_open_at_crash = int(row[0]) if row else 0
    database.stop(mode="immediate")
    down = time.monotonic()
    time.sleep(plan.down_s)
    database.start()
    result.down_s = time.monotonic() - down


async def _supervise(url: str, plan: Plan, began: float) -> None:
    """Hand stalled jobs (their worker's heartbeat stopped) back to the queue until every
    job has succeeded or the plan's time is up; a query the database's restart cut is
    made again."""
    app = make_app(url)
    async with app.open_async():
        while time.monotonic() - began < plan.timeout_s:
            try:
                stalled = await app.job_manager.get_stalled_jobs(seconds_since_heartbeat=STALLED_S)
                for job in stalled:
                    await app.job_manager.retry_job(job)
                done = await app.connector.execute_query_one_async(
                    "SELECT count(*) AS n FROM procrastinate_jobs WHERE status = 'succeeded'"
                )
            except procrastinate.exceptions.ConnectorException:
                await asyncio.sleep(0.5)
                continue
            if done["n"] >= plan.tasks:
                return
            await asyncio.sleep(0.2)


def _tally(url: str, plan: Plan, workdir: Path, result: Result) -> None:
    for path in sorted(workdir.glob("worker-*.out")):
        for line in path.read_text().splitlines():
            with contextlib.suppress(json.JSONDecodeError):
                found = json.loads(line)
                if "busy" in found:
                    result.busy_retries += 1
                elif "unavailable" in found:
                    result.unavailable_retries += 1
                elif "loop" in found:
                    result.loop_restarts += 1
                else:
                    result.steps.append(found)
    acknowledged: dict[str, set[int]] = {}
    for step in result.steps:
        if step["acknowledged"] is not None:
            acknowledged.setdefault(step["task"], set()).add(step["acknowledged"])
    result.steps = [step for step in result.steps if not step["last"]]
    for n in range(plan.tasks):
        key = f"task-{n:02d}"
        with PostgresTaskStore(url, key) as store:
            found = store.read()
        events = [record.event for record in found.events]
        if events and isinstance(events[-1], AssistantText):
            result.finished += 1
        runs = [record.tool_run.outcome for record in found.tool_runs]
        result.tool_runs += runs.count("started")
        result.unknown_tool_runs += runs.count("unknown")
        # An acknowledged record missing, or a gap in the numbers, is an event lost.
        seqs = {record.seq for record in found.records}
        result.lost_events += len(acknowledged.get(key, set()) - seqs)
        result.lost_events += len(set(range(max(seqs, default=-1) + 1)) - seqs)
        if key in result.killed_at:
            after = [r for r in found.records if r.at > result.killed_at[key]]
            if after:
                result.takeover_s.append((after[0].at - result.killed_at[key]).total_seconds())
    with psycopg.connect(url, autocommit=True) as conn:
        result.duplicated_tool_runs = int(
            conn.execute(
                "SELECT coalesce(sum(n - 1), 0) FROM"
                " (SELECT count(*) AS n FROM fleet_tool_runs GROUP BY call) AS runs"
            ).fetchone()[0]  # type: ignore[index]
        )
        for key in result.killed_tasks:
            row = conn.execute(
                "SELECT holder FROM nisse.nisse_tasks WHERE key = %s", (key,)
            ).fetchone()
            result.taken_over_by[key] = str(row[0]) if row else "-"


def render(result: Result) -> str:
    plan = result.plan
    steps = [s["step_s"] for s in result.steps]
    store = [s["store_s"] for s in result.steps]
    share = sum(store) / sum(steps) if steps else 0.0
    takeover = max(result.takeover_s) if result.takeover_s else float("nan")
    lines = [
        "# A fleet that survives its workers and its database",
        "",
        f"Written by `python -m bench.fleet_durable`: {plan.workers} worker processes on a "
        "procrastinate queue in PostgreSQL (fsync on), two LiteLLM proxies sharing one Redis, "
        f"{plan.tasks} agent tasks kept in `PostgresTaskStore`, each run by `Task.run` with a "
        f"tool that is not repeatable; {', '.join(f'`{k}`' for k in result.killed) or 'none'} "
        "SIGKILLed mid-tool, then the database crashed (`pg_ctl stop -m immediate`) and "
        f"was started again {result.down_s:.1f} s later.",
        "",
        "| measure | value |",
        "| --- | --- |",
        f"| tasks finished | {result.finished} of {plan.tasks} |",
        f"| events lost | {result.lost_events} |",
        f"| tool runs started | {result.tool_runs} |",
        f"| duplicated non-repeatable tool runs | {result.duplicated_tool_runs} |",
        f"| unknown tool runs (kills that landed mid-tool) | {result.unknown_tool_runs} |",
        f"| jobs tried again, their task busy (`TaskBusy`) | {result.busy_retries} |",
        "| jobs tried again, the store unreachable (`TaskStoreUnavailable`) | "
        f"{result.unavailable_retries} |",
        f"| jobs not yet finished when the database crashed | {result.tasks_open_at_crash} |",
        f"| database down | {result.down_s:.1f} s |",
        f"| workers that died (not killed) | {', '.join(result.died) or 'none'} |",
        f"| worker loops started again in their process | {result.loop_restarts} |",
        f"| tasks the killed workers held | {', '.join(result.killed_tasks) or '-'} |",
        "| finished by | "
        + (", ".join(f"{k}: {v}" for k, v in sorted(result.taken_over_by.items())) or "-")
        + " |",
        f"| time to take over (kill to the next record of its task) | {takeover:.2f} s |",
        f"| steps | {len(steps)} |",
        f"| step, median | {statistics.median(steps) * 1000 if steps else 0:.1f} ms |",
        f"| the store's share of a step | {share:.1%} |",
        f"| wall | {result.wall_s:.1f} s |",
        "",
        f"Take-over is bounded by the queue's stalled-worker time ({STALLED_S:.0f} s without a "
        "heartbeat) plus the supervisor's poll; the task's lease is free the moment the "
        "worker dies (its database session ends with its socket). The tool's start is "
        "written to the task before it runs, and it is not repeatable: a run the kill cut "
        "is answered on take-over with the loop's unknown-outcome result and never run "
        "again, so no duplicate is possible by construction; the tool's own ledger "
        f"(`fleet_tool_runs`) checks it. A step is a model call and what follows it until "
        f"the next (its tool runs, each working {TOOL_S:.1f} s after its side effect, and "
        "every write); the store's share counts every write and read of the task.",
        "",
        "While the database is down every worker's heartbeat stops, so the supervisor "
        "hands every job in flight back to the queue as soon as it can query again: a "
        "second worker may then start a task its first worker is still running. The "
        "task's lease decides which of them drives it (the other meets `TaskBusy` and its "
        "job is tried again later), not the queue's stalled-job timer; the queue's "
        "settings only decide how soon a task is tried again.",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.fleet_durable", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--smoke", action="store_true", help="a small run")
    parser.add_argument("--out", type=Path, help="where to write the report")
    parser.add_argument("--tasks", type=int, help="agent tasks")
    args = parser.parse_args(argv)
    # The queue's pool says each failed reconnection while the database is down: expected.
    logging.getLogger("psycopg.pool").setLevel(logging.CRITICAL)
    plan = SMOKE if args.smoke else FULL
    if args.tasks:
        plan = replace(plan, tasks=args.tasks)
    out = args.out if args.out else (None if args.smoke else ROOT / "bench" / "FLEET-DURABLE.md")
    with tempfile.TemporaryDirectory(prefix="nisse-durable-") as tmp:
        result = run(plan, Path(tmp))
    text = render(result)
    if out is None:
        print(text)
    else:
        out.write_text(text)
        print(f"wrote {out}")
    return 0 if result.finished == plan.tasks else 1


if __name__ == "__main__":
    raise SystemExit(main())
