"""``python -m bench.taskstore_scale [--smoke] [--tasks N] [--out PATH]``: the PostgreSQL task
store at fleet scale, through PgBouncer in transaction mode.

A real PostgreSQL (fsync on) and a real PgBouncer (`LocalPgBouncer`, ``pool_mode =
transaction``, at most `Plan.server_connections` server connections) in front of it, both
started here. N tasks are put in a jobs table; `Plan.workers` worker processes
(`bench.taskstore_scale_worker`) each run up to N / workers of them at once, every task a
scripted agent (`AsyncScriptedRouter`: no proxy) of `Plan.steps` steps whose one tool is
not repeatable and writes its side effect to a ledger. Once a fifth of the steps are done,
two workers are SIGKILLed and their unfinished jobs handed back, as a supervisor would;
the others take those tasks over from the store. Then the records table is filled up to
100,000 records (whole tasks imported in bulk) and ``nisse-llm task list`` is timed on it.
The same agents run once more with the file store (fewer tasks, no kill), for the store's
share of a step there.

Before the run, the store is tried through the pool (`probe`): two drivers of one task
must not both hold its lease, and a connection must serve the same statement many times.
A store that keeps its lease or its prepared statements in a session fails that through
transaction pooling; the run then goes straight to the server instead (one server
connection per task in flight, so fewer tasks at once) and the report says why. Writes
bench/TASKSTORE-SCALE.md unless ``--smoke``.
"""

from __future__ import annotations

import argparse
import json
import math
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

import psycopg

from nisse_llm.errors import LLMError, TaskBusy
from nisse_llm.events.canonical import AssistantText, UserText
from nisse_llm.task.postgres import PostgresTaskStore, task_keys
from nisse_llm.testing.pgbouncer import LocalPgBouncer
from nisse_llm.testing.postgres import LocalPostgres

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "TASKSTORE-SCALE.md"
#: Server connections the run may use at most through the pool (the target).
TARGET_CONNECTIONS = 40
#: Tasks on a page of ``task list`` as the bench times it.
LIST_PAGE = 100
#: Records the table holds when ``task list`` is timed.
LIST_RECORDS = 100_000
#: Server connections a direct run leaves for everything else (max_connections is 200).
DIRECT_IN_FLIGHT = 150
TABLES = """
CREATE TABLE IF NOT EXISTS scale_jobs (
  key text PRIMARY KEY, phase text NOT NULL, worker text, tries int NOT NULL DEFAULT 0,
  done boolean NOT NULL DEFAULT false, done_at timestamptz,
  not_before timestamptz NOT NULL DEFAULT '-infinity');
CREATE TABLE IF NOT EXISTS scale_tool_runs (
  task text NOT NULL, step int NOT NULL, worker text NOT NULL,
  at timestamptz NOT NULL DEFAULT clock_timestamp());
"""


@dataclass(frozen=True)
class Plan:
    tasks: int = 1000
    workers: int = 8
    steps: int = 20
    kills: int = 2
    server_connections: int = TARGET_CONNECTIONS
    #: Tasks of the file store run (the share of a step there).
    file_tasks: int = 200
    list_records: int = LIST_RECORDS
    timeout_s: float = 1800.0


FULL = Plan()
SMOKE = Plan(
    tasks=16, workers=2, steps=3, kills=1, file_tasks=8, list_records=2_000, timeout_s=90.0
)


@dataclass
class Result:
    plan: Plan
    via: str = "pgbouncer"
    #: Why the run could not go through the pool ("" when it did).
    blocked: str = ""
    in_flight: int = 0
    finished: int = 0
    records: int = 0
    wall_s: float = 0.0
    peak_connections: int = 0
    append_s: list[float] = field(default_factory=list)
    store_share: float = 0.0
    file_store_share: float = 0.0
    store_step_ms: float = 0.0
    file_store_step_ms: float = 0.0
    killed: list[str] = field(default_factory=list)
    killed_tasks: int = 0
    takeover_s: list[float] = field(default_factory=list)
    busy: int = 0
    unavailable: int = 0
    lost: int = 0
    doubled: int = 0
    list_tasks: int = 0
    list_rows: int = 0
    list_s: float = 0.0
    #: One page of `task list` (its query on a fresh connection, as the command runs it):
    #: the first page and the next, in ms.
    list_page_ms: tuple[float, float] = (0.0, 0.0)
    timed_out: bool = False
    #: The first reason a job was given back, per kind ("busy", "unavailable").
    reasons: dict[str, str] = field(default_factory=dict)


