"""The benchmark's smoke run: tiny sizes, no thresholds, so `python -m bench` never rots."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _row(report: str, route: str, label: str) -> list[str]:
    for line in report.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells[:2] == [route, label]:
            return cells
    raise AssertionError(f"no row for {route} / {label} in:\n{report}")


def test_smoke_run_reports_the_floor_and_both_nisse_routes(tmp_path: Path) -> None:
    """`python -m bench --smoke` exits 0 and reports timed rows for the floor and both nisse_llm routes."""
    out = tmp_path / "smoke.md"
    proc = subprocess.run(
        [sys.executable, "-m", "bench", "--smoke", "--quiet", f"--out={out}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    report = out.read_text()
    assert report.startswith("# nisse_llm benchmark (smoke run)")
    number = re.compile(r"^\d+\.\d{3}$")
    for route, label in [
        ("chat", "floor: httpx posting pre-serialised bytes"),
        ("messages", "floor: httpx posting pre-serialised bytes"),
        ("chat", "nisse_llm LiteLLMClient.complete"),
        ("messages", "nisse_llm AnthropicPassthroughClient.complete"),
    ]:
        cells = _row(report, route, label)
        assert number.match(cells[2]), cells
        assert cells[3].endswith("x"), cells
    assert _row(report, "chat", "floor: httpx posting pre-serialised bytes")[3] == "1.00x"
