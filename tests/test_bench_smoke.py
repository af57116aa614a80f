"""The benchmark's smoke run: tiny sizes, no thresholds, so `python -m bench` never rots."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def smoke_report(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The report of one `python -m bench --smoke` run, which must exit 0."""
    out = tmp_path_factory.mktemp("bench") / "smoke.md"
    proc = subprocess.run(
        [sys.executable, "-m", "bench", "--smoke", "--quiet", f"--out={out}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return out.read_text()


def _row(report: str, route: str, label: str) -> list[str]:
    for line in report.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells[:2] == [route, label]:
            return cells
    raise AssertionError(f"no row for {route} / {label} in:\n{report}")


def test_smoke_run_reports_the_floor_and_both_nisse_routes(smoke_report: str) -> None:
    """`python -m bench --smoke` exits 0 and reports timed rows for the floor and both nisse_llm routes."""
    assert smoke_report.startswith("# nisse_llm benchmark (smoke run)")
    number = re.compile(r"^\d+\.\d{3}$")
    for route, label in [
        ("chat", "floor: httpx posting pre-serialised bytes"),
        ("messages", "floor: httpx posting pre-serialised bytes"),
        ("chat", "nisse_llm LiteLLMClient.complete"),
        ("messages", "nisse_llm AnthropicPassthroughClient.complete"),
    ]:
        cells = _row(smoke_report, route, label)
        assert number.match(cells[2]), cells
        assert cells[3].endswith("x"), cells
    assert _row(smoke_report, "chat", "floor: httpx posting pre-serialised bytes")[3] == "1.00x"


def test_smoke_run_judges_the_targets_from_the_floors_and_nisse_alone(smoke_report: str) -> None:
    """The per-call targets come from a run of each route's floor and nisse_llm alone."""
    assert "## Per-call targets: the floors and nisse_llm alone" in smoke_report
    for route in ("chat", "messages", "responses"):
        cells = _row(smoke_report, "2", route)
        assert re.match(r"^\d+\.\d{3}$", cells[2]), cells
        assert re.match(r"^\d+\.\d{3}$", cells[3]), cells
        floor, mine = float(cells[2]), float(cells[3])
        assert abs(float(cells[4].removesuffix("x")) - mine / floor) < 0.02, cells


def test_smoke_run_reports_streaming_on_both_routes(smoke_report: str) -> None:
    """Client CPU per streamed reply: httpx alone, the json floor, nisse_llm, and the SDKs' rows."""
    assert "## Streaming" in smoke_report
    cpu = re.compile(r"^\d[\d,]*$")
    for route, label in [
        ("chat", "httpx iter_bytes"),
        ("messages", "httpx iter_bytes"),
        ("chat", "httpx iter_lines + json.loads (floor)"),
        ("messages", "httpx iter_lines + json.loads (floor)"),
        ("chat", "nisse_llm LiteLLMClient.stream"),
        ("messages", "nisse_llm AnthropicPassthroughClient.stream"),
    ]:
        cells = _row(smoke_report, route, label)
        assert cells[2] == "10", cells
        assert cpu.match(cells[3]), cells
        assert re.match(r"^\d+\.\d{2}x$", cells[4]), cells
    assert _row(smoke_report, "messages", "httpx iter_lines + json.loads (floor)")[4] == "1.00x"
    # The official SDKs' streaming rows are there, measured or saying why not.
    assert _row(smoke_report, "chat", "openai SDK chat.completions.create(stream=True)")
    assert _row(smoke_report, "messages", "anthropic SDK messages.stream")


def test_smoke_run_reports_the_first_use(smoke_report: str) -> None:
    """First use in fresh processes: nisse_llm, httpx + pydantic, and the pydantic floor."""
    assert "## First use" in smoke_report
    for label in (
        "nisse_llm: import, an event, a client, one request",
        "httpx, pydantic: import, a client, one request",
        "the same + one pydantic model built and used",
    ):
        assert re.search(rf"\| {re.escape(label)} \| \d[\d,.]* \| \d+\.\d{{2}}x \|", smoke_report)