def probe(url: str) -> str:
    """Why the task store cannot be used through ``url`` ("" if it can): a second driver
    of a leased task must meet `TaskBusy`, and one store must write many times."""
    key = f"probe-{time.monotonic_ns()}"
    first = PostgresTaskStore(url, key, holder="probe one")
    second = PostgresTaskStore(url, key, holder="probe two")
    try:
        first.lease()
        try:
            second.lease()
        except TaskBusy:
            pass
        else:
            return (
                "a second driver took a task whose lease another held: the lease is a "
                "session advisory lock, kept by whichever server connection took it, and "
                "transaction pooling hands that connection to any client"
            )
        second.close()
        try:
            for n in range(12):
                first.append_event(UserText(text=f"probe {n}"))
        except LLMError as exc:
            return f"a store could not write the same statement again: {exc}"[:400]
        return ""
    except LLMError as exc:
        return f"the store failed through the pool: {exc}"[:400]
    finally:
        first.close()
        second.close()


def run(plan: Plan, workdir: Path, *, via: str = "auto") -> Result:
    result = Result(plan)
    with LocalPostgres(fsync=True) as server:
        direct = server.database("scale")
        pool_size = plan.tasks * 2 + 100
        with LocalPgBouncer(
            server, max_server_connections=plan.server_connections,
            max_client_connections=pool_size,
        ) as pool:  # fmt: skip
            pooled = pool.through(direct)
            with psycopg.connect(direct, autocommit=True) as conn:
                conn.execute(TABLES)
            with PostgresTaskStore(direct, "maker") as maker:
                maker.read()  # the task tables, made before any worker starts
            if via in ("auto", "pgbouncer"):
                result.blocked = probe(pooled)
            if via == "direct" or (via == "auto" and result.blocked):
                result.via, url = "direct", direct
                result.in_flight = min(plan.tasks, DIRECT_IN_FLIGHT)
            else:
                result.via, url = "pgbouncer", pooled
                result.in_flight = plan.tasks
            _postgres_phase(plan, workdir, direct, url, result)
            _list_phase(plan, direct, server.password, result)
        _file_phase(plan, workdir, direct, result)
    return result


def _postgres_phase(plan: Plan, workdir: Path, direct: str, url: str, result: Result) -> None:
    keys = [f"scale-{n:05d}" for n in range(plan.tasks)]
    _jobs(direct, "postgres", keys)
    per_worker = math.ceil(result.in_flight / plan.workers)
    out = workdir / "postgres"
    out.mkdir()
    peak = _Peak(direct)
    peak.start()
    began = time.monotonic()
    workers = {
        f"worker-{w}": _spawn(
            f"worker-{w}", url, url, "postgres", "postgres", plan, per_worker, out
        )
        for w in range(plan.workers)
    }
    try:
        _kill(plan, direct, workers, result, began)
        _wait(plan, workers, began, result, out)
        result.wall_s = time.monotonic() - began
    finally:
        peak.stop()
        _reap(workers)
    result.peak_connections = peak.peak
    _tally(plan, direct, out, keys, result)


def _file_phase(plan: Plan, workdir: Path, direct: str, result: Result) -> None:
    """The same agents on the file store (the ledger and jobs stay in PostgreSQL): the
    store's share of a step there. The server must still be running."""
    keys = [f"file-{n:05d}" for n in range(plan.file_tasks)]
    folder = workdir / "files"
    folder.mkdir()
    _jobs(direct, "file", keys)
    out = workdir / "file"
    out.mkdir()
    per_worker = math.ceil(min(plan.file_tasks, result.in_flight) / plan.workers)
    workers = {
        f"file-{w}": _spawn(
            f"file-{w}", direct, direct, f"file:{folder}", "file", plan, per_worker, out
        )
        for w in range(plan.workers)
    }
    try:
        _wait(plan, workers, time.monotonic(), result, out)
    finally:
        _reap(workers)
    _, steps, stores = _stats(out)
    result.file_store_share = sum(stores) / sum(steps) if steps else 0.0
    result.file_store_step_ms = statistics.median(stores) * 1000 if stores else 0.0


def _jobs(direct: str, phase: str, keys: list[str]) -> None:
    with psycopg.connect(direct, autocommit=True) as conn, conn.cursor() as cursor:
        cursor.executemany(
            "INSERT INTO scale_jobs (key, phase) VALUES (%s, %s)", [(k, phase) for k in keys]
        )


