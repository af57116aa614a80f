"""The agent-loop benchmark's smoke run: tiny sizes, no timing asserted, so
`python -m bench.agent_loop` never rots."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_agent_loop_bench_reports_both_loops() -> None:
    """The bench exits 0 and prints a row per loop: CPU, wall, the ratio and both shares."""
    proc = subprocess.run(
        [sys.executable, "-m", "bench.agent_loop", "--steps", "2", "--rounds", "1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    row = re.compile(
        r"^\| (task\.run|hand-written) \| \d+ \| \d+\.\d\d \| \d+\.\d\dx \| \d+% \| \d+% \|$"
    )
    rows = [line for line in proc.stdout.splitlines() if row.match(line)]
    assert [line.split(" | ")[0] for line in rows] == ["| task.run", "| hand-written"]
    assert rows[1].split(" | ")[3] == "1.00x"
