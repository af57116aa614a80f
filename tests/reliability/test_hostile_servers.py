"""Hostile servers: every probe a raw loopback socket server, every call in its own process.

Each call runs with a 4 MiB reply cap, 2 s deadlines and a 1 s read timeout
(`tests.reliability._hostile`); the test asserts the class raised, the time the call took,
the peak memory it added, and that the server saw one request carrying the token, no
retry, and no usage metered for a failed call.

Bounds held here: a decompression bomb (gzip, deflate, ``gzip, gzip`` inflating to 2 GiB)
or an endless body stops at the cap; an error body is read to 64 KiB; a drip, keepalive,
ping or empty-delta trickle, or headers sent a line at a time, ends at the deadline; a
stream ends at its final event whatever follows.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.reliability import figures
from tests.reliability._hostile import DEADLINE_S, DRIP_S, MAX_BYTES, MB, READ_S
from tests.transport.harness import TOKEN

ROOT = Path(__file__).resolve().parents[2]
# What a call may add to memory: the capped body, its join and its parse.
MAX_GROWTH_MB = 3 * MAX_BYTES / MB + 12
FAST_S = 1.5
# A trickle ends at the deadline (plus scheduling slack on a loaded machine).
TRICKLE_S = DEADLINE_S + 0.5

BOTH = ("complete", "stream")
STREAM = ("stream",)
# case -> (kinds, class raised, the setting named, most seconds)
CASES: dict[str, tuple[tuple[str, ...], str, str | None, float]] = {
    "gzip_bomb": (BOTH, "UpstreamUnavailable", "llm.max_response_bytes", FAST_S),
    "deflate_bomb": (BOTH, "UpstreamUnavailable", "llm.max_response_bytes", FAST_S),
    "gzip_gzip_bomb": (BOTH, "UpstreamUnavailable", "llm.max_response_bytes", FAST_S),
    "error_gzip_gzip_bomb": (BOTH, "LLMError", None, FAST_S),
    "endless_200": (BOTH, "UpstreamUnavailable", "llm.max_response_bytes", FAST_S),
    "endless_400": (BOTH, "LLMError", None, FAST_S),
    "endless_keepalives": (STREAM, "StreamInterrupted", "llm.max_response_bytes", DEADLINE_S),
    "endless_pings": (STREAM, "StreamInterrupted", "llm.max_response_bytes", DEADLINE_S),
    "endless_empty_deltas": (STREAM, "StreamInterrupted", "llm.max_response_bytes", DEADLINE_S),
    "drip_headers": (BOTH, "UpstreamUnavailable", "_deadline_s", TRICKLE_S),
    "drip_bytes": (BOTH, "UpstreamUnavailable", "_deadline_s", TRICKLE_S),
    "drip_keepalives": (STREAM, "StreamInterrupted", "llm.stream_deadline_s", TRICKLE_S),
    "drip_pings": (STREAM, "StreamInterrupted", "llm.stream_deadline_s", TRICKLE_S),
    "drip_empty_deltas": (STREAM, "StreamInterrupted", "llm.stream_deadline_s", TRICKLE_S),
    "trailing_keepalives_chat": (STREAM, "ok", None, FAST_S),
    "trailing_keepalives_messages": (STREAM, "ok", None, FAST_S),
}
PROBES = [
    (case, kind, mode)
    for case, spec in CASES.items()
    for kind in spec[0]
    for mode in ("sync", "async")
]


def _run(case: str, kind: str, mode: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-m", "tests.reliability._hostile", case, kind, mode],
        cwd=ROOT,
        env=dict(os.environ),
        capture_output=True,
        timeout=120,
        check=False,
    )
    # Anything but an LLMError escaping the call (or a crash) ends the process non-zero.
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    report: dict[str, object] = json.loads(done.stdout)
    figures.record(
        f"hostile {case} {kind} {mode}: {report['outcome']} in {report['seconds']} s, "
        f"peak +{report['growth_mb']} MB"
    )
    return report


@pytest.mark.parametrize(("case", "kind", "mode"), PROBES)
def test_a_hostile_server_costs_bounded_time_and_memory(case: str, kind: str, mode: str) -> None:
    """The call ends in the expected class, within its time bound and the memory bound,
    after one request to the server, with nothing metered unless the reply was whole."""
    _, outcome, setting, most_s = CASES[case]
    report = _run(case, kind, mode)

    assert report["outcome"] == outcome, report["message"]
    if setting is not None:
        assert setting in str(report["message"]), report["message"]
    assert float(report["seconds"]) <= most_s  # type: ignore[arg-type]
    if setting is not None and setting.endswith("deadline_s"):
        assert float(report["seconds"]) >= DEADLINE_S  # type: ignore[arg-type]
    assert float(report["growth_mb"]) <= MAX_GROWTH_MB  # type: ignore[arg-type]
    assert (report["requests"], report["connections"]) == (1, 1)
    assert report["tokens_sent"] == [TOKEN]
    assert report["metered"] == (1 if outcome == "ok" else 0)


def test_bounds_are_below_what_the_probes_would_cost_unbounded() -> None:
    """The probes are real: each bomb inflates far past the cap, each trickle would run
    far past the deadline (the server never stops on its own)."""
    import zlib

    from tests.reliability._rawserver import HOSTILE

    inflated = zlib.decompressobj(31).decompress((HOSTILE / "gzip_gzip_2gib.bin").read_bytes())
    assert len(inflated) > 2_000_000  # the outer layer alone inflates 600-fold
    assert inflated[:2] == b"\x1f\x8b"  # and holds a gzip stream: 2 GiB of zeros
    assert READ_S < DEADLINE_S
    assert DRIP_S < READ_S  # no read ever times out in a trickle: only the deadline ends it
