"""``python -m bench.fleet [--smoke] [--out PATH]``: agent processes against a proxy fleet.

One real Redis, two LiteLLM proxy instances sharing it (`nisse_llm.testing.fleet`), the
scripted upstream behind them, and many agent processes (`bench.fleet_agent`), sync and
async, each on one instance as a load balancer would place it. ``planner`` calls go to
a deployment with a shared ``rpm`` limit, ``delegate`` calls to one with a shared budget
that the first call crosses. Part-way through, one instance is SIGKILLed. The report
(bench/FLEET.md for the full run) gives calls, calls per second, client CPU and wall
per call, every outcome by class, the upstream's per-minute count on the limited
deployment, what the kill did, and whether any agent lost a logged event.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.fleet_agent import MAX_TURNS, ROLES, AgentSpec
from nisse_llm.task.logstore import FileTaskStore
from nisse_llm.testing import ScriptedServer, ToolUse, reply, slow
from nisse_llm.testing.fleet import REDIS_PIN, LiteLLMFleet
from nisse_llm.testing.proxy import LITELLM_PIN, ProxyModel
from nisse_llm.testing.script import RecordedRequest, Script
from nisse_llm.testing.turns import Turn

ROOT = Path(__file__).resolve().parent.parent
#: Tool rounds per task before the upstream answers with text (so a task is 3 calls).
TOOL_ROUNDS = 2
#: The shared budget: any call costs more, so the first one crosses it.
BUDGET_USD, COST_PER_TOKEN = 1e-6, 1e-3
#: LiteLLM copies in-memory spend to Redis every second; allow for a loaded machine.
BUDGET_SYNC_S = 4.0


@dataclass(frozen=True)
class Plan:
    """How big a run is and when the kill comes."""

    agents: int
    duration_s: float
    #: Kill instance 1 once budget refusals were seen on every instance, but not before
    #: ``kill_after_s`` and at the latest at ``kill_by_s`` (None: no kill).
    kill_after_s: float | None
    kill_by_s: float
    rpm: int = 4
    rate_limit_retries: int = 1
    rate_limit_wait_s: float = 0.5
    timeout_s: float = 10.0
    connect_timeout_s: float = 2.0
    upstream_delay_s: float = 0.05
    pause_s: float = 0.3
    stream_every: int = 2
    max_tasks: int = 10_000
    smoke: bool = False


FULL = Plan(agents=16, duration_s=100.0, kill_after_s=65.0, kill_by_s=75.0)
SMOKE = Plan(agents=8, duration_s=30.0, kill_after_s=14.0, kill_by_s=22.0, smoke=True)


def fleet_models(rpm: int) -> list[ProxyModel]:
    """The deployments the run pins its roles to (see `bench.fleet_agent.ROLES`)."""
    return [
        ProxyModel("gpt-fleet", "openai"),
        ProxyModel("claude-fleet", "anthropic"),
        ProxyModel("gpt-rpm", "openai", rpm=rpm),
        ProxyModel(
            "claude-budget",
            "anthropic",
            max_budget=BUDGET_USD,
            input_cost_per_token=COST_PER_TOKEN,
            output_cost_per_token=COST_PER_TOKEN,
        ),
    ]


def _tool_results_in(request: RecordedRequest) -> int:
    body = request.json
    if not isinstance(body, dict):
        return 0
    count = 0
    for message in body.get("messages") or []:
        if message.get("role") == "tool":
            count += 1
        elif isinstance(message.get("content"), list):
            count += sum(
                1
                for block in message["content"]
                if isinstance(block, dict) and block.get("type") == "tool_result"
            )
    return count


def upstream_script(delay_s: float) -> Script:
    """An upstream answering any number of tool loops: a tool call per round, then text."""

    def answer(request: RecordedRequest) -> Turn:
        rounds = _tool_results_in(request)
        if rounds < TOOL_ROUNDS:
            turn = reply(ToolUse("read_file", {"path": f"src/module_{rounds}.py"}))
        else:
            turn = reply("Both modules define x = 1; nothing else to report.")
        return slow(turn, delay_s)

    return Script(fallback=answer)


@dataclass
class LoadResult:
    """Everything a run recorded: raw, for the report and for the fleet test."""

    plan: Plan
    instances: int
    calls: list[dict[str, Any]]
    tasks: list[dict[str, Any]]
    agents: list[dict[str, Any]]
    exit_codes: list[int | None]
    stderr: list[str]
    #: (arrival time, model) of every request the upstream received.
    upstream: list[tuple[float, str]]
    started_at: float
    kill_at: float | None
    redis_keys: list[str]
    fleet_startup_s: float | None = None
    #: CPU seconds each server process used during the load (the killed one: until the kill).
    server_cpu_s: dict[str, float | None] = field(default_factory=dict)


def _read_records(paths: list[Path]) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    for path in paths:
        with contextlib.suppress(FileNotFoundError):
            for line in path.read_text().splitlines():
                if line.endswith("}"):
                    records.append(json.loads(line))
    return records


def _budget_refused_everywhere(records: list[dict[str, Any]], instances: int) -> bool:
    ok = [
        r["t1"]
        for r in records
        if r.get("kind") == "call" and r["role"] == "delegate" and r["outcome"] == "ok"
    ]
    if not ok:
        return False
    settled = min(ok) + BUDGET_SYNC_S
    refused = {
        r["instance"]
        for r in records
        if r.get("kind") == "call" and r["outcome"] == "BudgetExhausted" and r["t0"] > settled
    }
    return len(refused) == instances


def process_cpu_s(pid: int | None) -> float | None:
    """User+system CPU seconds of a running process (Linux ``/proc``), or None."""
    if pid is None:
        return None
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _server_cpu(fleet: LiteLLMFleet) -> dict[str, float | None]:
    cpu = {f"instance {i}": process_cpu_s(p.pid) for i, p in enumerate(fleet.instances)}
    cpu["redis"] = process_cpu_s(fleet.redis.pid)
    return cpu


def _spent(start: float | None, end: float | None) -> float | None:
    return None if start is None or end is None else end - start


def run_load(
    fleet: LiteLLMFleet, script: Script, plan: Plan, workdir: Path, *, kill_index: int = 1
) -> LoadResult:
    """Run ``plan.agents`` agent processes against ``fleet``; kill one instance part-way."""
    instances = len(fleet.instances)
    stores = workdir / "stores"
    stores.mkdir(parents=True, exist_ok=True)
    stop = workdir / "stop"
    paths = [workdir / f"agent{i:02d}.jsonl" for i in range(plan.agents)]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    procs: list[subprocess.Popen[bytes]] = []
    errs: list[Path] = []
    kill_at: float | None = None
    started_at = time.time()
    cpu_start = _server_cpu(fleet)
    cpu_end: dict[str, float | None] = {}
    try:
        for i in range(plan.agents):
            instance = i % instances
            spec = AgentSpec(
                index=i,
                instance=instance,
                base_url=fleet.instances[instance].base_url,
                token=fleet.token,
                # Alternate in pairs, so every instance serves both kinds.
                mode="async" if (i // instances) % 2 else "sync",
                store_dir=str(stores),
                records_path=str(paths[i]),
                stop_path=str(stop),
                max_tasks=plan.max_tasks,
                rate_limit_retries=plan.rate_limit_retries,
                rate_limit_wait_s=plan.rate_limit_wait_s,
                timeout_s=plan.timeout_s,
                connect_timeout_s=plan.connect_timeout_s,
                pause_s=plan.pause_s,
                stream_every=plan.stream_every,
            )
            errs.append(workdir / f"agent{i:02d}.err")
            with errs[-1].open("wb") as err:
                procs.append(
                    subprocess.Popen(
                        [sys.executable, "-m", "bench.fleet_agent", json.dumps(asdict(spec))],
                        cwd=ROOT,
                        env=env,
                        stdin=subprocess.DEVNULL,
                        stdout=subprocess.DEVNULL,
                        stderr=err,
                    )
                )
        started_at = time.time()
        deadline = started_at + plan.duration_s
        while time.time() < deadline:
            time.sleep(0.25)
            if all(p.poll() is not None for p in procs):
                break
            elapsed = time.time() - started_at
            due = plan.kill_after_s is not None and kill_at is None and elapsed >= plan.kill_after_s
            if due and (
                elapsed >= plan.kill_by_s
                or _budget_refused_everywhere(_read_records(paths), instances)
            ):
                name = f"instance {kill_index}"
                cpu_end[name] = process_cpu_s(fleet.instances[kill_index].pid)
                fleet.kill(kill_index)
                kill_at = time.time()
        stop.touch()
        for proc in procs:
            try:
                proc.wait(timeout=plan.timeout_s * MAX_TURNS + 60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        # The killed instance keeps what was measured just before its kill.
        cpu_end = {**_server_cpu(fleet), **cpu_end}
    finally:
        # Ctrl-C or a failure: no agent outlives the run.
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    records = _read_records(paths)
    keys = fleet.redis.command("KEYS", "*") if fleet.redis.pid is not None else []
    return LoadResult(
        plan=plan,
        instances=instances,
        calls=[r for r in records if r["kind"] == "call"],
        tasks=[r for r in records if r["kind"] == "task"],
        agents=[r for r in records if r["kind"] == "agent"],
        exit_codes=[p.returncode for p in procs],
        stderr=[e.read_text(errors="replace")[-2000:] for e in errs],
        upstream=[
            (r.received_at, str((r.json or {}).get("model")))
            for r in script.requests
            if isinstance(r.json, dict)
        ],
        started_at=started_at,
        kill_at=kill_at,
        redis_keys=sorted(keys or []),
        fleet_startup_s=fleet.startup_s,
        server_cpu_s={name: _spent(cpu_start.get(name), end) for name, end in cpu_end.items()},
    )


def lost_events(task: dict[str, Any]) -> int:
    """How many records an agent appended (acknowledged) that its store does not give back."""
    import hashlib

    read = FileTaskStore(task["store"]).read()
    digest = hashlib.sha256()
    for record in read.records[: task["records"]]:
        digest.update(record.model_dump_json().encode())
    if len(read.records) < task["records"] or digest.hexdigest() != task["digest"]:
        return max(task["records"] - len(read.records), 1)
    return 0


def per_minute(upstream: list[tuple[float, str]], model: str) -> dict[str, int]:
    """Requests the upstream received for ``model`` per UTC minute (LiteLLM's rpm window)."""
    counts: Counter[str] = Counter()
    for at, name in upstream:
        if name == model:
            counts[datetime.fromtimestamp(at, UTC).strftime("%H:%M")] += 1
    return dict(sorted(counts.items()))


OUTCOME_ROWS = (
    "ok",
    "UpstreamUnavailable, no retry",
    "UpstreamUnavailable after a retry",
    "BudgetExhausted",
    "StreamInterrupted",
)


def outcome_class(call: dict[str, Any]) -> str:
    """The row a call is counted in."""
    outcome = call["outcome"]
    if not call["in_tree"]:
        return f"outside the error tree: {outcome}"
    if outcome == "UpstreamUnavailable":
        return (
            "UpstreamUnavailable after a retry"
            if call["sleeps"]
            else "UpstreamUnavailable, no retry"
        )
    return outcome


# -- the report ------------------------------------------------------------------------


_HASH = re.compile(r"[0-9a-f]{64}")


def _pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _ms(value: float) -> str:
    return f"{value * 1000:.1f}"


def render(result: LoadResult) -> str:
    """The Markdown report of one run."""
    plan = result.plan
    calls = result.calls
    lines: list[str] = []
    title = "nisse_llm fleet load run" + (" (smoke run)" if plan.smoke else "")
    lines += [f"# {title}", ""]
    lines += [
        f"Measured {datetime.now(UTC):%Y-%m-%d} on {os.cpu_count()} cores, Python "
        f"{platform.python_version()}, {LITELLM_PIN}, {REDIS_PIN} (Redis 6.2). "
        f"{plan.agents} agent processes "
        f"({sum(1 for a in result.agents if a['mode'] == 'sync')} sync `RoleRouter`, "
        f"{sum(1 for a in result.agents if a['mode'] == 'async')} async `AsyncRoleRouter`) "
        f"spread over {result.instances} proxy instances sharing one Redis, for "
        f"{plan.duration_s:.0f} s; each runs tasks of up to {MAX_TURNS} calls (a tool loop "
        f"of two tool rounds), one role per task. Roles: "
        + ", ".join(f"{role} -> `{model}`" for role, model in ROLES.items())
        + f". `gpt-rpm` has rpm {plan.rpm} shared through Redis; `claude-budget` a shared "
        f"max_budget of ${BUDGET_USD:g} that its first call crosses. The client retries a 429 "
        f"{plan.rate_limit_retries}x after {plan.rate_limit_wait_s} s; read timeout "
        f"{plan.timeout_s:.0f} s, connect timeout {plan.connect_timeout_s:.0f} s. The scripted "
        f"upstream answers after {plan.upstream_delay_s * 1000:.0f} ms.",
        "",
        "Reproduce: `make fleet` (this file), or `python -m bench.fleet --smoke` (a small run "
        "that prints its report; CI runs one in tests/integration/test_fleet.py).",
        "",
    ]
    if result.fleet_startup_s is not None:
        lines += [
            f"Fleet startup (Redis and both instances, launched together): "
            f"{result.fleet_startup_s:.1f} s.",
            "",
        ]
    before = [c for c in calls if result.kill_at is None or c["t1"] <= result.kill_at]
    span = (max(c["t1"] for c in calls) - min(c["t0"] for c in calls)) if calls else 0.0
    span_before = (max(c["t1"] for c in before) - min(c["t0"] for c in before)) if before else 0.0
    ok = [c for c in calls if c["outcome"] == "ok"]
    ok_before = [c for c in before if c["outcome"] == "ok"]
    lines += ["## Throughput", "", "| measure | value |", "| --- | --- |"]
    lines += [
        f"| calls completed (any outcome) | {len(calls)} |",
        f"| of which answered by the model | {len(ok)} |",
        f"| calls per second, whole run | {len(calls) / span if span else 0:.1f} |",
        f"| answered calls per second before the kill (both instances) | "
        f"{len(ok_before) / span_before if span_before else 0:.1f} |",
    ]
    if result.kill_at is not None:
        after = [c for c in ok if c["t0"] > result.kill_at]
        span_after = (max(c["t1"] for c in after) - result.kill_at) if after else 0.0
        lines.append(
            f"| answered calls per second after the kill (one instance) | "
            f"{len(after) / span_after if span_after else 0:.1f} |"
        )
    lines += [
        f"| tasks | {len(result.tasks)} |",
    ]
    agent_cpu = sum(a["cpu_s"] for a in result.agents)
    lines.append(
        f"| agent processes' total CPU (user+sys, incl. start-up and imports) | {agent_cpu:.1f} s |"
    )
    for name, spent in result.server_cpu_s.items():
        if spent is None:
            continue
        index = int(name.split()[-1]) if name.startswith("instance") else None
        handled = sum(
            c["attempts"]
            for c in calls
            if c["instance"] == index and (c["outcome"] == "ok" or c["status"] is not None)
        )
        per = f", {spent / handled * 1000:.0f} ms per request it answered" if handled else ""
        lines.append(f"| CPU of {name} during the load | {spent:.1f} s{per} |")
    lines.append("")
    lines += [
        "## Per call (client side)",
        "",
        "Client CPU is the agent process's CPU inside the call (rendering, HTTP, parsing, "
        "retries' waits excluded); wall includes the proxy's and upstream's time and any "
        "retry wait.",
        "",
        "| calls | n | CPU median ms | CPU p99 ms | wall median ms | wall p99 ms |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    groups = [
        ("answered by the model", ok),
        ("answered, sync agents", [c for c in ok if c["mode"] == "sync"]),
        ("answered, async agents", [c for c in ok if c["mode"] == "async"]),
        ("answered, streamed", [c for c in ok if c["streamed"]]),
        ("every call", calls),
    ]
    for label, group in groups:
        cpu = [c["cpu_s"] for c in group]
        wall = [c["wall_s"] for c in group]
        lines.append(
            f"| {label} | {len(group)} | {_ms(_pct(cpu, 0.5))} | {_ms(_pct(cpu, 0.99))} | "
            f"{_ms(_pct(wall, 0.5))} | {_ms(_pct(wall, 0.99))} |"
        )
    lines += [
        "",
        "## Outcomes by class",
        "",
        "| outcome | calls | by role | statuses |",
        "| --- | --- | --- | --- |",
    ]
    # Every outcome class has a row, even at zero.
    classes: dict[str, list[dict[str, Any]]] = {name: [] for name in OUTCOME_ROWS}
    for call in calls:
        name = outcome_class(call)
        if name not in OUTCOME_ROWS and call["in_tree"]:
            name = f"other LLMError: {call['outcome']}"
        classes.setdefault(name, []).append(call)
    if not any(name.startswith("outside the error tree") for name in classes):
        classes["outside the error tree"] = []
    for name in classes:
        group = classes[name]
        roles = Counter(c["role"] for c in group)
        statuses = Counter(str(c["status"]) for c in group)
        lines.append(
            f"| {name} | {len(group)} | "
            + ", ".join(f"{r} {n}" for r, n in sorted(roles.items()))
            + " | "
            + ", ".join(f"{s} {n}" for s, n in sorted(statuses.items()))
            + " |"
        )
    lines += ["", "## Shared limits", ""]
    minutes = per_minute(result.upstream, "gpt-rpm")
    lines += [
        f"Requests the upstream received for `gpt-rpm` (rpm {plan.rpm} shared by both "
        "instances), per UTC minute: "
        + (", ".join(f"{m} {n}" for m, n in minutes.items()) or "none")
        + f"; the most in one minute: {max(minutes.values(), default=0)}.",
        "",
    ]
    budget_ok = [c for c in calls if c["role"] == "delegate" and c["outcome"] == "ok"]
    refused = [c for c in calls if c["outcome"] == "BudgetExhausted"]
    # Spend is booked when a call is answered: count from the first answer.
    booked = min((c["t1"] for c in budget_ok), default=0.0)
    window = max((c["t0"] - booked for c in budget_ok), default=0.0)
    lines += [
        f"`claude-budget`: {len(budget_ok)} calls answered (the first crossed the budget; the "
        f"last answered one started {window:+.1f} s after the first answer, before that spend "
        f"reached Redis), then {len(refused)} `BudgetExhausted` (on instances "
        f"{sorted({c['instance'] for c in refused})}), none retried: "
        f"{sum(1 for c in refused if c['attempts'] != 1 or c['sleeps'])} with more than one "
        "attempt or a wait.",
        "",
    ]
    if result.kill_at is not None:
        at = result.kill_at - result.started_at
        dead = [c for c in calls if c["instance"] == 1 and c["t1"] > result.kill_at]
        alive = [c for c in calls if c["instance"] != 1 and c["t0"] > result.kill_at]
        lines += [
            "## One instance killed",
            "",
            f"Instance 1 was SIGKILLed {at:.1f} s into the load. Its calls that were in "
            f"flight or started afterwards: {len(dead)}, "
            + ", ".join(f"{n} {k}" for k, n in Counter(outcome_class(c) for c in dead).items())
            + f"; the slowest took {_ms(max((c['wall_s'] for c in dead), default=0))} ms "
            f"(connect timeout {plan.connect_timeout_s:.0f} s, read timeout "
            f"{plan.timeout_s:.0f} s). The agents on the other instance made "
            f"{len(alive)} calls after the kill, {sum(1 for c in alive if c['outcome'] == 'ok')} "
            "answered.",
            "",
        ]
    lost = sum(lost_events(t) for t in result.tasks)
    outside = sum(1 for c in calls if not c["in_tree"])
    lines += [
        "## Invariants",
        "",
        f"- Agent processes that exited non-zero: {sum(1 for c in result.exit_codes if c != 0)}.",
        f"- Calls that raised outside nisse_llm's error tree: {outside}.",
        f"- Events appended to a `TaskStore` and not read back: {lost} "
        f"(of {sum(t['records'] for t in result.tasks)} in {len(result.tasks)} stores).",
        "- Redis keys at the end: "
        + (
            ", ".join(f"`{_HASH.sub(lambda m: m[0][:8] + '…', k)}`" for k in result.redis_keys)
            or "none"
        )
        + " (rpm counters expire after 60 s).",
        "",
    ]
    return "\n".join(lines)


@contextlib.contextmanager
def fleet_for(plan: Plan, *, instances: int = 2) -> Iterator[tuple[LiteLLMFleet, Script]]:
    """The scripted upstream and a fleet over `fleet_models`, stopped on leaving."""
    script = upstream_script(plan.upstream_delay_s)
    with (
        ScriptedServer(script) as upstream,
        LiteLLMFleet(
            upstream.base_url,
            instances=instances,
            models=fleet_models(plan.rpm),
            request_timeout_s=plan.timeout_s,
        ) as fleet,
    ):
        yield fleet, script


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.fleet", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--smoke", action="store_true", help="a small, short run")
    parser.add_argument("--out", type=Path, help="where to write the report")
    parser.add_argument("--agents", type=int, help="agent processes (default 16, smoke 8)")
    parser.add_argument("--duration", type=float, help="seconds of load")
    parser.add_argument("--no-kill", action="store_true", help="keep both instances up")
    args = parser.parse_args(argv)
    plan = SMOKE if args.smoke else FULL
    if args.agents:
        plan = replace(plan, agents=args.agents)
    if args.duration:
        plan = replace(plan, duration_s=args.duration)
    if args.no_kill:
        plan = replace(plan, kill_after_s=None)
    out = args.out if args.out else (None if args.smoke else ROOT / "bench" / "FLEET.md")
    signal.signal(signal.SIGTERM, _interrupt)
    with (
        tempfile.TemporaryDirectory(prefix="nisse-fleet-") as tmp,
        fleet_for(plan) as (fleet, script),
    ):
        result = run_load(fleet, script, plan, Path(tmp))
        text = render(result)
    if out is None:
        print(text)
    else:
        out.write_text(text)
        print(f"wrote {out}")
    return 0 if all(code == 0 for code in result.exit_codes) else 1


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


if __name__ == "__main__":
    raise SystemExit(main())
