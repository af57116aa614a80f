"""Every value's source, for the operator's view: default, file (with its line), environment
variable, or argument; shown by `config check` and `config show` (plain and JSON), never in
the pin record."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nisse_llm.cli.main import main
from nisse_llm.config.settings import ENV_VARS, Settings, load_settings
from tests.config.helpers import COMPLETE, TOKEN, write_config

FILE_TEXT = """\
# a comment line
[llm]
base_url = "http://127.0.0.1:4000"
  timeout_s = 30     # indented, with a comment

[roles]
executor = "claude-sonnet-4-6"
"planner" = "claude-opus-4-8"
delegate = "claude-haiku-4-5"
consultant = "openai/gpt-5.5"
"""


@pytest.fixture
def layered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Settings, Path]:
    """A file, two environment variables (one beating the file) and one argument."""
    path = write_config(tmp_path / "ops.toml", FILE_TEXT)
    monkeypatch.setenv("NISSE_LLM_TOKEN", TOKEN)
    monkeypatch.setenv("NISSE_ROLE_DELEGATE", "claude-sonnet-4-6")
    return load_settings(path, llm={"max_output_tokens": 4096}), path


def test_each_key_names_the_layer_it_came_from(layered: tuple[Settings, Path]) -> None:
    """File keys carry their line; the environment names its variable; an argument names
    its table; everything else is the default."""
    settings, path = layered
    sources = settings.sources
    assert sources["llm.base_url"] == f"file {path}, line 3"
    assert sources["llm.timeout_s"] == f"file {path}, line 4"
    assert sources["roles.executor"] == f"file {path}, line 7"
    assert sources["roles.planner"] == f"file {path}, line 8"  # a quoted key
    assert sources["roles.delegate"] == "env NISSE_ROLE_DELEGATE"  # beats line 9
    assert sources["llm.token"] == "env NISSE_LLM_TOKEN"
    assert sources["llm.max_output_tokens"] == "argument llm="
    assert sources["llm.connect_timeout_s"] == "default"
    assert sources["require_roles"] == "default"
    assert sources["task_store"] == "default"
    # Every key of the file and its tables is accounted for, and no other (a role's
    # request options appear once a layer sets them: test_role_profiles).
    assert set(sources) == {key for key in ENV_VARS if key.count(".") < 2}


def test_a_dotted_key_before_any_table_gets_its_line(tmp_path: Path) -> None:
    """``llm.timeout_s = 9`` at top level is found on its line too."""
    text = 'llm.timeout_s = 9\n[roles]\nexecutor = "a"\n'
    path = write_config(tmp_path / "c.toml", text)
    settings = load_settings(
        path, llm=COMPLETE["llm"], roles={**COMPLETE["roles"], "executor": None}
    )
    assert settings.sources["llm.timeout_s"] == f"file {path}, line 1"
    assert settings.sources["roles.executor"] == f"file {path}, line 3"


def test_the_pin_record_holds_no_sources(layered: tuple[Settings, Path]) -> None:
    """Sources are the operator's view: the record (and its fingerprint) is as before."""
    settings, _ = layered
    record = settings.pin().record()
    assert "sources" not in record
    assert not any("env NISSE" in json.dumps(value) for value in record.values())
    assert settings.pin().token_source == "env NISSE_LLM_TOKEN"


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert TOKEN not in out + err
    return out


def test_config_check_shows_every_source(
    layered: tuple[Settings, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """The role table has a source column; the settings table lists every other key."""
    _, path = layered
    out = _run(["config", "check", "--config", str(path)], capsys)
    lines = [" ".join(line.split()) for line in out.splitlines()]
    assert f"executor claude-sonnet-4-6 anthropic_messages file {path}, line 7" in lines
    assert "delegate claude-sonnet-4-6 anthropic_messages env NISSE_ROLE_DELEGATE" in lines
    assert f"llm.timeout_s 30.0 file {path}, line 4" in lines
    assert "llm.max_output_tokens 16384 default" in lines  # the CLI has no argument layer
    assert "llm.token (set, never shown) env NISSE_LLM_TOKEN" in lines
    assert "llm.prompt_cache_ttl 5m default" in lines


def test_config_show_plain_and_json_show_every_source(
    layered: tuple[Settings, Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Plain: each record line ends with its source; JSON: the record and the sources."""
    _, path = layered
    plain = _run(["config", "show", "--config", str(path)], capsys).splitlines()
    assert f"timeout_s: 30.0  (file {path}, line 4)" in plain
    assert "max_output_tokens: 16384  (default)" in plain
    assert any(line.endswith("env NISSE_ROLE_DELEGATE") for line in plain)
    shown = json.loads(_run(["config", "show", "--json", "--config", str(path)], capsys))
    assert shown["sources"]["roles.delegate"] == "env NISSE_ROLE_DELEGATE"
    assert shown["sources"]["llm.base_url"] == f"file {path}, line 3"
    assert shown["record"] == load_settings(path).pin().record()
