"""``nisse-llm complete --stream`` against the streaming loopback upstream."""

from __future__ import annotations

import json
import os
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nisse_llm.cli.main import main
from nisse_llm.testing.sse import sse_stream
from tests.config.helpers import write_config
from tests.stream._support import load_body
from tests.transport.harness import TOKEN
from tests.transport.loopback import error_body
from tests.transport.stream_harness import upstream
from tests.transport.stream_upstream import Body, Error, Plan, Raw, StreamingUpstream

__all__ = ["upstream"]

ROLES = {
    "executor": "gpt-4o-mini",
    "planner": "claude-sonnet-4-5",
    "delegate": "claude-opus-4-1",
    "consultant": "openai/gpt-5",
}


@pytest.fixture
def config(tmp_path: Path, upstream: StreamingUpstream) -> str:
    """A TOML config pointing at the streaming upstream, without retry waits."""
    path = write_config(
        tmp_path / "nisse.toml",
        {
            "llm": {"base_url": upstream.base_url, "token": TOKEN, "rate_limit_retries": 0},
            "roles": ROLES,
        },
    )
    return str(path)


def test_stream_prints_the_text_then_the_tool_calls_and_usage_on_stderr(
    config: str, upstream: StreamingUpstream, capsys: pytest.CaptureFixture[str]
) -> None:
    """--stream prints the reply's text, then each tool call, and the usage on stderr."""
    body = load_body("ant_text_and_tool_use")
    upstream.plan(Body(body, chunk_size=3))
    code = main(["complete", "--role", "planner", "--config", config, "--stream", "hi"])
    out, err = capsys.readouterr()
    assert code == 0
    text = body["content"][0]["text"]
    tool = body["content"][1]
    arguments = json.dumps(tool["input"], ensure_ascii=False)
    assert out == f"{text}\ntool call {tool['name']} {arguments}\n"
    assert err.startswith("usage: model=claude-sonnet-4-5 input=")
    assert upstream.requests[0].json()["stream"] is True


@pytest.mark.parametrize(
    ("plan", "code"),
    [
        (Raw(sse_stream("openai_chat", load_body("oai_text_plain"))[:300], end="cut"), 3),
        (Error(429, error_body("Budget has been exceeded! Current cost: 2", code="429")), 4),
        (Body(load_body("oai_finish_length")), 1),
    ],
    ids=["cut-mid-stream", "budget", "truncated"],
)
def test_stream_exits_with_the_same_codes_as_complete(
    plan: Plan,
    code: int,
    config: str,
    upstream: StreamingUpstream,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A cut stream exits 3, a budget refusal 4, a truncated reply 1, each saying why on stderr."""
    upstream.plan(plan)
    assert main(["complete", "--role", "executor", "--config", config, "--stream", "hi"]) == code
    err = capsys.readouterr().err
    assert re.match(r"error: POST http://127\.0\.0\.1:\d+/chat/completions: ", err)
    assert TOKEN not in err


def test_stream_and_json_together_are_a_usage_error(
    config: str, upstream: StreamingUpstream, capsys: pytest.CaptureFixture[str]
) -> None:
    """--stream and --json exclude each other: exit 2 before anything is sent."""
    argv = ["complete", "--role", "executor", "--config", config, "--stream", "--json", "hi"]
    assert main(argv) == 2
    assert "argument --json: not allowed with argument --stream" in capsys.readouterr().err
    assert upstream.requests == []


def test_the_console_script_prints_text_before_the_reply_ends(
    config: str, upstream: StreamingUpstream
) -> None:
    """The installed entry point flushes text as it arrives, seconds before the stream ends."""
    body = load_body("oai_text_plain")
    data = sse_stream("openai_chat", body, chunk_size=4)
    upstream.plan(Raw(data, write_size=len(data) // 2 + 1, pause_s=2.0))
    script = Path(sys.executable).with_name("nisse-llm")
    started = time.monotonic()
    with subprocess.Popen(
        [str(script), "complete", "--role", "executor", "--config", config, "--stream", "hi"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as process:
        assert process.stdout is not None
        ready, _, _ = select.select([process.stdout], [], [], 30.0)
        first = os.read(process.stdout.fileno(), 65536)
        seen_at = time.monotonic() - started
        assert ready
        assert process.poll() is None  # still streaming
        rest, _ = process.communicate(timeout=30)
    total = time.monotonic() - started
    text = body["choices"][0]["message"]["content"]
    assert first
    assert text.startswith(first.decode())
    assert (first + rest).decode() == text + "\n"
    assert total - seen_at > 1.5
    assert process.returncode == 0
