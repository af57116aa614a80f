"""The ``[mcp.servers.NAME]`` tables: loaded from the file, overridden by the environment,
validated with every problem named, described by the schema, and turned into servers."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from nisse_llm import ConfigError, McpServer, load_settings
from nisse_llm.cli.main import main
from tests.config.helpers import COMPLETE, CONFIG_SCHEMA, TOKEN, toml_dumps, write_config

SERVERS = """
[mcp.servers.git]
command = "mcp-server-git"
args = ["--repository", "."]
env = { GITHUB_TOKEN = "ghp_secret123", GIT_AUTHOR_NAME = "Agent" }
timeout_s = 30
tools = ["git_status", "git_log"]

[mcp.servers.issues]
url = "https://mcp.example.com/mcp"
headers = { Authorization = "Bearer issue-secret", X-Team = "core" }
"""


def _write(tmp_path: Path, tables: str = SERVERS) -> Path:
    return write_config(tmp_path / "nisse.toml", toml_dumps(COMPLETE) + tables)


def test_the_tables_become_servers(tmp_path: Path) -> None:
    """A command table is a stdio server, a url table an HTTP one, with every key kept."""
    git, issues = McpServer.from_settings(load_settings(_write(tmp_path)))
    assert git == McpServer.stdio(
        "mcp-server-git",
        ["--repository", "."],
        env={"GITHUB_TOKEN": "ghp_secret123", "GIT_AUTHOR_NAME": "Agent"},
        name="git",
        timeout_s=30,
        tools=["git_status", "git_log"],
    )
    assert issues == McpServer.http(
        "https://mcp.example.com/mcp",
        headers={"Authorization": "Bearer issue-secret", "X-Team": "core"},
        name="issues",
    )


def test_the_environment_overrides_a_servers_keys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """NISSE_MCP_<NAME>_<KEY> wins over the file, an env entry or header is added or
    replaced one by one, and the sources say which layer each value came from."""
    monkeypatch.setenv("NISSE_MCP_GIT_TIMEOUT_S", "12.5")
    monkeypatch.setenv("NISSE_MCP_GIT_TOOLS", "git_status")
    monkeypatch.setenv("NISSE_MCP_GIT_ENV_GIT_AUTHOR_NAME", "Bot")
    monkeypatch.setenv("NISSE_MCP_ISSUES_HEADER_X_TEAM", "infra")
    monkeypatch.setenv("NISSE_MCP_LINT_COMMAND", "ruff-mcp")
    settings = load_settings(_write(tmp_path))
    git = settings.mcp.servers["git"]
    assert (git.timeout_s, git.tools, git.args) == (12.5, ("git_status",), ("--repository", "."))
    assert git.env == {"GITHUB_TOKEN": "ghp_secret123", "GIT_AUTHOR_NAME": "Bot"}
    assert settings.mcp.servers["issues"].headers["X-Team"] == "infra"
    assert settings.mcp.servers["lint"].command == "ruff-mcp"
    sources = settings.sources
    assert sources["mcp.servers.git.timeout_s"] == "env NISSE_MCP_GIT_TIMEOUT_S"
    assert sources["mcp.servers.git.args"].startswith("file ")
    assert sources["mcp.servers.issues.headers.X-Team"] == "env NISSE_MCP_ISSUES_HEADER_X_TEAM"


def test_every_problem_is_named_without_echoing_credentials(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A misspelled key, a table with both command and url, a bad server name, a bad
    number and an unknown variable are listed at once; env and header values never."""
    monkeypatch.setenv("NISSE_MCP_GIT_COMANDO", "x")
    bad = """
[mcp.servers.git]
comand = "mcp-server-git"
timeout_s = "slow"

[mcp.servers.both]
command = "a"
url = "http://b"
headers = { Authorization = "Bearer hidden-secret" }

[mcp.servers.Bad-Name]
command = "c"
"""
    with pytest.raises(ConfigError) as caught:
        load_settings(_write(tmp_path, bad))
    problems = "\n".join(caught.value.problems)
    assert "NISSE_MCP_GIT_COMANDO: names no key of an MCP server" in problems
    assert "mcp.servers.git.comand: unknown key" in problems
    assert "did you mean mcp.servers.git.command?" in problems
    assert "mcp.servers.git.timeout_s (env NISSE_MCP_GIT_TIMEOUT_S)" in problems
    assert "mcp.servers.both (env NISSE_MCP_BOTH_*): value error, set either command" in problems
    assert "mcp.servers.Bad-Name: not a server name" in problems
    assert "hidden-secret" not in str(caught.value)
    assert len(caught.value.problems) == 5


def test_the_schema_accepts_the_tables_and_rejects_their_mistakes() -> None:
    """The exported schema validates server tables, and refuses an unknown key, a bad
    name, and a table with both a command and a url."""
    validator = jsonschema.Draft202012Validator(json.loads(CONFIG_SCHEMA.read_text()))
    good = {
        **COMPLETE,
        "mcp": {"servers": {"git": {"command": "g", "timeout_s": 5}, "web": {"url": "http://w"}}},
    }
    validator.validate(good)
    for servers in (
        {"git": {"comand": "g"}},
        {"Git": {"command": "g"}},
        {"git": {"command": "g", "url": "http://w"}},
        {"git": {"command": "g", "timeout_s": 0}},
    ):
        assert not validator.is_valid({**COMPLETE, "mcp": {"servers": servers}}), servers


def test_config_show_lists_each_key_with_its_source_and_hides_credentials(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every MCP key is shown with its source; a token-like env value and an Authorization
    header read ``(set)``, a plain one is shown."""
    assert main(["config", "show", "--config", str(_write(tmp_path))]) == 0
    out = capsys.readouterr().out
    lines = {
        line.split()[0]: line.split()[1:] for line in out.splitlines() if "mcp.servers" in line
    }
    assert lines["mcp.servers.git.env.GITHUB_TOKEN"][0] == "(set)"
    assert lines["mcp.servers.git.env.GIT_AUTHOR_NAME"][0] == "Agent"
    assert lines["mcp.servers.issues.headers.Authorization"][0] == "(set)"
    assert lines["mcp.servers.issues.headers.X-Team"][0] == "core"
    assert lines["mcp.servers.git.timeout_s"][:2] == ["30.0", "file"]
    assert "ghp_secret123" not in out
    assert "issue-secret" not in out
    assert TOKEN not in out


def test_an_argument_wins_over_the_environment_and_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``load_settings(mcp=...)`` changes one key of a server, keeping the file's others."""
    monkeypatch.setenv("NISSE_MCP_GIT_TIMEOUT_S", "12")
    settings = load_settings(_write(tmp_path), mcp={"servers": {"git": {"timeout_s": 5}}})
    git = settings.mcp.servers["git"]
    assert (git.timeout_s, git.command) == (5, "mcp-server-git")
    assert settings.sources["mcp.servers.git.timeout_s"] == "argument mcp="
