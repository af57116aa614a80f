"""`nisse-llm config check --online` with ``[mcp.servers.NAME]`` tables: each server started,
initialized and asked for its tools, beside the proxy's own check."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from nisse_llm.cli.main import EXIT_OK, EXIT_UPSTREAM
from nisse_llm.testing import Script
from nisse_llm.testing.proxy import LiteLLMProxy
from tests.config.helpers import toml_dumps, write_config
from tests.integration.test_config_online import GOOD, _online
from tests.mcp.helpers import REPO, mcp_git_bin

pytestmark = pytest.mark.proxy


def _config(tmp_path: Path, proxy: LiteLLMProxy, servers: str) -> str:
    document = {"llm": {"base_url": proxy.base_url, "token": proxy.token}, "roles": GOOD}
    return str(write_config(tmp_path / "nisse.toml", toml_dumps(document) + servers))


def test_every_server_answering_exits_0(
    tmp_path: Path, proxy: LiteLLMProxy, script: Script, capsys: pytest.CaptureFixture[str]
) -> None:
    """The test server and the git server start and list their tools: exit 0, a row each."""
    mcp_git = mcp_git_bin()
    servers = f"""
[mcp.servers.test]
command = "{sys.executable}"
args = ["-m", "tests.mcp.server", "stdio"]
cwd = "{REPO}"
tools = ["echo", "add"]

[mcp.servers.git]
command = "{mcp_git}"
args = ["--repository", "{REPO}"]
"""
    code, lines = _online(_config(tmp_path, proxy, servers), capsys)
    assert code == EXIT_OK
    assert "mcp: starting each server and listing its tools" in lines
    assert "test ok echo, add" in lines
    assert next(line for line in lines if line.startswith("git ")).startswith("git ok git_status")


def test_a_server_that_does_not_start_exits_3(
    tmp_path: Path, proxy: LiteLLMProxy, script: Script, capsys: pytest.CaptureFixture[str]
) -> None:
    """A server whose command exits at once fails the check with the upstream exit code,
    its row saying why; the proxy's rows are still printed."""
    servers = """
[mcp.servers.broken]
command = "sh"
args = ["-c", "echo cannot open repository >&2; exit 1"]
"""
    code, lines = _online(_config(tmp_path, proxy, servers), capsys)
    assert code == EXIT_UPSTREAM
    assert "proxy: answered; token: accepted" in lines
    row = next(line for line in lines if line.startswith("broken "))
    assert row.startswith("broken failed MCP server 'broken' did not start")
    assert "cannot open repository" in row
