"""Oversized input: 100 MB bodies, 10,000-deep arguments and a 10 MB tool output, each in its own process.

The limits these tests hold (decided here, measured on the 2-core, 24 GiB CI machine):
the parsers take a body of any size; a body that is not a valid reply fails fast with
`LLMError` in flat memory; JSON nested past 200 levels in a body is refused with `LLMError`
(pydantic-core's parser limit); a valid 100 MB body parses within 4x its size on top of
the body itself, and one made of millions of tiny unknown values within 25x. Bounding the
size of a body is the transport's job.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.reliability import figures
from tests.reliability._oversize import BIG

ROOT = Path(__file__).resolve().parents[2]
MB = 1024 * 1024


def _run(case: str, tmp_path: Path) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-m", "tests.reliability._oversize", case],
        cwd=ROOT,
        env={**os.environ, "OVERSIZE_DIR": str(tmp_path)},
        capture_output=True,
        timeout=300,
        check=False,
    )
    # A crash (a signal) or any exception but LLMError ends the process non-zero.
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    report: dict[str, object] = json.loads(done.stdout)
    growth = float(report["peak_mb"]) - float(report["rss_before_mb"])  # type: ignore[arg-type]
    figures.record(
        f"oversize {case}: {report['outcome']} in {report['seconds']} s, "
        f"peak {growth:.0f} MB above the {report['rss_before_mb']} MB held before the call"
    )
    report["growth_mb"] = growth
    return report


@pytest.mark.parametrize(
    ("case", "outcome", "max_growth_mb"),
    [
        ("chat_text_100mb", "ok", 4 * BIG / MB),
        ("messages_text_100mb", "ok", 4 * BIG / MB),
        ("chat_arguments_100mb", "ok", 4 * BIG / MB),
        ("messages_input_100mb", "ok", 4 * BIG / MB),
        ("chat_unknown_field_100mb", "ok", 25 * BIG / MB),
        ("messages_unknown_field_100mb", "ok", 25 * BIG / MB),
    ],
)
def test_valid_100mb_body_parses_in_bounded_memory(
    tmp_path: Path, case: str, outcome: str, max_growth_mb: float
) -> None:
    """A valid 100 MB reply parses, and the parse grows memory by no more than the stated bound."""
    report = _run(case, tmp_path)

    assert report["outcome"] == outcome, report["message"]
    assert float(report["growth_mb"]) <= max_growth_mb  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("case", "message"),
    [
        (
            "chat_garbage_100mb",
            "malformed chat completion: body: Invalid JSON: expected value at line 1 column 1",
        ),
        (
            "messages_garbage_100mb",
            "malformed messages response: body: Invalid JSON: expected value at line 1 column 1",
        ),
        (
            "chat_brackets_100mb",
            "malformed chat completion: body: Invalid JSON: recursion limit exceeded",
        ),
        (
            "messages_brackets_100mb",
            "malformed messages response: body: Invalid JSON: expected `,` or `]`",
        ),
        ("chat_arguments_deep", "tool call 't' had non-JSON arguments: "),
        (
            "messages_input_deep",
            "malformed messages response: body: Invalid JSON: recursion limit exceeded",
        ),
    ],
)
def test_hostile_body_fails_fast_with_llm_error(tmp_path: Path, case: str, message: str) -> None:
    """100 MB of garbage or brackets, or arguments nested 10,000 deep: `LLMError`, flat memory."""
    report = _run(case, tmp_path)

    assert report["outcome"] == "LLMError"
    assert str(report["message"]).startswith(message), report["message"]
    assert float(report["growth_mb"]) <= 16  # type: ignore[arg-type]
    assert float(report["seconds"]) < 1  # type: ignore[arg-type]


@pytest.mark.parametrize("case", ["chat_arguments_deep_mapping", "messages_input_deep_mapping"])
def test_deep_arguments_as_a_mapping_are_taken_as_they_are(tmp_path: Path, case: str) -> None:
    """A decoded body whose arguments nest 10,000 deep parses to one tool call without a crash."""
    report = _run(case, tmp_path)

    assert (report["outcome"], report["message"]) == ("ok", "ToolCall")


def test_rendering_arguments_nested_10000_deep_is_a_render_error_on_messages(
    tmp_path: Path,
) -> None:
    """A log whose tool arguments nest 10,000 deep is a `RenderError` on the messages route."""
    report = _run("render_arguments_deep_messages", tmp_path)

    assert report["outcome"] == "RenderError"
    assert str(report["message"]).startswith(
        "the log holds a value that cannot be encoded as JSON: "
    )


def test_rendering_arguments_nested_10000_deep_is_a_render_error_on_chat(tmp_path: Path) -> None:
    """A log whose tool arguments nest 10,000 deep is a `RenderError` on the chat route."""
    report = _run("render_arguments_deep_chat", tmp_path)

    assert report["outcome"] == "RenderError"


def test_10mb_tool_output_renders_on_both_routes(tmp_path: Path) -> None:
    """A 10 MB tool output renders on both routes, with memory growth of a few times its size."""
    report = _run("render_tool_output_10mb", tmp_path)

    assert report["outcome"] == "ok"
    # Both bodies carry the output once each: 10 MB of UTF-8 plus JSON framing.
    assert int(str(report["message"])) > 2 * 10 * MB
    assert float(report["growth_mb"]) <= 150  # type: ignore[arg-type]


def test_10mb_tool_output_round_trips_through_the_log_store(tmp_path: Path) -> None:
    """A 10 MB tool output is appended, fsynced and read back unchanged."""
    report = _run("store_tool_output_10mb", tmp_path)

    assert report["outcome"] == "ok"
    assert int(str(report["message"])) > 10 * MB
    assert float(report["growth_mb"]) <= 100  # type: ignore[arg-type]
