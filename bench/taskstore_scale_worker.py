"""A worker of the task store scale run: many scripted agent tasks at once on one event loop.

Run as ``python -m bench.taskstore_scale_worker NAME`` with ``NISSE_SCALE_URL`` (where the
tasks live: the pool's URL, or the server's), ``NISSE_SCALE_JOBS_URL`` (the jobs table
and the tool's ledger), ``NISSE_SCALE_STORE`` (``postgres`` or ``file:FOLDER``),
``NISSE_SCALE_PHASE`` (which jobs to take), ``NISSE_SCALE_STEPS``,
``NISSE_SCALE_CONCURRENCY`` and ``NISSE_SCALE_OUT`` (a folder). The worker claims jobs
(``scale_jobs``, one statement each: safe through PgBouncer in transaction mode) and runs
up to ``CONCURRENCY`` tasks at once, each an `AsyncTask` over its own store with an
`AsyncScriptedRouter` (no proxy, no HTTP): ``STEPS`` replies that each call the tool
``act``, then an answer. ``act`` is not repeatable: it writes its side effect to
``scale_tool_runs`` first (a step of a task, once), then works ``TOOL_S``. A task taken
over resumes where its store says: the script starts at the first reply it has not
recorded. A task whose lease another driver holds (`TaskBusy`) or whose store failed
(`TaskStoreUnavailable`) goes back to the jobs table for a later try.

Every append the store acknowledges is written to ``NAME.acks`` (task and number) as it
returns, so a SIGKILL loses none of them; at the end ``NAME.json`` holds the append
latencies and the seconds per step spent in the store; ``NAME.again`` says why each job
given back was (written as it happens).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TextIO

from psycopg_pool import AsyncConnectionPool

from nisse_llm.agent import AsyncTask
from nisse_llm.errors import TaskBusy, TaskStoreUnavailable
from nisse_llm.events.canonical import ToolCall
from nisse_llm.task.logstore import AsyncFileTaskStore, AsyncTaskStore
from nisse_llm.task.postgres import AsyncPostgresTaskStore
from nisse_llm.testing import ToolUse, reply
from nisse_llm.testing.router import AsyncScriptedRouter
from nisse_llm.tools import Toolbox

#: How long the tool works after its side effect.
TOOL_S = 0.02
#: A job given back (its task busy, its store unreachable) is claimable again after this.
RETRY_S = 0.5
_APPENDS = (
    "append_event", "append_events", "append_batch", "append_tool_run", "append_tools",
    "append_compaction", "append_tool_outcome", "append_call",
)  # fmt: skip
_TIMED = (*_APPENDS, "begin", "resume", "read")

CLAIM = (
    "UPDATE scale_jobs SET worker = %(worker)s, tries = tries + 1 WHERE key = ("
    " SELECT key FROM scale_jobs WHERE phase = %(phase)s AND worker IS NULL AND NOT done"
    " AND not_before <= clock_timestamp() ORDER BY key LIMIT 1 FOR UPDATE SKIP LOCKED)"
    " RETURNING key"
)


class Timing:
    """What one worker measured: append latencies, and each step's store seconds."""

    def __init__(self, acks: TextIO) -> None:
        self.acks = acks
        self.append_s: list[float] = []
        self.step_s: list[float] = []
        self.store_step_s: list[float] = []


def timed(store: AsyncTaskStore, timing: Timing, key: str) -> AsyncTaskStore:
    """``store`` with its public methods timed in place (the outermost call only, as they
    call each other), each acknowledged append written to the worker's acks file."""
    depth = 0
    spent = [0.0]

    def wrap(name: str) -> None:
        inner = getattr(store, name)

        async def method(*args: Any, **kwargs: Any) -> Any:
            nonlocal depth
            depth += 1
            began = time.perf_counter()
            try:
                done = await inner(*args, **kwargs)
            finally:
                depth -= 1
            if depth == 0:
                took = time.perf_counter() - began
                spent[0] += took
                if name in _APPENDS:
                    timing.append_s.append(took)
                    last = done[-1] if isinstance(done, list) and done else done
                    seq = getattr(last, "seq", None)
                    if seq is None:  # it returns nothing: its records are the last now
                        seq = await store.next_seq() - 1
                    timing.acks.write(f"{key} {seq}\n")
                    timing.acks.flush()
            return done

        setattr(store, name, method)

    for name in _TIMED:
        wrap(name)
    store.spent = spent  # type: ignore[attr-defined]
    return store


def script(steps: int, done: int) -> list[Any]:
    """The replies from step ``done`` on: each calls ``act`` once, then the answer."""
    turns: list[Any] = [
        reply(f"Step {n}.", ToolUse("act", {"step": n}, id=f"call-{n}")) for n in range(done, steps)
    ]
    return [*turns, reply("All steps done.")]


