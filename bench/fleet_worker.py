"""A durable-fleet worker: takes agent tasks from a procrastinate queue in PostgreSQL.

Run as ``python -m bench.fleet_worker NAME`` with ``NISSE_FLEET_PG_URL`` (the database
holding the queue and the tasks), ``NISSE_FLEET_BASE_URLS`` (the proxy instances, comma
separated) and ``NISSE_FLEET_TOKEN``. A task is placed on an instance by its key, as a
sticky load balancer would, so whichever worker runs it resumes with the URL its pin
names (the token goes nowhere else). Each job names a task key: the worker resumes that task
from its `PostgresLogStore` (or begins it), answers pending tool calls, and runs the tool
loop to its end. A tool run is written to ``fleet_tool_runs`` (the tool's own side effect:
what a duplicate run would show). Per step it prints one JSON line on stdout: the task,
the step's seconds, the seconds spent in the store, and the last record acknowledged.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterable
from typing import Any

import procrastinate
import psycopg

from bench.fleet_task import TOOLS
from nisse_llm.config.settings import load_settings
from nisse_llm.errors import TaskHeaderMissing
from nisse_llm.log.canonical import CanonicalEvent, ToolCall, ToolResult, UserText
from nisse_llm.task.postgres import PostgresLogStore
from nisse_llm.task.records import CallRecord, StoredCall, StoredEvent
from nisse_llm.transport.routers import RoleRouter

QUEUE = "agents"
TASK = "agent_task"
ROLES = {"executor": "gpt-fleet", "planner": "claude-fleet", "delegate": "m", "consultant": "m"}
LEDGER = (
    "CREATE TABLE IF NOT EXISTS fleet_tool_runs ("
    " call_id text NOT NULL, task text NOT NULL, worker text NOT NULL,"
    " at timestamptz NOT NULL DEFAULT now())"
)


def make_app(url: str) -> procrastinate.App:
    """The queue every worker and the driver share."""
    return procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=url))


class TimedStore(PostgresLogStore):
    """A `PostgresLogStore` that adds up the seconds its appends take."""

    spent_s = 0.0

    def append_events(self, events: Iterable[CanonicalEvent]) -> list[StoredEvent]:
        began = time.perf_counter()
        try:
            return super().append_events(events)
        finally:
            self.spent_s += time.perf_counter() - began

    def append_call(self, record: CallRecord) -> StoredCall:
        began = time.perf_counter()
        try:
            return super().append_call(record)
        finally:
            self.spent_s += time.perf_counter() - began


def instance_for(key: str, base_urls: list[str]) -> str:
    """The proxy instance task ``key`` is placed on (its number, modulo the instances)."""
    return base_urls[int(key.rsplit("-", 1)[-1]) % len(base_urls)]


def run_task(key: str, *, url: str, base_urls: list[str], token: str, worker: str) -> None:
    """Drive task ``key`` to its end from wherever its store says it is."""
    base_url = instance_for(key, base_urls)
    pin = load_settings(None, llm={"base_url": base_url, "token": token}, roles=ROLES).pin()
    store = TimedStore(url, key, holder=worker)
    try:
        try:
            task = store.resume(token, base_url=base_url)
            log, pending = list(task.events), task.pending_calls
        except TaskHeaderMissing:
            store.begin(pin)
            log, pending = [UserText(text=f"Read the modules for {key}.")], []
            store.append_events(log)
        with RoleRouter.from_pin(pin, store=store) as llm:
            while True:
                began, spent = time.perf_counter(), store.spent_s
                if pending:
                    results = [_run_tool(url, key, worker, call) for call in pending]
                    store.append_events(results)
                    log += results
                reply = llm.complete("executor", log, TOOLS)
                acknowledged = store.append_events(reply)[-1].seq
                log += reply
                pending = [event for event in reply if isinstance(event, ToolCall)]
                step = {"task": key, "worker": worker, "step_s": time.perf_counter() - began}
                step |= {"store_s": store.spent_s - spent, "acknowledged": acknowledged}
                print(json.dumps(step), flush=True)
                if not pending:
                    return
    finally:
        store.close()


def _run_tool(url: str, key: str, worker: str, call: ToolCall) -> ToolResult:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO fleet_tool_runs (call_id, task, worker) VALUES (%s, %s, %s)",
            (call.call_id, key, worker),
        )
    return ToolResult(call_id=call.call_id, output=f"source of {call.arguments.get('path')}")


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

    @app.task(name=TASK, queue=QUEUE)
    def agent_task(key: str) -> None:
        run_task(key, **settings)

    app.run_worker(
        queues=[QUEUE],
        name=name,
        concurrency=2,
        update_heartbeat_interval=0.5,
        stalled_worker_timeout=2,
        fetch_job_polling_interval=0.2,
        delete_jobs="never",
    )


if __name__ == "__main__":
    main(sys.argv[1:])
