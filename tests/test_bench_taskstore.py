"""The task store benchmark's smoke run, so `python -m bench.taskstore` never rots."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_smoke_run_reports_both_stores_with_one_and_sixteen_tasks(tmp_path: Path) -> None:
    """`python -m bench.taskstore --smoke` exits 0 and reports a timed row for each store
    with one task and with sixteen."""
    out = tmp_path / "taskstore.md"
    done = subprocess.run(
        [sys.executable, "-m", "bench.taskstore", "--smoke", f"--out={out}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    rows = {}
    for line in out.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 5 and cells[1].isdigit():
            rows[(cells[0], int(cells[1]))] = [float(c.replace(",", "")) for c in cells[2:]]
    assert set(rows) == {("file", 1), ("file", 16), ("postgres", 1), ("postgres", 16)}
    assert all(value > 0 for values in rows.values() for value in values)


def test_a_postgres_step_costs_one_round_trip_and_one_transaction_per_append() -> None:
    """A step of an open PostgreSQL task (four appends: call started, call ended, the
    reply's events, the tool result) costs four round trips in four transactions: each
    append is one fenced statement, no number or lease is read again."""
    from bench.taskstore import step_round_trips
    from nisse_llm.testing.postgres import LocalPostgres

    with LocalPostgres() as server:
        assert step_round_trips(server.url) == (4.0, 4.0)
