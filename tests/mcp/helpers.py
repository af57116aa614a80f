"""Where the MCP tests' servers come from: the test tree's own, and the published git server."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

from nisse_llm import defaults
from nisse_llm.mcp import McpServer
from nisse_llm.testing.proxy import free_port

__all__ = ["MCP_GIT_BIN_ENV", "REPO", "HttpTestServer", "mcp_git_bin", "stdio_test_server"]

REPO = Path(__file__).resolve().parents[2]
#: The published server's executable (`make mcp` installs it; the Makefile exports this).
MCP_GIT_BIN_ENV = "NISSE_GIT_MCP_BIN"
MCP_GIT_PIN = "mcp-server-git==2026.10.19"


def stdio_test_server(
    *,
    name: str = "test",
    timeout_s: float = 30.0,
    env: Mapping[str, str] | None = None,
    tools: Iterable[str] | None = None,
    max_result_bytes: int = defaults.MCP_MAX_RESULT_BYTES,
) -> McpServer:
    """The test tree's MCP server, started over stdio by whoever connects to it."""
    return McpServer.stdio(
        sys.executable,
        ["-m", "tests.mcp.server", "stdio"],
        cwd=REPO,
        env=env,
        name=name,
        timeout_s=timeout_s,
        tools=tools,
        max_result_bytes=max_result_bytes,
    )


class HttpTestServer:
    """The test tree's MCP server over streamable HTTP on one port: ``with`` starts it,
    `stop` and `start` take it away and bring it back on the same URL."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self._process = subprocess.Popen(
            [sys.executable, "-m", "tests.mcp.server", "http", str(self.port)],
            cwd=REPO,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                if self._process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the test MCP server did not start listening") from None
                time.sleep(0.05)

    def stop(self) -> None:
        if self._process is not None:
            self._process.terminate()
            self._process.wait(timeout=30)
            self._process = None

    def __enter__(self) -> HttpTestServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def mcp_git_bin() -> Path:
    """The installed ``mcp-server-git``, or a loud failure saying how to install it."""
    raw = os.environ.get(MCP_GIT_BIN_ENV) or str(REPO / ".venv-mcp" / "bin" / "mcp-server-git")
    path = Path(raw)
    if path.is_file() and os.access(path, os.X_OK):
        return path
    how = f"`make mcp` installs {MCP_GIT_PIN} into .venv-mcp (and exports {MCP_GIT_BIN_ENV})"
    if os.environ.get("CI"):
        pytest.fail(f"CI must run the MCP tests, but {raw} is missing: {how}", pytrace=False)
    pytest.fail(f"the MCP tests need mcp-server-git at {raw}: {how}", pytrace=False)
