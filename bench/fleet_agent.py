"""One agent process of the fleet load run: short tool loops through a role router.

``python -m bench.fleet_agent SPEC_JSON`` runs tasks until the stop file appears (or
``max_tasks``): each task is a tool loop of one role, its events appended to the task's
own `LogStore` as they happen. Every call becomes one JSON line in the records file
(outcome class, status, waits taken, HTTP attempts, client CPU and wall); every task a
line with its store's record count and digest; the process a last line with its CPU.
A sync agent uses `RoleRouter`, an async one `AsyncRoleRouter`; nothing else differs.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import resource
import sys
import time
from collections.abc import Generator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TextIO

import httpx

from nisse_llm.config.settings import Pin
from nisse_llm.errors import LLMError, UpstreamUnavailable
from nisse_llm.log.canonical import (
    CanonicalEvent,
    StoredEvent,
    ToolCall,
    ToolResult,
    ToolSpec,
    UserText,
)
from nisse_llm.task.logstore import LogStore
from nisse_llm.transport.routers import AsyncRoleRouter, RoleRouter

#: Role -> proxy model the load run pins; ``planner`` shares an rpm limit, ``delegate``
#: a deployment budget (see `bench.fleet.fleet_models`).
ROLES = {
    "executor": "gpt-fleet",
    "consultant": "claude-fleet",
    "planner": "gpt-rpm",
    "delegate": "claude-budget",
}
#: The order tasks take their role in (each agent starts at its own offset).
ROTATION = ("executor", "consultant", "planner", "delegate", "executor", "consultant")
#: At most this many calls per task (the upstream ends a loop after two tool rounds).
MAX_TURNS = 4
TOOLS = [
    ToolSpec(
        name="read_file",
        description="Read a file of the repository.",
        parameters={
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
        },
    )
]


@dataclass(frozen=True)
class AgentSpec:
    """What one agent process is told (JSON on its command line)."""

    index: int
    instance: int
    base_url: str
    token: str
    mode: str  # "sync" or "async"
    store_dir: str
    records_path: str
    stop_path: str
    max_tasks: int
    rate_limit_retries: int
    rate_limit_wait_s: float
    timeout_s: float
    connect_timeout_s: float
    #: Pause after a failed task before the next one ("keep the work, resume later").
    pause_s: float
    #: Every n-th call of a consultant task is streamed (0: none).
    stream_every: int

    def pin(self) -> Pin:
        return Pin.model_validate(
            {
                "base_url": self.base_url,
                "token": self.token,
                "roles": ROLES,
                "timeout_s": self.timeout_s,
                "passthrough_timeout_s": self.timeout_s,
                "connect_timeout_s": self.connect_timeout_s,
                "stream_idle_timeout_s": self.timeout_s,
                "rate_limit_retries": self.rate_limit_retries,
                "rate_limit_wait_s": self.rate_limit_wait_s,
                "max_output_tokens": 1024,
            }
        )


@dataclass(frozen=True)
class Step:
    """One call a task wants made."""

    role: str
    log: list[CanonicalEvent]
    streamed: bool
    turn: int


class _Counting(httpx.BaseTransport):
    """Counts HTTP attempts (the router's clients share it)."""

    def __init__(self) -> None:
        self.inner = httpx.HTTPTransport()
        self.count = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.count += 1
        return self.inner.handle_request(request)

    def close(self) -> None:
        self.inner.close()


class _AsyncCounting(httpx.AsyncBaseTransport):
    def __init__(self) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.count = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.count += 1
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


class Agent:
    """The task logic, shared by both drivers: which calls to make and what to persist."""

    def __init__(self, spec: AgentSpec, out: TextIO) -> None:
        self.spec = spec
        self.out = out
        self.sleeps: list[float] = []
        self.calls = 0

    def write(self, record: dict[str, Any]) -> None:
        self.out.write(json.dumps(record) + "\n")
        self.out.flush()

    def should_stop(self, task: int) -> bool:
        return task >= self.spec.max_tasks or os.path.exists(self.spec.stop_path)

    def task(self, task: int) -> Generator[Step, list[CanonicalEvent] | None, bool]:
        """Yield the calls of one task, receiving each reply (None: it failed); True if it ended well."""
        spec = self.spec
        role = ROTATION[(spec.index + task) % len(ROTATION)]
        path = Path(spec.store_dir) / f"agent{spec.index:02d}-task{task:04d}.jsonl"
        digest = hashlib.sha256()
        appended = 0
        with LogStore(path) as store:

            def persist(events: Sequence[CanonicalEvent]) -> None:
                nonlocal appended
                records = [StoredEvent.now(appended + i, e) for i, e in enumerate(events)]
                store.append(records)
                appended += len(records)
                for record in records:
                    digest.update(record.model_dump_json().encode())

            log: list[CanonicalEvent] = [
                UserText(text=f"Agent {spec.index}, task {task}: read the two modules and sum up.")
            ]
            persist(log)
            ended_well = False
            for turn in range(MAX_TURNS):
                streamed = (
                    role == "consultant"
                    and spec.stream_every > 0
                    and (task + turn) % spec.stream_every == 0
                )
                events = yield Step(role=role, log=list(log), streamed=streamed, turn=turn)
                if events is None:
                    break
                persist(events)
                log += events
                calls = [e for e in events if isinstance(e, ToolCall)]
                if not calls:
                    ended_well = True
                    break
                results = [
                    ToolResult(
                        call_id=c.call_id, output=f"# {c.arguments.get('path')}\n" + "x = 1\n" * 20
                    )
                    for c in calls
                ]
                persist(results)
                log += results
        self.write(
            {
                "kind": "task",
                "agent": spec.index,
                "task": task,
                "role": role,
                "store": str(path),
                "records": appended,
                "digest": digest.hexdigest(),
            }
        )
        return ended_well

    def record_call(
        self,
        step: Step,
        task: int,
        started: tuple[float, float, float],
        attempts: int,
        error: BaseException | None,
    ) -> None:
        wall0, perf0, cpu0 = started
        cpu = time.process_time() - cpu0
        wall = time.perf_counter() - perf0
        self.calls += 1
        record: dict[str, Any] = {
            "kind": "call",
            "agent": self.spec.index,
            "instance": self.spec.instance,
            "mode": self.spec.mode,
            "task": task,
            "turn": step.turn,
            "role": step.role,
            "streamed": step.streamed,
            "t0": wall0,
            "t1": wall0 + wall,
            "wall_s": wall,
            "cpu_s": cpu,
            "attempts": attempts,
            "sleeps": list(self.sleeps),
            "outcome": "ok",
            "in_tree": True,
            "status": None,
            "retry_after_s": None,
            "message": None,
        }
        if error is not None:
            record["outcome"] = type(error).__name__
            record["in_tree"] = isinstance(error, LLMError)
            record["message"] = str(error)[:300]
            if isinstance(error, LLMError):
                record["status"] = error.status
            if isinstance(error, UpstreamUnavailable):
                record["retry_after_s"] = error.retry_after_s
        self.write(record)

    def finish(self, started: float) -> None:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        self.write(
            {
                "kind": "agent",
                "agent": self.spec.index,
                "instance": self.spec.instance,
                "mode": self.spec.mode,
                "calls": self.calls,
                "cpu_s": usage.ru_utime + usage.ru_stime,
                "wall_s": time.perf_counter() - started,
            }
        )


def _clock() -> tuple[float, float, float]:
    return time.time(), time.perf_counter(), time.process_time()


def run_sync(agent: Agent) -> None:
    spec = agent.spec
    counter = _Counting()

    def sleep(seconds: float) -> None:
        agent.sleeps.append(seconds)
        time.sleep(seconds)

    with RoleRouter.from_pin(spec.pin(), transport=counter, sleep=sleep) as router:
        task = 0
        while not agent.should_stop(task):
            steps = agent.task(task)
            step = next(steps)
            ok = False
            try:
                while True:
                    agent.sleeps.clear()
                    before = counter.count
                    started = _clock()
                    error: BaseException | None = None
                    events: list[CanonicalEvent] | None = None
                    try:
                        if step.streamed:
                            with router.stream(step.role, step.log, TOOLS) as reply:
                                for _ in reply:
                                    pass
                                events = reply.events
                        else:
                            events = router.complete(step.role, step.log, TOOLS)
                    except Exception as exc:
                        error = exc
                    agent.record_call(step, task, started, counter.count - before, error)
                    step = steps.send(events)
            except StopIteration as done:
                ok = bool(done.value)
            if not ok:
                time.sleep(spec.pause_s)
            task += 1


async def run_async(agent: Agent) -> None:
    spec = agent.spec
    counter = _AsyncCounting()

    async def sleep(seconds: float) -> None:
        agent.sleeps.append(seconds)
        await asyncio.sleep(seconds)

    async with AsyncRoleRouter.from_pin(spec.pin(), transport=counter, sleep=sleep) as router:
        task = 0
        while not agent.should_stop(task):
            steps = agent.task(task)
            step = next(steps)
            ok = False
            try:
                while True:
                    agent.sleeps.clear()
                    before = counter.count
                    started = _clock()
                    error: BaseException | None = None
                    events: list[CanonicalEvent] | None = None
                    try:
                        if step.streamed:
                            async with router.stream(step.role, step.log, TOOLS) as reply:
                                async for _ in reply:
                                    pass
                                events = reply.events
                        else:
                            events = await router.complete(step.role, step.log, TOOLS)
                    except Exception as exc:
                        error = exc
                    agent.record_call(step, task, started, counter.count - before, error)
                    step = steps.send(events)
            except StopIteration as done:
                ok = bool(done.value)
            if not ok:
                await asyncio.sleep(spec.pause_s)
            task += 1


def main(argv: Sequence[str]) -> int:
    spec = AgentSpec(**json.loads(argv[0]))
    started = time.perf_counter()
    with open(spec.records_path, "a", encoding="utf-8") as out:
        agent = Agent(spec, out)
        out.write(json.dumps({"kind": "spec", **asdict(spec), "token": "<redacted>"}) + "\n")
        if spec.mode == "async":
            asyncio.run(run_async(agent))
        else:
            run_sync(agent)
        agent.finish(started)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
