"""``python -m bench.agent_loop [--steps 40] [--rounds 15]``: what the durable loop costs.

The stub provider (its own process: its CPU is never the client's) answers every call
with a text and one tool call, so every step is one model call and one tool run. Two
loops make the same calls and the same appends to a task file (the call records, the
reply after its batch record, the tool's start record, its result), round after round,
interleaved:

- ``task.run``: `Task.run` through a router recording in the task's file, stopped by its
  ``max_steps`` (the stub never stops asking for the tool);
- ``hand-written``: the same router, ``completion``, ``append_batch``, ``Toolbox.run``,
  ``append_tool_run`` and ``append_event`` written out.

Reported per step (median over rounds of each round's mean): client CPU and wall time,
the ratio of the loop's CPU to the hand-written one's (target: within 1.1x; the loop adds
Python, not I/O), and the share of the step's wall time and CPU spent in the task file's
appends (each one ``write`` and one ``fsync``).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.harness import stub_server
from nisse_llm import (
    FileTaskStore,
    RunLimitReached,
    Task,
    TaskStore,
    Toolbox,
    ToolCall,
    UserText,
    load_settings,
)
from nisse_llm.config.settings import Pin
from nisse_llm.task.records import ToolRunRecord
from nisse_llm.transport.routers import RoleRouter

ROLE = "executor"
PROMPT = "The cache key test fails. Find out why."


def run_tests(selector: str, verbose: bool = False) -> str:
    """Run the selected tests."""
    return f"1 passed ({selector})"


@dataclass
class Clock:
    """CPU and wall seconds spent inside the task file's appends."""

    cpu: float = 0.0
    wall: float = 0.0
    depth: int = 0


class TimedStore(FileTaskStore):
    """A task file store that adds the time of each append (outermost call only) to a clock."""

    def __init__(self, path: Path, clock: Clock) -> None:
        super().__init__(path)
        self.clock = clock

    @contextmanager
    def _timed(self) -> Iterator[None]:
        clock = self.clock
        clock.depth += 1
        cpu, wall = time.process_time(), time.perf_counter()
        try:
            yield
        finally:
            clock.depth -= 1
            if clock.depth == 0:
                clock.cpu += time.process_time() - cpu
                clock.wall += time.perf_counter() - wall

    def append_event(self, event: Any) -> Any:
        with self._timed():
            return super().append_event(event)

    def append_events(self, events: Any) -> Any:
        with self._timed():
            return super().append_events(events)

    def append_batch(self, events: Any) -> Any:
        with self._timed():
            return super().append_batch(events)

    def append_call(self, record: Any) -> Any:
        with self._timed():
            return super().append_call(record)

    def append_tool_run(self, record: Any) -> Any:
        with self._timed():
            return super().append_tool_run(record)


@dataclass
class Sample:
    """One round of one loop: per-step CPU and wall time, and the appends' part of them."""

    cpu: float
    wall: float
    append_cpu: float
    append_wall: float


def _pin(base_url: str) -> Pin:
    roles = dict.fromkeys(("executor", "planner", "delegate", "consultant"), "gpt-4.1-mini")
    return load_settings(None, llm={"base_url": base_url, "token": "sk-bench"}, roles=roles).pin()


def _hand_written(
    store: TaskStore, llm: RoleRouter, tools: Toolbox, steps: int
) -> Callable[[], None]:
    log: list[Any] = [store.append_event(UserText(text=PROMPT)).event]

    def run() -> None:
        for _ in range(steps):
            completion = llm.completion(ROLE, log, tools)
            log.extend(record.event for record in store.append_batch(completion.events))
            for call in completion.events:
                if isinstance(call, ToolCall):
                    store.append_tool_run(ToolRunRecord(call_id=call.call_id, tool=call.tool))
                    (result,) = tools.run([call])
                    log.append(store.append_event(result).event)

    return run


def _task(store: TaskStore, llm: RoleRouter, tools: Toolbox, steps: int) -> Callable[[], None]:
    task = Task.open(store, llm.pin, router=llm, prompt=PROMPT)

    def run() -> None:
        # The stub always asks for a tool: the run ends at its step limit.
        try:
            task.run(ROLE, tools=tools, max_steps=steps)
        except RunLimitReached:
            return
        raise AssertionError("the run ended before its step limit")

    return run


LOOPS = {"task.run": _task, "hand-written": _hand_written}


def _round(kind: str, base_url: str, folder: Path, steps: int) -> Sample:
    clock = Clock()
    store = TimedStore(folder / f"{kind}-{time.monotonic_ns()}.jsonl", clock)
    tools = Toolbox([run_tests], repeatable={"run_tests"})
    with RoleRouter.from_pin(_pin(base_url), store=store) as llm:
        run = LOOPS[kind](store, llm, tools, steps)
        clock.cpu = clock.wall = 0.0
        cpu, wall = time.process_time(), time.perf_counter()
        run()
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    store.close()
    return Sample(cpu / steps, wall / steps, clock.cpu / steps, clock.wall / steps)


@dataclass
class Results:
    steps: int
    rounds: int
    samples: dict[str, list[Sample]] = field(default_factory=dict)

    def median(self, kind: str, name: str) -> float:
        return statistics.median(getattr(s, name) for s in self.samples[kind])


def measure(base_url: str, *, steps: int, rounds: int) -> Results:
    """Interleaved rounds of both loops (a first, untimed round of each warms up)."""
    results = Results(steps, rounds, {kind: [] for kind in LOOPS})
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        for kind in LOOPS:
            _round(kind, base_url, folder, steps)
        for n in range(rounds):
            order = list(LOOPS) if n % 2 == 0 else list(reversed(LOOPS))
            for kind in order:
                results.samples[kind].append(_round(kind, base_url, folder, steps))
    return results


def render(results: Results) -> str:
    hand = results.median("hand-written", "cpu")
    lines = [
        f"agent loop: {results.steps} steps a round, {results.rounds} rounds (median per step)",
        "",
        "| loop | client CPU (us) | wall (ms) | CPU vs hand-written | appends' share of wall"
        " | appends' share of CPU |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for kind in LOOPS:
        cpu, wall = results.median(kind, "cpu"), results.median(kind, "wall")
        share_wall = statistics.median(s.append_wall / s.wall for s in results.samples[kind])
        share_cpu = statistics.median(s.append_cpu / s.cpu for s in results.samples[kind])
        lines.append(
            f"| {kind} | {cpu * 1e6:.0f} | {wall * 1e3:.2f} | {cpu / hand:.2f}x | "
            f"{share_wall:.0%} | {share_cpu:.0%} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.agent_loop", description=__doc__)
    parser.add_argument("--steps", type=int, default=40, help="steps a round")
    parser.add_argument("--rounds", type=int, default=15, help="timed rounds of each loop")
    args = parser.parse_args(argv)
    with stub_server() as base_url:
        results = measure(base_url, steps=args.steps, rounds=args.rounds)
    sys.stdout.write(render(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
