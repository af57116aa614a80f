"""Timing in one process: contenders interleaved round by round, so drift hits all alike.

Client CPU is ``time.process_time`` (every thread of this process, user and system;
the stub is another process), wall is ``time.perf_counter``; both per call, reported
as medians.
"""

from __future__ import annotations

import cProfile
import gc
import json
import os
import pstats
import statistics
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from bench import stub
from bench.contenders import CATALOGUE, Contender, Skipped, build, expected_request
from bench.workload import MAX_TOKENS, MODEL_CHAT, MODEL_MESSAGES, SYSTEM, Workload


@contextmanager
def stub_server(*, cpu: int | None = None) -> Iterator[str]:
    """Start the stub in its own process (pinned to ``cpu`` if given); yield its base URL."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "bench.stub"],
        stdout=subprocess.PIPE,
        text=True,
        preexec_fn=(lambda: os.sched_setaffinity(0, {cpu})) if cpu is not None else None,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line.startswith("PORT "):
            raise RuntimeError(f"stub did not start: {line!r}")
        yield f"http://127.0.0.1:{int(line.split()[1])}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def last_request(base_url: str) -> dict[str, Any]:
    """The stub's description of the last body it received."""
    with urllib.request.urlopen(f"{base_url}/_last", timeout=10) as response:
        data: dict[str, Any] = json.loads(response.read())
        return data


@dataclass
class Samples:
    """Per-call CPU and wall seconds of one contender."""

    cpu: list[float] = field(default_factory=list)
    wall: list[float] = field(default_factory=list)

    @property
    def cpu_median(self) -> float:
        return statistics.median(self.cpu)

    @property
    def wall_median(self) -> float:
        return statistics.median(self.wall)


# Background threads count as settled once they use under this much CPU in a poll.
_IDLE_CPU_S = 0.0005
_POLL_S = 0.005


def _settled(cpu: float) -> float:
    """Process CPU once background threads go idle (excluding the idle poll itself)."""
    while True:
        time.sleep(_POLL_S)
        now = time.process_time()
        if now - cpu < _IDLE_CPU_S:
            return cpu
        cpu = now


def timed(
    fn: Callable[[Any], Any], arg: Any, *, background: bool = False
) -> tuple[float, float, Any]:
    """CPU and wall seconds of one ``fn(arg)``, and its result.

    With ``background``, CPU also counts the work the call left on other threads (until
    they idle), so it is charged to its caller rather than to the next contender.
    """
    c0, w0 = time.process_time(), time.perf_counter()
    result = fn(arg)
    w1, c1 = time.perf_counter(), time.process_time()
    if background:
        c1 = _settled(c1)
    return c1 - c0, w1 - w0, result


def build_all(keys: list[str], base_url: str) -> tuple[list[Contender], dict[str, str]]:
    """The contenders that can run here, and the reason each other one is skipped."""
    ready, skipped = [], {}
    for key in keys:
        try:
            ready.append(build(key, base_url))
        except Skipped as exc:
            skipped[key] = str(exc)
        except Exception as exc:  # a contender still being built elsewhere must not stop the run
            skipped[key] = f"could not be built ({type(exc).__name__}: {exc})"
    return ready, skipped


def check_all(
    contenders: list[Contender], wl: Workload, base_url: str
) -> tuple[list[Contender], dict[str, str]]:
    """Call each contender once and check both its answer and the body the stub got."""
    good, failed = [], {}
    for c in contenders:
        try:
            c.check(timed(c.call, c.prepare(wl), background=c.background)[2])
            got = last_request(base_url)
            want = expected_request(c.key, wl)
            seen = {k: got.get(k) for k in want}
            if seen != want:
                raise AssertionError(f"stub received {seen}, expected {want}")
        except Exception as exc:
            failed[c.key] = f"{type(exc).__name__}: {str(exc)[:300]}"
        else:
            good.append(c)
    return good, failed


def interleave(
    contenders: list[Contender], wl: Workload, *, rounds: int, warmup: int
) -> dict[str, Samples]:
    """Per-call samples at a fixed history size, one call per contender per round."""
    samples = {c.key: Samples() for c in contenders}
    for r in range(warmup + rounds):
        gc.collect()
        shift = r % len(contenders)
        for c in contenders[shift:] + contenders[:shift]:
            cpu, wall, _ = timed(c.call, c.prepare(wl), background=c.background)
            if r >= warmup:
                samples[c.key].cpu.append(cpu)
                samples[c.key].wall.append(wall)
    return samples


@dataclass
class Growth:
    """The growing-log loop: per-call samples by history size, for calls and renders."""

    turns: list[int] = field(default_factory=list)
    cpu: dict[str, list[float]] = field(default_factory=dict)


