"""``python -m nisse_llm.testing.proxy``: a real proxy in front of a scripted model in one
command, which the getting-started page offers to anyone without keys."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nisse_llm import AssistantText, RoleRouter, ToolCall, ToolResult, UserText, load_settings
from nisse_llm.testing.proxy import free_port, main

pytestmark = pytest.mark.proxy

ROLES = {
    "executor": "claude-sonnet-5-5",
    "planner": "claude-opus-5-5",
    "delegate": "claude-haiku-5-5",
    "consultant": "gpt-5.4-mini",
}


def _lines_until_ready(process: subprocess.Popen[str], timeout_s: float = 120) -> list[str]:
    """What the command prints up to its "Ctrl-C stops it." line."""
    assert process.stdout is not None
    lines: list[str] = []
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        lines.append(line.rstrip("\n"))
        if line.startswith("Ctrl-C stops it."):
            return lines
    raise AssertionError(f"the command never said it was ready: {lines}")


def test_one_command_serves_both_routes_and_stops_on_sigterm(litellm_bin: Path) -> None:
    """The command prints the two variables an agent needs; a router configured by them
    gets scripted answers on both routes (a tool result acknowledged); SIGTERM stops it."""
    port = free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "nisse_llm.testing.proxy",
            "--port",
            str(port),
            "--token",
            "sk-local-try",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "NISSE_LITELLM_BIN": str(litellm_bin)},
    )
    try:
        lines = _lines_until_ready(process)
        assert f"export NISSE_LLM_BASE_URL=http://127.0.0.1:{port}" in lines
        assert "export NISSE_LLM_TOKEN=sk-local-try" in lines
        pin = load_settings(
            llm={"base_url": f"http://127.0.0.1:{port}", "token": "sk-local-try"}, roles=ROLES
        ).pin()
        call = ToolCall(call_id="call_1", tool="read_file", arguments={"path": "notes.txt"})
        with RoleRouter.from_pin(pin) as llm:
            first = llm.complete("executor", [UserText(text="Say hello.")], None)
            second = llm.complete(
                "consultant",
                [UserText(text="Read it."), call, ToolResult(call_id="call_1", output="Ship it.")],
                None,
            )
        assert first == [
            AssistantText(text="Scripted answer to: Say hello.", model="claude-sonnet-5-5")
        ]
        assert isinstance(second[0], AssistantText)
        assert second[0].text == "Scripted answer; the tool said: Ship it."
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            code = process.wait(timeout=30)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
            assert process.stdout is not None
            assert process.stderr is not None
            process.stdout.close()
            process.stderr.close()
    assert code == 0


def test_a_missing_proxy_is_an_error_line_and_exit_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Without a LiteLLM executable the command says how to get one, and exits 1, leaving
    the caller's SIGTERM handler as it found it."""
    monkeypatch.setenv("NISSE_LITELLM_BIN", str(tmp_path / "no-litellm"))
    before = signal.getsignal(signal.SIGTERM)
    assert main(["--port", str(free_port())]) == 1
    assert "error:" in capsys.readouterr().err
    assert signal.getsignal(signal.SIGTERM) is before
