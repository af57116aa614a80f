"""Where the MCP tests' servers come from: the test tree's own, and the published git server."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import pytest

from nisse_llm import defaults
from nisse_llm.mcp import McpServer
from nisse_llm.testing.proxy import free_port

__all__ = ["MCP_GIT_BIN_ENV", "REPO", "http_test_server", "mcp_git_bin", "stdio_test_server"]

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


@contextmanager
def http_test_server() -> Iterator[str]:
    """The test tree's MCP server over streamable HTTP, running; yields its URL."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.mcp.server", "http", str(port)],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the test MCP server did not start listening") from None
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=30)


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
