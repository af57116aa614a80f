"""A durable-fleet worker: takes agent tasks from a procrastinate queue in PostgreSQL.

Run as ``python -m bench.fleet_worker NAME`` with ``NISSE_FLEET_PG_URL`` (the database
holding the queue and the tasks), ``NISSE_FLEET_BASE_URLS`` (the proxy instances, comma
separated) and ``NISSE_FLEET_TOKEN``. A task is placed on an instance by its key, as a
sticky load balancer would, so whichever worker runs it resumes with the URL its pin
names (the token goes nowhere else). Each job names a task key: the worker opens that task
with `Task.open` over its `PostgresTaskStore` (begun there, or resumed as the store says)
and runs it to its end with `Task.run`. The one tool, ``read_file``, is not repeatable: it
writes to ``fleet_tool_runs`` (its side effect, what a duplicate run would show: a call
is its task and the path it reads, one per path in a task) before it works, so a
run cut by a kill is answered on take-over with the loop's unknown-outcome result, never
run again. A task still leased by a live worker (`TaskBusy`) goes back to the queue for a
later try. Per model call the worker prints one JSON line on stdout: the task, the
seconds since the one before (the step), the seconds of them spent in the store, and the
last record the store acknowledged (a ``last`` line as the run ends); a ``busy`` line
for each `TaskBusy`, an ``unavailable`` line for each job the store could not serve (the
database down: the job is tried again), and a ``loop`` line if the queue's worker loop
ever ended on its own and was started again.

The worker outlives a restart of its database (`make_app`, `serve`): every query of the
queue waits for the pool to reconnect rather than failing (the pool's ``timeout``, longer
than an outage), the worker polls rather than holding a ``LISTEN`` connection (procrastinate
3.10's listener stops the worker when it cannot reconnect at once), and a job the store
could not serve (`TaskStoreUnavailable`) is tried again, like one whose task is busy.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Self

import procrastinate
import psycopg

from nisse_llm.agent import Task
from nisse_llm.config.settings import load_settings
from nisse_llm.errors import TaskBusy, TaskStoreUnavailable
from nisse_llm.task.logstore import LogRead
from nisse_llm.task.postgres import PostgresTaskStore
from nisse_llm.task.records import CallRecord, StoredCall
from nisse_llm.tools import Toolbox

QUEUE = "agents"
TASK = "agent_task"
ROLES = {"executor": "gpt-fleet", "planner": "claude-fleet", "delegate": "m", "consultant": "m"}
LEDGER = (
    "CREATE TABLE IF NOT EXISTS fleet_tool_runs ("
    " call text NOT NULL, task text NOT NULL, worker text NOT NULL,"
    " at timestamptz NOT NULL DEFAULT now(), done_at timestamptz)"
)
#: How long the tool works after its side effect (a real tool's work; a kill mid-tool
#: lands in it).
TOOL_S = 0.3
#: A job whose task is busy is tried again this many seconds later (at most ``BUSY_TRIES``).
BUSY_WAIT_S = 1
BUSY_TRIES = 120
#: How long a query of the queue waits for a connection (the pool reconnecting to a
#: database that is down) before it fails: longer than any outage the fleet rides out.
POOL_WAIT_S = 60.0
#: How long a worker's heartbeat may be missing before another worker or the driver
#: counts it dead and hands its jobs back to the queue.
STALLED_WORKER_S = 2.0
#: The worker's options: a heartbeat well inside the stalled time, polling (no listener).
WORKER_OPTIONS: dict[str, Any] = {
    "concurrency": 2,
    "update_heartbeat_interval": 0.5,
    "stalled_worker_timeout": STALLED_WORKER_S,
    "fetch_job_polling_interval": 0.2,
    "listen_notify": False,
    "delete_jobs": "never",
}


def make_app(url: str) -> procrastinate.App:
    """The queue every worker and the driver share. Its pool keeps one connection ready,
    checks each before lending it (procrastinate's default) and makes a query wait up to
    `POOL_WAIT_S` for a new one while the database is down, rather than failing it."""
    connector = procrastinate.PsycopgConnector(
        conninfo=url, min_size=1, max_size=4, timeout=POOL_WAIT_S, reconnect_timeout=300.0
    )
    return procrastinate.App(connector=connector)


class TimedStore(PostgresTaskStore):
    """A `PostgresTaskStore` that adds up the seconds spent in its public methods, keeps the
    last record it acknowledged (an append returned: committed), and prints a step line as
    each model call's end is recorded. Only public methods are timed, so the store's
    internals can change under it."""

    def __init__(self, url: str, key: str, *, holder: str) -> None:
        super().__init__(url, key, holder=holder)
        self.spent_s = 0.0
        self.acknowledged: int | None = None
        self._depth = 0  # public methods call each other: time the outermost only
        self._step_began, self._step_spent = time.perf_counter(), 0.0

    @contextmanager
    def _timed(self) -> Iterator[None]:
        self._depth += 1
        began = time.perf_counter()
        try:
            yield
        finally:
            self._depth -= 1
            if self._depth == 0:
                self.spent_s += time.perf_counter() - began

    def _acknowledged(self, stored: Any) -> Any:
        """Note the last number of what an append returned (records, or one record)."""
        last = stored[-1] if isinstance(stored, list) and stored else stored
        if last is not None and not isinstance(last, list):
            self.acknowledged = max(self.acknowledged or 0, last.seq)
        return stored

    def begin(self, pin: Any) -> Self:
        with self._timed():
            super().begin(pin)
        self.acknowledged = self.next_seq - 1  # the header, written now or before
        return self

    def resume(self, token: Any, *, base_url: str | None = None) -> Any:
        with self._timed():
            return super().resume(token, base_url=base_url)

    def read(self) -> LogRead:
        with self._timed():
            return super().read()

    def append_event(self, event: Any) -> Any:
        with self._timed():
            return self._acknowledged(super().append_event(event))

    def append_events(self, events: Any) -> Any:
        with self._timed():
            return self._acknowledged(super().append_events(events))

    def append_batch(self, events: Any) -> Any:
        with self._timed():
            return self._acknowledged(super().append_batch(events))

    def append_tool_run(self, record: Any) -> Any:
        with self._timed():
            return self._acknowledged(super().append_tool_run(record))

    def append_tools(self, record: Any) -> Any:
        with self._timed():
            return self._acknowledged(super().append_tools(record))

    def append_compaction(self, compacted: Any) -> Any:
        with self._timed():
            return self._acknowledged(super().append_compaction(compacted))

    def append_tool_outcome(self, record: Any, result: Any) -> None:
        with self._timed():
            super().append_tool_outcome(record, result)
        # It returns nothing: its result is the record the store holds last now.
        self.acknowledged = self.next_seq - 1

    def append_call(self, record: CallRecord) -> StoredCall:
        with self._timed():
            stored = self._acknowledged(super().append_call(record))
        if record.outcome != "started":  # the call's end: its step is done
            self.step_done()
        assert isinstance(stored, StoredCall)
        return stored

    def step_done(self, *, last: bool = False) -> None:
        """Print the step that ends now (since the last model call, or the opening);
        ``last``: the run's end, its final writes a tail of the step before, not a step."""
        now = time.perf_counter()
        step: dict[str, Any] = {"task": self.key, "worker": self.holder, "last": last}
        step |= {"step_s": now - self._step_began, "store_s": self.spent_s - self._step_spent}
        step["acknowledged"] = self.acknowledged
        print(json.dumps(step), flush=True)
        self._step_began, self._step_spent = now, self.spent_s


def instance_for(key: str, base_urls: list[str]) -> str:
    """The proxy instance task ``key`` is placed on (its number, modulo the instances)."""
    return base_urls[int(key.rsplit("-", 1)[-1]) % len(base_urls)]


def toolbox(url: str, key: str, worker: str) -> Toolbox:
    """The task's tools: ``read_file``, whose run is written to the ledger (not repeatable)."""

    def read_file(path: str) -> str:
        """Read a file of the repository."""
        with psycopg.connect(url, autocommit=True) as conn:
            row = conn.execute(
                "INSERT INTO fleet_tool_runs (call, task, worker) VALUES (%s, %s, %s)"
                " RETURNING ctid",
                (f"{key} {path}", key, worker),
            ).fetchone()
            time.sleep(TOOL_S)
            conn.execute("UPDATE fleet_tool_runs SET done_at = now() WHERE ctid = %s", row)
        return f"source of {path}"

    return Toolbox([read_file])


def run_task(key: str, *, url: str, base_urls: list[str], token: str, worker: str) -> None:
    """Drive task ``key`` to its end from wherever its store says it is."""
    base_url = instance_for(key, base_urls)
    pin = load_settings(None, llm={"base_url": base_url, "token": token}, roles=ROLES).pin()
    store = TimedStore(url, key, holder=worker)
    try:
        try:
            task = Task.open(store, pin, prompt=f"Read the modules for {key}.")
            with task, toolbox(url, key, worker) as tools:
                task.run("executor", tools=tools)
                store.step_done(last=True)
        except TaskBusy as busy:
            print(json.dumps({"task": key, "worker": worker, "busy": busy.holder}), flush=True)
            raise
        except TaskStoreUnavailable as down:
            line = {"task": key, "worker": worker, "unavailable": str(down)[:200]}
            print(json.dumps(line), flush=True)
            raise
    finally:
        store.close()


def main(argv: list[str]) -> None:
    name = argv[0]
    url = os.environ["NISSE_FLEET_PG_URL"]
    settings: dict[str, Any] = {
        "url": url,
        "base_urls": os.environ["NISSE_FLEET_BASE_URLS"].split(","),
        "token": os.environ["NISSE_FLEET_TOKEN"],
        "worker": name,
    }
    app = make_app(url)
    again = procrastinate.RetryStrategy(
        max_attempts=BUSY_TRIES,
        wait=BUSY_WAIT_S,
        retry_exceptions=[TaskBusy, TaskStoreUnavailable],
    )

    @app.task(name=TASK, queue=QUEUE, retry=again)
    def agent_task(key: str) -> None:
        run_task(key, **settings)

    asyncio.run(serve(app, name))


async def serve(app: procrastinate.App, name: str) -> None:
    """Run the queue's worker until SIGTERM or SIGINT. Should its loop end on its own (a
    query failed in flight as the database went away, which stops procrastinate's worker),
    say so on stdout and start it again: the process, its heartbeat and its jobs go on."""
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stopping.set)
    async with app.open_async():
        while not stopping.is_set():
            options = {**WORKER_OPTIONS, "install_signal_handlers": False}
            worker = asyncio.create_task(app.run_worker_async(queues=[QUEUE], name=name, **options))
            stop = asyncio.create_task(stopping.wait())
            await asyncio.wait({worker, stop}, return_when=asyncio.FIRST_COMPLETED)
            if stopping.is_set():
                worker.cancel()
                with contextlib.suppress(BaseException):
                    await worker
                return
            stop.cancel()
            failed = worker.exception()
            print(json.dumps({"worker": name, "loop": repr(failed)[:200]}), flush=True)
            await asyncio.sleep(1.0)


if __name__ == "__main__":
    main(sys.argv[1:])
