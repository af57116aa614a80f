"""MCP servers in the pin: recorded without their secret values, restored from the record
whatever the file says now, their values found again as the token is, or refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nisse_llm import ConfigError, McpServer, Pin, load_settings
from nisse_llm.config.settings import Settings
from tests.config.helpers import COMPLETE, TOKEN, toml_dumps, write_config
from tests.config.test_mcp_tables import SERVERS

BASE = "http://127.0.0.1:4000"
SECRETS = ("ghp_secret123", "Agent", "Bearer issue-secret", "core")


def _settings(tmp_path: Path, tables: str = SERVERS) -> Settings:
    return load_settings(write_config(tmp_path / "nisse.toml", toml_dumps(COMPLETE) + tables))


def test_the_record_holds_the_servers_without_their_values(tmp_path: Path) -> None:
    """Every key of a server is recorded, env and header names but none of their values."""
    record = _settings(tmp_path).pin().record()
    assert record["mcp_servers"] == {
        "git": {
            "transport": "stdio",
            "command": "mcp-server-git",
            "args": ["--repository", "."],
            "env": ["GITHUB_TOKEN", "GIT_AUTHOR_NAME"],
            "cwd": None,
            "url": None,
            "headers": [],
            "timeout_s": 30.0,
            "tools": ["git_status", "git_log"],
            "max_result_bytes": 4 * 1024 * 1024,
        },
        "issues": {
            "transport": "http",
            "command": None,
            "args": [],
            "env": [],
            "cwd": None,
            "url": "https://mcp.example.com/mcp",
            "headers": ["Authorization", "X-Team"],
            "timeout_s": 60.0,
            "tools": None,
            "max_result_bytes": 4 * 1024 * 1024,
        },
    }
    text = json.dumps(record)
    assert not [secret for secret in SECRETS if secret in text]


def test_a_pin_without_servers_records_no_key(tmp_path: Path) -> None:
    """No servers: no key, so the pins of tasks begun before keep their fingerprints."""
    pin = _settings(tmp_path, "").pin()
    assert "mcp_servers" not in pin.record()
    assert pin.mcp_servers == {}


def test_the_servers_change_the_fingerprint(tmp_path: Path) -> None:
    """A server added or reconfigured is another pin."""
    without = _settings(tmp_path, "").pin().fingerprint
    with_servers = _settings(tmp_path).pin().fingerprint
    longer = _settings(tmp_path, SERVERS.replace("timeout_s = 30", "timeout_s = 31"))
    assert len({without, with_servers, longer.pin().fingerprint}) == 3


def test_a_live_pin_gives_the_servers_it_was_taken_with(tmp_path: Path) -> None:
    """A pin taken here holds the values: its servers are the settings' servers."""
    settings = _settings(tmp_path)
    assert McpServer.from_pin(settings.pin()) == McpServer.from_settings(settings)


def test_the_record_round_trips_with_its_servers(tmp_path: Path) -> None:
    """A pin rebuilt from its record equals the pin, servers included, and records the same."""
    pin = _settings(tmp_path).pin()
    again = Pin.from_record(pin.record(), TOKEN, base_url=BASE)
    assert again == pin
    assert again.record() == pin.record()


def test_a_resumed_pin_takes_its_values_from_the_settings_of_now(tmp_path: Path) -> None:
    """Resumed with a file that changed the server and its secret: the pinned command,
    arguments and tools, with the secret value the file holds now."""
    record = _settings(tmp_path).pin().record()
    now = _settings(
        tmp_path,
        SERVERS.replace("ghp_secret123", "ghp_rotated456")
        .replace('args = ["--repository", "."]', 'args = ["--repository", "/elsewhere"]')
        .replace('tools = ["git_status", "git_log"]', ""),
    )
    git, issues = McpServer.from_pin(Pin.from_record(record, TOKEN, base_url=BASE), now)
    assert git == McpServer.stdio(
        "mcp-server-git",
        ["--repository", "."],
        env={"GITHUB_TOKEN": "ghp_rotated456", "GIT_AUTHOR_NAME": "Agent"},
        name="git",
        timeout_s=30,
        tools=["git_status", "git_log"],
    )
    assert issues.headers == {"Authorization": "Bearer issue-secret", "X-Team": "core"}


def test_without_settings_the_values_come_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No settings given: NISSE_MCP_<NAME>_ENV_<VAR> and _HEADER_<HEADER> give the values
    (a header whatever the case of its name)."""
    record = _settings(tmp_path).pin().record()
    monkeypatch.setenv("NISSE_MCP_GIT_ENV_GITHUB_TOKEN", "ghp_from_env")
    monkeypatch.setenv("NISSE_MCP_GIT_ENV_GIT_AUTHOR_NAME", "Env Agent")
    monkeypatch.setenv("NISSE_MCP_ISSUES_HEADER_AUTHORIZATION", "Bearer env")
    monkeypatch.setenv("NISSE_MCP_ISSUES_HEADER_X_TEAM", "env-team")
    git, issues = McpServer.from_pin(Pin.from_record(record, TOKEN, base_url=BASE))
    assert git.env == {"GITHUB_TOKEN": "ghp_from_env", "GIT_AUTHOR_NAME": "Env Agent"}
    assert issues.headers == {"Authorization": "Bearer env", "X-Team": "env-team"}


def test_a_value_no_longer_available_is_refused_by_name(tmp_path: Path) -> None:
    """A pinned server whose secret is set nowhere now is a ConfigError naming each missing
    entry with its TOML key and its variable, and echoing no value."""
    record = _settings(tmp_path).pin().record()
    now = _settings(tmp_path, "")
    with pytest.raises(ConfigError) as caught:
        McpServer.from_pin(Pin.from_record(record, TOKEN, base_url=BASE), now)
    error = caught.value
    assert "pinned MCP server 'git'" in str(error)
    assert [p.split(":")[0] for p in error.problems] == [
        "mcp.servers.git.env.GITHUB_TOKEN",
        "mcp.servers.git.env.GIT_AUTHOR_NAME",
    ]
    assert "NISSE_MCP_GIT_ENV_GITHUB_TOKEN" in error.problems[0]
    assert not [secret for secret in SECRETS if secret in str(error)]