def _spawn(
    name: str, url: str, jobs_url: str, store: str, phase: str, plan: Plan, per_worker: int,
    out: Path,
) -> subprocess.Popen[bytes]:  # fmt: skip
    env = {
        **os.environ,
        "NISSE_SCALE_URL": url,
        "NISSE_SCALE_JOBS_URL": jobs_url,
        "NISSE_SCALE_STORE": store,
        "NISSE_SCALE_PHASE": phase,
        "NISSE_SCALE_STEPS": str(plan.steps),
        "NISSE_SCALE_CONCURRENCY": str(per_worker),
        "NISSE_SCALE_OUT": str(out),
    }
    with (out / f"{name}.err").open("wb") as err:
        return subprocess.Popen(
            [sys.executable, "-m", "bench.taskstore_scale_worker", name],
            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=err,
        )  # fmt: skip


class _Peak(threading.Thread):
    """The most sessions the server held on the database at once, sampled directly."""

    def __init__(self, direct: str) -> None:
        super().__init__(daemon=True)
        self.direct, self.peak = direct, 0
        self._done = threading.Event()

    def run(self) -> None:
        with psycopg.connect(self.direct, autocommit=True) as conn:
            while not self._done.is_set():
                row = conn.execute(
                    "SELECT count(*) FROM pg_stat_activity"
                    " WHERE datname = current_database() AND pid <> pg_backend_pid()"
                ).fetchone()
                self.peak = max(self.peak, int(row[0]) if row else 0)
                self._done.wait(0.05)

    def stop(self) -> None:
        self._done.set()
        self.join()


def _kill(
    plan: Plan, direct: str, workers: dict[str, subprocess.Popen[bytes]], result: Result,
    began: float,
) -> None:  # fmt: skip
    """Once a fifth of the steps are done, SIGKILL ``plan.kills`` workers holding
    unfinished tasks, then hand their jobs back (their heartbeat, in a queue's words, is
    gone)."""
    goal = plan.tasks * plan.steps // 5
    with psycopg.connect(direct, autocommit=True) as conn:
        while time.monotonic() - began < plan.timeout_s:
            row = conn.execute("SELECT count(*) FROM scale_tool_runs").fetchone()
            if row and int(row[0]) >= goal:
                break
            time.sleep(0.1)
        busy = conn.execute(
            "SELECT worker FROM scale_jobs WHERE phase = 'postgres' AND NOT done"
            " AND worker IS NOT NULL GROUP BY worker ORDER BY count(*) DESC, worker"
        ).fetchall()
        victims = [str(name) for (name,) in busy][: plan.kills]
        for name in victims:
            workers[name].send_signal(signal.SIGKILL)
            workers[name].wait()
        killed_at = datetime.now(UTC)
        rows = conn.execute(
            "UPDATE scale_jobs SET worker = NULL WHERE worker = ANY(%s) AND NOT done RETURNING key",
            (victims,),
        ).fetchall()
    result.killed = victims
    result.killed_tasks = len(rows)
    result._killed_at = killed_at  # type: ignore[attr-defined]
    result._taken = [str(key) for (key,) in rows]  # type: ignore[attr-defined]


def _wait(
    plan: Plan, workers: dict[str, subprocess.Popen[bytes]], began: float, result: Result,
    out: Path,
) -> None:  # fmt: skip
    for name, process in workers.items():
        if name in result.killed:
            continue
        left = plan.timeout_s - (time.monotonic() - began)
        try:
            process.wait(timeout=max(left, 1))
        except subprocess.TimeoutExpired:
            result.timed_out = True  # the tally says what did finish
            return
        if process.returncode != 0:
            err = (out / f"{name}.err").read_text()[-3000:]
            raise RuntimeError(f"{name} exited {process.returncode}:\n{err}")


def _reap(workers: dict[str, subprocess.Popen[bytes]]) -> None:
    for process in workers.values():
        if process.poll() is None:
            process.kill()
            process.wait()


def _stats(out: Path) -> tuple[list[float], list[float], list[float]]:
    appends: list[float] = []
    steps: list[float] = []
    stores: list[float] = []
    for path in out.glob("*.json"):
        found = json.loads(path.read_text())
        appends += found["append_s"]
        steps += found["step_s"]
        stores += found["store_step_s"]
    return appends, steps, stores


