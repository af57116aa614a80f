"""A fleet: agent processes on two real LiteLLM proxies sharing one real Redis, one instance killed.

One load run (`bench.fleet`, its smoke size: 8 agent processes, sync and async, for
30 s) against two instances; every test below asserts one property of that run from
its raw records and from what the scripted upstream received.
"""

from __future__ import annotations

import hashlib
import os
import signal
import stat
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from bench.fleet import BUDGET_SYNC_S, SMOKE, LoadResult, fleet_for, render, run_load
from nisse_llm.task.logstore import FileTaskStore
from nisse_llm.testing.fleet import LiteLLMFleet, RedisServer, redis_executable
from nisse_llm.testing.proxy import ProxyStartError

pytestmark = pytest.mark.proxy

PLAN = SMOKE
KILLED = 1
FAMILY = {"UpstreamUnavailable", "BudgetExhausted", "StreamInterrupted"}


@dataclass
class Run:
    result: LoadResult
    pids: list[int]
    store_files: list[Path]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0); its state says it is gone.
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.fixture(scope="module")
def run(litellm_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    """The smoke-size load run with a kill; afterwards no process of the fleet is left."""
    workdir = tmp_path_factory.mktemp("fleet")
    with fleet_for(PLAN) as (fleet, script):
        pids = [p for p in [fleet.redis.pid, *(i.pid for i in fleet.instances)] if p]
        result = run_load(fleet, script, PLAN, workdir, kill_index=KILLED)
    store_files = sorted((workdir / "stores").glob("*.jsonl"))
    yield Run(result=result, pids=pids, store_files=store_files)
    assert not [p for p in pids if _alive(p)], "a fleet process outlived the fleet"


def _calls(run: Run, **where: Any) -> list[dict[str, Any]]:
    return [c for c in run.result.calls if all(c[k] == v for k, v in where.items())]


def _before_kill(run: Run, call: dict[str, Any]) -> bool:
    kill_at = run.result.kill_at
    return call["instance"] != KILLED or kill_at is None or call["t1"] < kill_at


def test_every_agent_ran_both_modes_on_both_instances_and_exited_cleanly(run: Run) -> None:
    """Eight agent processes, sync and async on each instance, all exit 0 with no stderr and made calls."""
    result = run.result
    assert result.exit_codes == [0] * PLAN.agents, result.stderr
    assert all(not err.strip() for err in result.stderr), result.stderr
    placed = Counter((a["instance"], a["mode"]) for a in result.agents)
    assert set(placed) == {(0, "sync"), (0, "async"), (1, "sync"), (1, "async")}
    assert all(a["calls"] > 0 for a in result.agents)
    assert len(_calls(run, outcome="ok", streamed=True)) > 0


def test_no_call_raises_outside_the_error_tree(run: Run) -> None:
    """Every failed call, kill included, raised `LLMError`: nothing else escaped to an agent."""
    outcomes = Counter(c["outcome"] for c in run.result.calls)
    assert all(c["in_tree"] for c in run.result.calls), outcomes
    assert set(outcomes) <= {"ok"} | FAMILY, outcomes


def test_the_shared_rpm_limit_is_never_exceeded_across_both_instances(run: Run) -> None:
    """Per UTC minute the upstream never receives more `gpt-rpm` calls than its rpm, while both instances send it more."""
    minutes: Counter[str] = Counter(
        datetime.fromtimestamp(at, UTC).strftime("%H:%M")
        for at, model in run.result.upstream
        if model == "gpt-rpm"
    )
    assert minutes, "no planner call reached the upstream"
    assert max(minutes.values()) <= PLAN.rpm, minutes
    limited = [c for c in _calls(run, role="planner") if c["status"] == 429]
    assert {c["instance"] for c in limited if _before_kill(run, c)} == {0, 1}
    assert len(_calls(run, role="planner")) > sum(minutes.values())


def test_a_429_is_retried_as_configured_then_upstream_unavailable(run: Run) -> None:
    """A planner call refused by the shared limit waits the configured wait, retries once, then raises `UpstreamUnavailable` 429."""
    limited = [c for c in _calls(run, role="planner") if c["status"] == 429]
    assert limited
    for call in limited:
        assert call["outcome"] == "UpstreamUnavailable", call
        assert call["attempts"] == PLAN.rate_limit_retries + 1, call
        assert call["sleeps"] == [PLAN.rate_limit_wait_s] * PLAN.rate_limit_retries, call
        assert call["wall_s"] >= PLAN.rate_limit_wait_s * PLAN.rate_limit_retries
        # The proxy names no Retry-After (only llm_provider-retry-after), so none rides along.
        assert call["retry_after_s"] is None, call
        assert "rate limit" in call["message"].lower(), call
    # Only the shared limit causes waits: no other call ever slept.
    assert all(not c["sleeps"] for c in run.result.calls if c["role"] != "planner")


def test_once_the_shared_budget_is_crossed_both_instances_refuse_and_never_retry(run: Run) -> None:
    """After the first budget call's spend reaches Redis, every later delegate call on either instance is `BudgetExhausted`, one attempt, no wait."""
    delegate = _calls(run, role="delegate")
    answered = [c for c in delegate if c["outcome"] == "ok"]
    assert answered, "no delegate call crossed the budget"
    settled = min(c["t1"] for c in answered) + BUDGET_SYNC_S
    later = [c for c in delegate if c["t0"] > settled and _before_kill(run, c)]
    assert {c["instance"] for c in later} == {0, 1}
    assert all(c["outcome"] == "BudgetExhausted" for c in later), Counter(
        c["outcome"] for c in later
    )
    refused = _calls(run, outcome="BudgetExhausted")
    assert all(c["attempts"] == 1 and c["sleeps"] == [] and c["status"] == 429 for c in refused)
    # A refused call never reached the upstream: it saw only the answered ones.
    reached = sum(1 for _, model in run.result.upstream if model == "claude-budget")
    assert reached == len(answered)


def test_killing_one_instance_fails_its_calls_fast_while_the_other_goes_on(run: Run) -> None:
    """After SIGKILL of one instance its in-flight and later calls are `UpstreamUnavailable` within the timeouts; agents on the other keep getting answers."""
    kill_at = run.result.kill_at
    assert kill_at is not None, "the instance was never killed"
    dead = [c for c in _calls(run, instance=KILLED) if c["t1"] > kill_at]
    after = [c for c in dead if c["t0"] > kill_at]
    assert after, "no call was made to the killed instance after the kill"
    for call in after:
        assert call["outcome"] == "UpstreamUnavailable", call
        assert call["wall_s"] < PLAN.connect_timeout_s + 1.0, call
    # In flight at the kill: over within the timeouts (a reply already sent may land).
    wait = PLAN.rate_limit_wait_s * PLAN.rate_limit_retries
    for call in [c for c in dead if c["t0"] <= kill_at]:
        assert call["outcome"] in {"ok"} | FAMILY, call
        assert call["t1"] - kill_at < PLAN.timeout_s + PLAN.connect_timeout_s + wait, call
    survivors = {a["agent"] for a in run.result.agents if a["instance"] != KILLED}
    answered_after = {
        c["agent"] for c in run.result.calls if c["t0"] > kill_at and c["outcome"] == "ok"
    }
    assert survivors <= answered_after


def test_no_agent_loses_an_event_from_its_log_store(run: Run) -> None:
    """Every record an agent appended to its task's `TaskStore` reads back identical, with no torn tail."""
    tasks = run.result.tasks
    assert sorted(Path(t["store"]) for t in tasks) == run.store_files
    for task in tasks:
        read = FileTaskStore(task["store"]).read()
        assert read.torn_tail is None
        assert [r.seq for r in read.records] == list(range(task["records"]))
        digest = hashlib.sha256()
        for record in read.records:
            digest.update(record.model_dump_json().encode())
        assert digest.hexdigest() == task["digest"], task


def test_the_instances_share_their_counters_through_redis(run: Run) -> None:
    """Redis holds the rpm counter and the deployment spend both instances used."""
    keys = run.result.redis_keys
    assert any(k.startswith("deployment_spend:") for k in keys), keys
    assert any(":rpm:" in k for k in keys), keys


def test_the_report_gives_the_figures(run: Run) -> None:
    """The run's report (like bench/FLEET.md) states calls, rates, per-call CPU and wall, every outcome and the invariants."""
    text = render(run.result)
    assert text.startswith("# nisse_llm fleet load run (smoke run)")
    for needle in [
        "| calls completed (any outcome) |",
        "| calls per second, whole run |",
        "| answered by the model |",
        "| BudgetExhausted |",
        "| UpstreamUnavailable after a retry |",
        "Instance 1 was SIGKILLed",
        "Calls that raised outside nisse_llm's error tree: 0.",
        "Agent processes that exited non-zero: 0.",
    ]:
        assert needle in text, needle
    assert "Events appended to a `TaskStore` and not read back: 0 " in text


# -- lifecycle without a real proxy: failures and Ctrl-C while starting ------------------


def _fake_litellm(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "litellm"
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_redis_server_answers_and_is_gone_after_stop() -> None:
    """The pinned redis-server starts on a free loopback port without persistence and stops by its PID."""
    with RedisServer() as redis:
        pid = redis.pid
        assert pid is not None
        assert redis.command("PING") == "PONG"
        assert redis.command("CONFIG", "GET", "save") == ["save", ""]
        assert redis.command("CONFIG", "GET", "appendonly") == ["appendonly", "no"]
        assert redis.command("CONFIG", "GET", "bind") == ["bind", "127.0.0.1"]
    assert not _alive(pid)


def test_a_fleet_that_fails_to_start_leaves_nothing_running(tmp_path: Path) -> None:
    """An instance that dies at launch fails `start` with its output, and Redis and the other instance are stopped."""
    fake = _fake_litellm(tmp_path, 'echo "boom: $*"; exit 3')
    fleet = LiteLLMFleet("http://127.0.0.1:9", instances=2, executable=fake)
    with pytest.raises(ProxyStartError, match="boom"):
        fleet.start()
    assert fleet.redis.pid is None
    assert all(i.pid is None for i in fleet.instances)


def test_ctrl_c_while_the_fleet_starts_stops_every_process(tmp_path: Path) -> None:
    """A KeyboardInterrupt while waiting for health stops Redis and every launched instance."""
    fake = _fake_litellm(tmp_path, "exec sleep 60")
    fleet = LiteLLMFleet("http://127.0.0.1:9", instances=2, executable=fake)
    seen: list[int] = []

    def interrupt(signum: int, frame: Any) -> None:
        seen.extend(p for p in [fleet.redis.pid, *(i.pid for i in fleet.instances)] if p)
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, 2.0)
    try:
        with pytest.raises(KeyboardInterrupt):
            fleet.start()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert len(seen) == 3
    deadline = time.monotonic() + 5
    while any(_alive(p) for p in seen) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [p for p in seen if _alive(p)]


def test_the_fleet_command_reports_a_failed_start(
    tmp_path: Path,
) -> None:
    """`python -m nisse_llm.testing.fleet` with a proxy that dies exits 1 and prints that proxy's output."""
    fake = _fake_litellm(tmp_path, 'echo "boom: $*"; exit 3')
    proc = subprocess.run(
        [sys.executable, "-m", "nisse_llm.testing.fleet", "--instances", "2"],
        env={
            **os.environ,
            "NISSE_LITELLM_BIN": str(fake),
            "NISSE_REDIS_BIN": str(redis_executable()),
        },
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 1, proc.stderr
    assert "boom: --config" in proc.stderr
    assert "redis" not in proc.stdout
