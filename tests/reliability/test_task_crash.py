"""The task file under SIGKILL: header, event and call records cut at random moments."""

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

from nisse_llm.log.canonical import StoredEvent, Usage, UserText
from nisse_llm.task.logstore import LogStore, TaskHeaderMissing
from nisse_llm.task.records import StoredCall, StoredHeader, UsageTotal
from tests.reliability import figures
from tests.reliability._crash_writer import payload
from tests.reliability._task_crash_writer import MAX_BATCH
from tests.taskrecord.helpers import BASE_URL, TOKEN, call_record, make_pin

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


def _kill_task_writer(directory: Path, kills: int, *, budget_s: float) -> dict[str, int]:
    seed = int.from_bytes(os.urandom(4), "big")
    rng = random.Random(seed)
    pin = make_pin()
    tally = {"kills": 0, "torn": 0, "headerless": 0}
    start = time.monotonic()
    reported: set[int] = set()
    while tally["kills"] < kills and time.monotonic() - start < budget_s:
        where = f"seed {seed}, kill {tally['kills'] + 1}"
        path = directory / f"task-{tally['kills'] // KILLS_PER_FILE}.jsonl"
        if tally["kills"] % KILLS_PER_FILE == 0:
            reported = set()
        writer = subprocess.Popen(
            [sys.executable, "-m", "tests.reliability._task_crash_writer", str(path)],
            cwd=ROOT,
            bufsize=0,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
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

        found = LogStore(path).read()
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
                LogStore(path).resume(TOKEN, base_url=BASE_URL)
            tally["headerless"] += 1
            continue
        assert isinstance(records[0], StoredHeader), where
        for record in records[1:]:
            if isinstance(record, StoredEvent):
                assert record.event == UserText(text=payload(record.seq)), where
            else:
                assert isinstance(record, StoredCall), where
                assert record.llm_call == call_record(record.seq), where

        task = LogStore(path).resume(TOKEN, base_url=BASE_URL)
        assert task.pin == pin, where
        assert task.repaired == found.torn_tail, where
        assert task.usage.total == _expected_total(found.calls), where
        assert task.events == [r.event for r in found.events], where
        assert LogStore(path).read().torn_tail is None, where
    tally["seconds"] = int(time.monotonic() - start)
    return tally


def _report(tally: dict[str, int]) -> None:
    figures.record(
        f"task file crash test: {tally['kills']} SIGKILLs, {tally['torn']} torn tails, "
        f"{tally['headerless']} killed before the header was whole, every pin, record and "
        f"usage total intact ({tally['seconds']} s)"
    )


def test_sigkill_across_header_event_and_call_records(tmp_path: Path) -> None:
    """After each of 40 SIGKILLs the task resumes with its pin, every acknowledged record,
    and usage totals equal to the sum of the complete call records."""
    tally = _kill_task_writer(tmp_path, 40, budget_s=150)
    _report(tally)

    assert tally["kills"] == 40


@pytest.mark.slow
def test_sigkill_task_file_full_run(tmp_path: Path) -> None:
    """The full run: 400 SIGKILLs, some during the header, some leaving torn tails."""
    tally = _kill_task_writer(tmp_path, 400, budget_s=1500)
    _report(tally)

    assert tally["kills"] == 400
    assert tally["torn"] > 0
    assert tally["headerless"] > 0
