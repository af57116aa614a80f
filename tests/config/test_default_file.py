"""One default file name: `config init` writes ``nisse.toml``, and `config check` and
`load_settings()` read it from the current folder when nothing else names a file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from nisse_llm.cli.starter import DEFAULT_CONFIG_NAME as STARTER_NAME
from nisse_llm.config.settings import DEFAULT_CONFIG_NAME, load_settings
from nisse_llm.errors import ConfigError
from tests.config.helpers import COMPLETE, TOKEN, write_config


def _run(
    *argv: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -m nisse_llm`` from ``cwd``, with no NISSE_* variables but ``env``."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("NISSE_")}
    return subprocess.run(
        [sys.executable, "-m", "nisse_llm", *argv],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**clean, **(env or {})},
        timeout=60,
    )


def test_the_default_name_is_the_quick_starts() -> None:
    """The name `config init` writes is the one the README's example and the getting-started
    page load (the page's file block is the nisse.toml its examples run with)."""
    repo = Path(__file__).resolve().parents[2]
    readme = (repo / "README.md").read_text()
    started = (repo / "docs" / "getting-started.md").read_text()
    assert DEFAULT_CONFIG_NAME == STARTER_NAME == "nisse.toml"
    assert 'load_settings("nisse.toml")' in readme
    assert "<!-- file: nisse.toml -->" in started
    assert 'load_settings("nisse.toml")' in started


def test_python_dash_m_is_the_command() -> None:
    """``python -m nisse_llm --help`` prints the command's usage and exits 0."""
    done = _run("--help", cwd=Path.cwd())
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: nisse-llm ")
    assert "config" in done.stdout


def test_init_then_check_with_no_path(tmp_path: Path) -> None:
    """`config init` with no path writes ./nisse.toml, and a bare `config check` finds it
    there and says so."""
    made = _run("config", "init", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    assert made.stdout.splitlines()[0] == "wrote nisse.toml"
    checked = _run("config", "check", cwd=tmp_path, env={"NISSE_LLM_TOKEN": TOKEN})
    assert checked.returncode == 0, checked.stderr
    assert checked.stdout.splitlines()[0] == (
        "configuration OK: nisse.toml (found in the current folder)"
    )


def test_check_names_the_paths_it_tried(tmp_path: Path) -> None:
    """With no file anywhere, `config check` says where it looked, naming the full path."""
    checked = _run("config", "check", cwd=tmp_path)
    assert checked.returncode == 2
    first = checked.stderr.splitlines()[0]
    assert first == (
        "error: invalid configuration (no config file: no path given, NISSE_CONFIG unset, "
        f"and no nisse.toml in the current folder ({tmp_path / 'nisse.toml'})), 6 problems:"
    )


def test_environment_only_check_says_where_it_looked(tmp_path: Path) -> None:
    """A configuration from the environment alone is OK, and the line says no file was found."""
    env = {
        "NISSE_LLM_BASE_URL": "http://127.0.0.1:4000",
        "NISSE_LLM_TOKEN": TOKEN,
        **{f"NISSE_ROLE_{role.upper()}": model for role, model in COMPLETE["roles"].items()},
    }
    checked = _run("config", "check", cwd=tmp_path, env=env)
    assert checked.returncode == 0, checked.stderr
    assert checked.stdout.splitlines()[0] == (
        "configuration OK: environment only (no config file: no path given, NISSE_CONFIG "
        f"unset, and no nisse.toml in the current folder ({tmp_path / 'nisse.toml'}))"
    )


def test_load_settings_reads_the_current_folders_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`load_settings()` with no path and no NISSE_CONFIG reads ./nisse.toml."""
    write_config(tmp_path / "nisse.toml", COMPLETE)
    monkeypatch.chdir(tmp_path)
    settings = load_settings()
    assert settings.config_file == Path("nisse.toml")
    assert settings.config_lookup == "nisse.toml (found in the current folder)"
    assert settings.sources["llm.base_url"] == "file nisse.toml, line 2"


def test_nisse_config_wins_over_the_current_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """NISSE_CONFIG names the file even when ./nisse.toml exists, and the lookup says so."""
    write_config(tmp_path / "nisse.toml", {"llm": {"base_url": "http://wrong"}})
    other = write_config(tmp_path / "other.toml", COMPLETE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NISSE_CONFIG", str(other))
    settings = load_settings()
    assert settings.config_file == other
    assert settings.config_lookup == f"{other} (named by NISSE_CONFIG)"


def test_a_broken_current_folder_file_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ./nisse.toml that lacks keys is reported as the file that lacks them."""
    write_config(tmp_path / "nisse.toml", {"llm": {"base_url": "http://127.0.0.1:4000"}})
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as caught:
        load_settings()
    assert str(caught.value).startswith("invalid configuration (file nisse.toml), 5 problems:")
