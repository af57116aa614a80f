"""The image benchmark's smoke run: tiny sizes, no timing asserted, so `python -m bench.images` never rots."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_image_bench_runs_and_encodes_each_screenshot_once_per_route() -> None:
    """The bench exits 0, prints per-call rows for both routes and one encoding per screenshot."""
    proc = subprocess.run(
        [sys.executable, "-m", "bench.images", "--screens", "4", "--size", "30000", "--calls", "2"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "image encodings per route: {'messages': 4, 'chat': 4} (screenshots: 4)" in out
    for row in ("chat-parts", "messages-parts", "chat-bytes (no images)", "messages-bytes"):
        assert f"  {row} " in out
