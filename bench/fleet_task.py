"""What one agent process of the fleet load run does, sync or async alike: its spec, the
calls a task makes, what it persists and the records it writes (`bench.fleet_agent` runs
it; the drivers that send the calls are ``bench/_async/fleet_driver.py`` and its
generated sync twin).
"""

from __future__ import annotations

import hashlib
import json
import os
import resource
import time
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from nisse_llm.config.settings import Pin
from nisse_llm.errors import LLMError, UpstreamUnavailable
from nisse_llm.events.canonical import (
    CanonicalEvent,
    StoredEvent,
    ToolCall,
    ToolResult,
    ToolSpec,
    UserText,
)
from nisse_llm.task.logstore import FileTaskStore

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
        with FileTaskStore(path) as store:

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


def clock() -> tuple[float, float, float]:
    return time.time(), time.perf_counter(), time.process_time()