def _renderers() -> dict[str, Callable[[list[Any]], bytes]]:
    """Render-only callables per route (their own renderer instances, as clients hold one)."""
    from nisse_llm.render.anthropic_messages import AnthropicMessagesRenderer
    from nisse_llm.render.openai_chat import OpenAIChatRenderer

    specs = Workload.tool_specs()
    chat, messages = OpenAIChatRenderer(), AnthropicMessagesRenderer()

    def render_chat(records: list[Any]) -> bytes:
        return chat.render_bytes(records, specs, MODEL_CHAT, SYSTEM, max_tokens=MAX_TOKENS)

    def render_messages(records: list[Any]) -> bytes:
        return messages.render_bytes(records, specs, MODEL_MESSAGES, SYSTEM, max_tokens=MAX_TOKENS)

    return {"render-chat": render_chat, "render-messages": render_messages}


def renderers_or_reason() -> tuple[dict[str, Callable[[list[Any]], bytes]], str | None]:
    """The render-only callables, or why they are not available."""
    try:
        return _renderers(), None
    except (ImportError, AttributeError) as exc:
        return {}, f"renderers not importable ({exc})"


def grow(contenders: list[Contender], *, start: int, end: int) -> Growth:
    """One agent log growing a turn per call from ``start`` to ``end`` turns.

    Every step appends one turn (new event objects, the old ones kept) and makes one
    call per contender, plus one render per route on the same log.
    """
    wl = Workload.of(start)
    renders, _ = renderers_or_reason()
    out = Growth(cpu={c.key: [] for c in contenders} | {k: [] for k in renders})
    records = wl.records()
    for fn in renders.values():
        fn(records)
    step = 0
    while len(wl.turns) < end:
        wl.grow()
        step += 1
        out.turns.append(len(wl.turns))
        gc.collect(0)
        shift = step % len(contenders) if contenders else 0
        for c in contenders[shift:] + contenders[:shift]:
            arg = wl.records() if c.group == "nisse" else c.prepare(wl)
            out.cpu[c.key].append(timed(c.call, arg, background=c.background)[0])
        for key, fn in renders.items():
            out.cpu[key].append(timed(fn, wl.records())[0])
    return out


def render_costs(wl: Workload, *, rounds: int) -> dict[str, dict[str, float]]:
    """Median render CPU per route: warm (an agent step: the log without its last turn was
    rendered just before, the last turn is new) and cold (every event new)."""
    renders, _ = renderers_or_reason()
    out: dict[str, dict[str, float]] = {}
    for key, fn in renders.items():
        warm, cold = [], []
        for _ in range(rounds):
            records = wl.records_fresh_tail()
            fn(records[: -wl.tail_length()])
            warm.append(timed(fn, records)[0])
            cold.append(timed(fn, wl.records_all_fresh())[0])
        out[key] = {"warm": statistics.median(warm), "cold": statistics.median(cold)}
    return out


def parse_cost(route: str, *, rounds: int) -> float | None:
    """Median CPU of parsing the stub's answer on ``route``."""
    try:
        if route == "chat":
            from nisse_llm.render.openai_chat import OpenAIChatRenderer

            renderer: Any = OpenAIChatRenderer()
            body = json.dumps(stub.CHAT_BODY).encode()
            model = MODEL_CHAT
        else:
            from nisse_llm.render.anthropic_messages import AnthropicMessagesRenderer

            renderer = AnthropicMessagesRenderer()
            body = json.dumps(stub.MESSAGES_BODY).encode()
            model = MODEL_MESSAGES
    except ImportError:
        return None
    costs = [
        timed(lambda b: renderer.parse(b, requested_model=model), body)[0] for _ in range(rounds)
    ]
    return statistics.median(costs)


@dataclass
class Profile:
    """The top functions of a profiled run, per call."""

    key: str
    turns: int
    calls: int
    rows: list[tuple[str, int, float, float]]  # function, calls per call, tottime us, cumtime us


def profile(c: Contender, wl: Workload, *, calls: int, top: int = 14) -> Profile:
    """Profile ``calls`` calls of ``c`` (each prepared outside the profiler)."""
    prof = cProfile.Profile()
    for _ in range(calls):
        arg = c.prepare(wl)
        prof.enable()
        c.call(arg)
        prof.disable()
    stats = pstats.Stats(prof)
    table: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    rows = []
    for (filename, line, name), (_, ncalls, tottime, cumtime, _) in table.items():
        where = _short(filename)
        rows.append((f"{where}:{line}({name})", ncalls / calls, tottime / calls, cumtime / calls))
    rows.sort(key=lambda r: r[2], reverse=True)
    return Profile(
        c.key,
        len(wl.turns),
        calls,
        [(f, round(n), t * 1e6, cu * 1e6) for f, n, t, cu in rows[:top]],
    )


def _short(filename: str) -> str:
    for marker, keep in (
        ("site-packages/", ""),
        ("/nisse_llm/", "nisse_llm/"),
        ("/bench/", "bench/"),
    ):
        if marker in filename:
            return keep + filename.split(marker, 1)[1]
    return filename.rsplit("/", 1)[-1]


def catalogue_keys() -> list[str]:
    """Every contender key, in report order."""
    return list(CATALOGUE)
