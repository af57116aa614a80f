"""The task file and a PostgreSQL task under SIGKILL: header, event and call records cut at
random moments (the same writer and checks for both stores)."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from decimal import Decimal
from pathlib import Path

import pytest

from nisse_llm.errors import TaskBusy
from nisse_llm.events.canonical import StoredEvent, Usage, UserText
from nisse_llm.task.logstore import FileTaskStore, TaskHeaderMissing, TaskStore
from nisse_llm.task.postgres import PostgresTaskStore
from nisse_llm.task.records import ResumedTask, StoredCall, StoredHeader, UsageTotal
from nisse_llm.testing.postgres import LocalPostgres
from tests.reliability import figures
from tests.reliability._crash_writer import payload
from tests.reliability._task_crash_writer import MAX_BATCH
from tests.task.helpers import BASE_URL, TOKEN, call_record, make_pin

ROOT = Path(__file__).resolve().parents[2]
# A new file every few kills, so kills also land while the header is being written.
KILLS_PER_FILE = 4


def _expected_total(calls: list[StoredCall]) -> UsageTotal:
    """The totals computed by hand from the complete call records."""
    tokens = Usage()
    cost = Decimal(0)
    unpriced = 0
    for record in calls:
        tokens += record.llm_call.usage
        info = record.llm_call.call
        if info is None or info.cost_usd is None:
            unpriced += 1
        else:
            cost += info.cost_usd
    return UsageTotal(
        **tokens.model_dump(), calls=len(calls), cost_usd=cost, unpriced_calls=unpriced
    )


# A killed writer's lease runs out LEASE_S after its last renewal (short here, so the
# test waits less); the slack is what a loaded machine may add.
LEASE_S = 1.0
LEASE_FREED_S = LEASE_S + 10.0


def _open(directory: Path, name: str, server: LocalPostgres | None) -> TaskStore:
    if server is None:
        return FileTaskStore(directory / f"{name}.jsonl")
    return PostgresTaskStore(
        server.url, _key(directory, name), lease_s=LEASE_S, heartbeat_s=LEASE_S / 4
    )


def _key(directory: Path, name: str) -> str:
    return f"{directory.name}-{name}"


def _leased(store: TaskStore) -> None:
    """Take ``store``'s lease, waiting out a killed writer's."""
    deadline = time.monotonic() + LEASE_FREED_S
    while True:
        try:
            store.lease()
            return
        except TaskBusy:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def _resumed(store: TaskStore) -> ResumedTask:
    """``store`` resumed, waiting out the moment a killed writer's lease takes to go."""
    deadline = time.monotonic() + LEASE_FREED_S
    while True:
        try:
            return store.resume(TOKEN, base_url=BASE_URL)
        except TaskBusy:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def _kill_task_writer(
    directory: Path,
    kills: int,
    *,
    budget_s: float,
    server: LocalPostgres | None = None,
    asynchronous: bool = False,
) -> dict[str, int]:
    seed = int.from_bytes(os.urandom(4), "big")
    rng = random.Random(seed)
    pin = make_pin()
    tally = {"kills": 0, "torn": 0, "headerless": 0}
    start = time.monotonic()
    reported: set[int] = set()
    while tally["kills"] < kills and time.monotonic() - start < budget_s:
        where = f"seed {seed}, kill {tally['kills'] + 1}"
        name = f"task-{tally['kills'] // KILLS_PER_FILE}"
        store = _open(directory, name, server)
        if tally["kills"] % KILLS_PER_FILE == 0:
            reported = set()
        where_arg = str(directory / f"{name}.jsonl") if server is None else _key(directory, name)
        env = {**os.environ} | ({} if server is None else {"NISSE_TEST_PG_URL": server.url})
        env["NISSE_TEST_ASYNC"] = "1" if asynchronous else "0"
        env["NISSE_TEST_LEASE_S"] = str(LEASE_S)
        writer = subprocess.Popen(
            [sys.executable, "-m", "tests.reliability._task_crash_writer", where_arg],
            cwd=ROOT,
            bufsize=0,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        assert writer.stdout is not None
        if rng.random() < 0.2:
            time.sleep(rng.uniform(0, 0.5))  # during start-up or the header write
        else:
            assert writer.stdout.readline() == b"ready\n", where
            time.sleep(rng.uniform(0, 0.2))
        writer.send_signal(signal.SIGKILL)
        out, err = writer.communicate(timeout=30)
        assert writer.returncode == -signal.SIGKILL, (where, err.decode()[-2000:])
        tally["kills"] += 1
        lines = out.split(b"\n")[:-1]
        began = b"ready" in lines
        reported |= {int(line) for line in lines if line not in (b"ready", b"")}

        if server is not None:
            # A statement the killed writer sent may still commit: read once its lease,
            # which that statement renews, has run out and is this store's.
            _leased(store)
        found = store.read()
        if found.torn_tail is not None:
            tally["torn"] += 1
        records = found.records
        assert [r.seq for r in records] == list(range(len(records))), where
        assert reported <= {r.seq for r in records}, where
        assert len(records) <= max(reported, default=0) + 1 + MAX_BATCH, where
        if not records:
            # Killed before the header was whole: nothing was acknowledged, no task exists.
            assert not began, where
            assert not reported, where
            with pytest.raises(TaskHeaderMissing):
                _resumed(store)
            store.close()
            tally["headerless"] += 1
            continue
        assert isinstance(records[0], StoredHeader), where
        for record in records[1:]:
            if isinstance(record, StoredEvent):
                assert record.event == UserText(text=payload(record.seq)), where
            else:
                assert isinstance(record, StoredCall), where
                assert record.llm_call == call_record(record.seq), where

        task = _resumed(store)
        assert task.pin == pin, where
        assert task.repaired == found.torn_tail, where
        assert task.usage.total == _expected_total(found.calls), where
        assert task.events == [r.event for r in found.events], where
        assert store.read().torn_tail is None, where
        store.close()
    tally["seconds"] = int(time.monotonic() - start)
    return tally


def _report(tally: dict[str, int], kind: str = "file") -> None:
    figures.record(
        f"task {kind} crash test: {tally['kills']} SIGKILLs, {tally['torn']} torn tails, "
        f"{tally['headerless']} killed before the header was whole, every pin, record and "
        f"usage total intact ({tally['seconds']} s)"
    )


def test_sigkill_across_header_event_and_call_records(tmp_path: Path) -> None:
    """After each of 40 SIGKILLs the task resumes with its pin, every acknowledged record,
    and usage totals equal to the sum of the complete call records."""
    tally = _kill_task_writer(tmp_path, 40, budget_s=150)
    _report(tally)

    assert tally["kills"] == 40


def test_sigkill_of_a_postgres_task_writer(tmp_path: Path, postgres: LocalPostgres) -> None:
    """The same 40 SIGKILLs on a PostgreSQL task: every acknowledged record there, numbered
    without a gap, nothing else; no torn record can exist; the next writer takes over."""
    tally = _kill_task_writer(tmp_path, 40, budget_s=150, server=postgres)
    _report(tally, "postgres")

    assert tally["kills"] == 40
    assert tally["torn"] == 0


@pytest.mark.parametrize("kind", ["file", "postgres"])
def test_sigkill_of_an_async_task_writer(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """20 SIGKILLs of a writer awaiting the async store (its file writes in a worker
    thread): every acknowledged record there, nothing else, the task resumed each time."""
    server = request.getfixturevalue("postgres") if kind == "postgres" else None
    tally = _kill_task_writer(tmp_path, 20, budget_s=120, server=server, asynchronous=True)
    _report(tally, f"async {kind}")

    assert tally["kills"] == 20


@pytest.mark.slow
def test_sigkill_postgres_task_full_run(tmp_path: Path, postgres: LocalPostgres) -> None:
    """The full run on PostgreSQL: 400 SIGKILLs, some while the header is written."""
    tally = _kill_task_writer(tmp_path, 400, budget_s=1500, server=postgres)
    _report(tally, "postgres")

    assert tally["kills"] == 400
    assert tally["headerless"] > 0


@pytest.mark.slow
def test_sigkill_task_file_full_run(tmp_path: Path) -> None:
    """The full run: 400 SIGKILLs, some during the header, some leaving torn tails."""
    tally = _kill_task_writer(tmp_path, 400, budget_s=1500)
    _report(tally)

    assert tally["kills"] == 400
    assert tally["torn"] > 0
    assert tally["headerless"] > 0