def _tally(plan: Plan, direct: str, out: Path, keys: list[str], result: Result) -> None:
    result.append_s, steps, stores = _stats(out)
    result.store_share = sum(stores) / sum(steps) if steps else 0.0
    result.store_step_ms = statistics.median(stores) * 1000 if stores else 0.0
    for path in out.glob("*.again"):
        for line in path.read_text().splitlines():
            again = json.loads(line)
            result.busy += again["again"] == "busy"
            result.unavailable += again["again"] == "unavailable"
            result.reasons.setdefault(again["again"], again["why"][:300])
    acknowledged: dict[str, set[int]] = {}
    for path in out.glob("*.acks"):
        for line in path.read_text().splitlines():
            key, _, seq = line.partition(" ")
            if seq:
                acknowledged.setdefault(key, set()).add(int(seq))
    killed_at = getattr(result, "_killed_at", None)
    taken = set(getattr(result, "_taken", []))
    for key in keys:
        with PostgresTaskStore(direct, key) as store:
            found = store.read()
        events = [record.event for record in found.events]
        if events and isinstance(events[-1], AssistantText):
            result.finished += 1
        seqs = {record.seq for record in found.records}
        result.records += len(seqs)
        result.lost += len(acknowledged.get(key, set()) - seqs)
        result.lost += len(set(range(max(seqs, default=-1) + 1)) - seqs)
        if key in taken and killed_at is not None:
            after = [r for r in found.records if r.at > killed_at]
            if after:
                result.takeover_s.append((after[0].at - killed_at).total_seconds())
    with psycopg.connect(direct, autocommit=True) as conn:
        row = conn.execute(
            "SELECT coalesce(sum(n - 1), 0) FROM (SELECT count(*) AS n FROM scale_tool_runs"
            " GROUP BY task, step) AS runs"
        ).fetchone()
        result.doubled = int(row[0]) if row else 0


def _list_phase(plan: Plan, direct: str, password: str, result: Result) -> None:
    """Fill the records table up to ``plan.list_records`` with copies of a finished task
    (imported whole, as ``task import`` does), then time ``nisse-llm task list``."""
    with psycopg.connect(direct, autocommit=True) as conn:
        row = conn.execute("SELECT count(*) FROM nisse.nisse_task_records").fetchone()
        have = int(row[0]) if row else 0
    with PostgresTaskStore(direct, "scale-00000") as store:
        lines = store.export_lines()
    copies = math.ceil(max(plan.list_records - have, 0) / max(len(lines), 1))
    for n in range(copies):
        with PostgresTaskStore(direct, f"seeded-{n:06d}") as store:
            store.import_lines(lines)
    with psycopg.connect(direct, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*), count(DISTINCT task) FROM nisse.nisse_task_records"
        ).fetchone()
    assert row is not None
    result.list_rows, result.list_tasks = int(row[0]), int(row[1])
    pages = []
    after = None
    for _ in range(2):
        began = time.perf_counter()
        page = task_keys(direct, limit=LIST_PAGE, after=after)
        pages.append((time.perf_counter() - began) * 1000)
        after = page[-1]["key"] if page else None
    result.list_page_ms = (pages[0], pages[1])
    bare = direct.replace(f":{password}@", "@")
    began = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "nisse_llm", "task", "list", "--store", bare],
        cwd=ROOT, env={**os.environ, "PGPASSWORD": password}, capture_output=True,
        text=True, check=False,
    )  # fmt: skip
    result.list_s = time.perf_counter() - began
    if done.returncode != 0:
        raise RuntimeError(f"task list failed: {done.stderr[-1000:]}")