async def run_task(
    key: str, name: str, env: dict[str, str], ledger: AsyncConnectionPool, timing: Timing
) -> None:
    """Drive task ``key`` to its end from wherever its store says it is."""
    steps = int(env["NISSE_SCALE_STEPS"])
    where = env["NISSE_SCALE_STORE"]
    store: AsyncTaskStore
    if where == "postgres":
        store = AsyncPostgresTaskStore(env["NISSE_SCALE_URL"], key, holder=name)
    else:
        store = AsyncFileTaskStore(Path(where.removeprefix("file:")) / f"{key}.jsonl")
    store = timed(store, timing, key)
    try:
        found = await store.read()
        done = sum(isinstance(r.event, ToolCall) for r in found.events)
        last = [time.perf_counter(), 0.0]

        async def act(step: int) -> str:
            """Do step ``step`` of the work (not repeatable)."""
            now, spent = time.perf_counter(), store.spent[0]  # type: ignore[attr-defined]
            timing.step_s.append(now - last[0])
            timing.store_step_s.append(spent - last[1])
            last[0], last[1] = now, spent
            async with ledger.connection() as conn:
                await conn.execute(
                    "INSERT INTO scale_tool_runs (task, step, worker) VALUES (%s, %s, %s)",
                    (key, step, name),
                )
            await asyncio.sleep(TOOL_S)
            return f"step {step} done"

        llm = AsyncScriptedRouter({"executor": script(steps, done)}, store=store)
        async with llm, AsyncTask.open(store, llm.pin, router=llm, prompt=f"Do {key}.") as task:
            await task.run("executor", tools=Toolbox([act]), max_steps=steps + 5)
    finally:
        await store.aclose()


async def serve(name: str, env: dict[str, str]) -> None:
    out = Path(env["NISSE_SCALE_OUT"])
    concurrency = int(env["NISSE_SCALE_CONCURRENCY"])
    phase = env["NISSE_SCALE_PHASE"]
    kwargs = {"autocommit": True, "prepare_threshold": None}
    jobs = AsyncConnectionPool(
        env["NISSE_SCALE_JOBS_URL"], min_size=1, max_size=4, kwargs=kwargs, open=False
    )
    with (out / f"{name}.acks").open("a") as acks, (out / f"{name}.again").open("a") as retries:
        timing = Timing(acks)
        await jobs.open(wait=True)
        outcomes = {"done": 0, "busy": 0, "unavailable": 0}

        @asynccontextmanager
        async def claimed() -> AsyncIterator[str | None]:
            async with jobs.connection() as conn:
                row = await (await conn.execute(CLAIM, {"worker": name, "phase": phase})).fetchone()
            yield None if row is None else str(row[0])

        async def slot() -> None:
            while True:
                async with claimed() as key:
                    if key is None:
                        if await _all_done(jobs, phase):
                            return
                        await asyncio.sleep(0.2)
                        continue
                try:
                    await run_task(key, name, env, jobs, timing)
                except (TaskBusy, TaskStoreUnavailable) as again:
                    kind = "busy" if isinstance(again, TaskBusy) else "unavailable"
                    outcomes[kind] += 1
                    line = {"task": key, "again": kind, "why": str(again)[:300]}
                    retries.write(json.dumps(line) + "\n")
                    retries.flush()
                    await _give_back(jobs, key)
                    continue
                outcomes["done"] += 1
                async with jobs.connection() as conn:
                    await conn.execute(
                        "UPDATE scale_jobs SET done = true, done_at = clock_timestamp()"
                        " WHERE key = %s",
                        (key,),
                    )

        try:
            await asyncio.gather(*(slot() for _ in range(concurrency)))
        finally:
            await jobs.close()
        stats = {
            "worker": name,
            "append_s": timing.append_s,
            "step_s": timing.step_s,
            "store_step_s": timing.store_step_s,
            **outcomes,
        }
        (out / f"{name}.json").write_text(json.dumps(stats))


async def _all_done(jobs: AsyncConnectionPool, phase: str) -> bool:
    async with jobs.connection() as conn:
        row = await (
            await conn.execute(
                "SELECT count(*) FROM scale_jobs WHERE phase = %s AND NOT done", (phase,)
            )
        ).fetchone()
    return row is not None and int(row[0]) == 0


async def _give_back(jobs: AsyncConnectionPool, key: str) -> None:
    async with jobs.connection() as conn:
        await conn.execute(
            "UPDATE scale_jobs SET worker = NULL,"
            " not_before = clock_timestamp() + make_interval(secs => %s) WHERE key = %s",
            (RETRY_S, key),
        )


def main(argv: list[str]) -> None:
    asyncio.run(serve(argv[0], dict(os.environ)))


if __name__ == "__main__":
    main(sys.argv[1:])