def _pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def render(result: Result) -> str:
    plan = result.plan
    ratio = result.store_step_ms / result.file_store_step_ms if result.file_store_step_ms else 0
    takeover = max(result.takeover_s) if result.takeover_s else float("nan")
    met = "met" if result.peak_connections <= TARGET_CONNECTIONS else "NOT met"
    if result.via == "direct":
        met = "not judged: straight to the server, one per task in flight"
    lines = [
        "# The PostgreSQL task store at fleet scale",
        "",
        f"Written by `python -m bench.taskstore_scale`: {plan.tasks} scripted agent tasks of "
        f"{plan.steps} steps (a tool that is not repeatable each step) on {plan.workers} worker "
        "processes, PostgreSQL 15 local with fsync on, PgBouncer in transaction mode "
        f"(at most {plan.server_connections} server connections) started by the run; "
        f"{', '.join(f'`{k}`' for k in result.killed) or 'no worker'} SIGKILLed a fifth "
        "of the way in, their tasks taken over by the others. 2-core shared machine.",
        "",
        "| measure | value |",
        "| --- | --- |",
        f"| tasks went through | {result.via} |",
        f"| tasks in flight at once | {result.in_flight} |",
        f"| tasks finished | {result.finished} of {plan.tasks} |",
        f"| server connections, peak (pg_stat_activity) | {result.peak_connections} "
        f"(target at most {TARGET_CONNECTIONS}: {met}) |",
        f"| records appended | {result.records} |",
        f"| records per second (all tasks) | {result.records / result.wall_s:,.0f} |"
        if result.wall_s
        else "| records per second (all tasks) | - |",
        f"| appends timed | {len(result.append_s)} |",
        f"| append, p50 | {_pct(result.append_s, 0.5) * 1000:.1f} ms |",
        f"| append, p99 | {_pct(result.append_s, 0.99) * 1000:.1f} ms |",
        f"| tasks taken over | {result.killed_tasks} |",
        f"| take-over (kill to the next record of its task), longest | {takeover:.2f} s |",
        f"| jobs tried again: task busy / store unreachable | {result.busy} / "
        f"{result.unavailable} |",
        f"| records lost (acknowledged and missing, or a gap) | {result.lost} |",
        f"| non-repeatable side effects doubled | {result.doubled} |",
        f"| store per step, median: PostgreSQL / file | {result.store_step_ms:.1f} ms / "
        f"{result.file_store_step_ms:.1f} ms ({ratio:.1f}x) |",
        f"| store's share of a step: PostgreSQL / file | {result.store_share:.0%} / "
        f"{result.file_store_share:.0%} |",
        f"| `task list`, a page of {LIST_PAGE} over {result.list_rows:,} records and "
        f"{result.list_tasks:,} tasks: first page / next page (target under 100 ms) | "
        f"{result.list_page_ms[0]:.1f} ms / {result.list_page_ms[1]:.1f} ms |",
        f"| `nisse-llm task list`, every task, the whole command (process start included) "
        f"| {result.list_s:.2f} s |",
        f"| wall (PostgreSQL run) | {result.wall_s:.1f} s"
        + (f", stopped at the run's limit ({plan.timeout_s:.0f} s)" if result.timed_out else "")
        + " |",
        "",
    ]
    if result.blocked and result.via == "pgbouncer":
        lines += [
            "**Through the pool although the store failed its probe** (`--via pgbouncer`): "
            f"{result.blocked}.",
            "",
        ]
    if result.reasons:
        lines += [
            "Why jobs were given back, the first of each kind: "
            + "; ".join(f"{kind}: `{why}`" for kind, why in sorted(result.reasons.items())),
            "",
        ]
    if result.blocked and result.via == "direct":
        lines += [
            "**Not through the pool.** The store failed the probe through PgBouncer in "
            f"transaction mode: {result.blocked}. The run went straight to the server "
            "instead, one server connection per task in flight, so at most "
            f"{DIRECT_IN_FLIGHT} tasks were in flight and the connection target cannot "
            "be met. A store that keeps no session state (a lease row fenced in each "
            "transaction, statements not prepared per session) passes the probe, and "
            "then this same command runs every task through the pool.",
            "",
        ]
    lines += [
        "A step is a model call (scripted, in process) and what follows it until the next: "
        "its records and its tool (a ledger row, then 20 ms of work). `task list` is timed "
        "as a page (the query the command runs, on a connection of its own) and as the "
        "whole command listing every task, the records table seeded with copies of a "
        "finished task imported whole. The file run has "
        f"{plan.file_tasks} tasks and no kill. Take-over counts from the kill to the next "
        "record of a task the killed workers held, waiting for a free slot included (a "
        "task handed back queues behind the others when every slot is busy).",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.taskstore_scale", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--smoke", action="store_true", help="tiny sizes; print, write nothing")
    parser.add_argument("--tasks", type=int, help="tasks in flight")
    parser.add_argument("--workers", type=int, help="worker processes")
    parser.add_argument("--steps", type=int, help="steps per task")
    parser.add_argument(
        "--via", choices=("auto", "pgbouncer", "direct"), default="auto",
        help="auto: through PgBouncer if the store passes the probe, else straight",
    )  # fmt: skip
    parser.add_argument("--out", type=Path, help=f"report path (default {OUT})")
    args = parser.parse_args(argv)
    plan = SMOKE if args.smoke else FULL
    for name in ("tasks", "workers", "steps"):
        if getattr(args, name):
            plan = replace(plan, **{name: getattr(args, name)})
    with tempfile.TemporaryDirectory(prefix="nisse-scale-") as tmp:
        result = run(plan, Path(tmp), via=args.via)
    text = render(result)
    out = args.out if args.out else (None if args.smoke else OUT)
    if out is None:
        print(text)
    else:
        out.write_text(text)
        print(text)
    return 0 if result.finished == plan.tasks and result.lost == result.doubled == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
