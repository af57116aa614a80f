"""Hostile configuration files: each a ConfigError within bounded time and memory, never a
traceback from the CLI, and a file others can write warns.

Files nested 100,000 deep (arrays, inline tables, dotted keys), a 5,000-digit integer, a
3 MB file, ``/dev/zero``, a FIFO with no writer, and base URLs that do not parse, carry
``user:password@`` or hold control characters. Each load runs in its own process
(`tests.reliability._hostile_files`), measured as the oversized-reply cases are.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from nisse_llm.config.settings import InsecureConfigFileWarning, load_settings
from tests.reliability import figures
from tests.reliability._hostile_files import CASES, ROLES, build

ROOT = Path(__file__).resolve().parents[2]


def _child(args: list[str]) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, *args],
        cwd=ROOT,
        env={**os.environ, "NISSE_LLM_TOKEN": "sk-hostile-files-0000"},
        capture_output=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize("case", CASES)
def test_a_hostile_config_file_is_a_config_error_in_bounded_time_and_memory(
    case: str, tmp_path: Path
) -> None:
    """Loading it raises ConfigError in under a second, adding under 20 MB at peak; a
    password in a base URL is not echoed."""
    done = _child(["-m", "tests.reliability._hostile_files", case, str(tmp_path)])
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    report = json.loads(done.stdout)
    figures.record(
        f"hostile file {case}: {report['outcome']} in {report['seconds']} s, "
        f"peak +{report['growth_mb']} MB"
    )

    assert report["outcome"] == "ConfigError", report["message"]
    assert report["seconds"] < 1.0
    assert report["growth_mb"] < 20
    assert "hunter22" not in report["message"]


@pytest.mark.parametrize("case", CASES)
def test_the_cli_reports_a_hostile_config_file_without_a_traceback(
    case: str, tmp_path: Path
) -> None:
    """``nisse-llm config check --config FILE`` exits 2 with one plain error, no traceback."""
    path = build(case, tmp_path)
    done = _child(["-m", "nisse_llm.cli.main", "config", "check", "--config", str(path)])
    err = done.stderr.decode()

    assert done.returncode == 2, err
    assert err.startswith("error: ")
    assert "Traceback" not in err
    assert "hunter22" not in err
    assert "\x1b" not in err  # a control character from the file is escaped, not printed


def _toml(path: Path, *, token: bool) -> Path:
    text = '[llm]\nbase_url = "http://127.0.0.1:4000"\n'
    if token:
        text += 'token = "sk-file-token-0000"\n'
    path.write_text(text + ROLES)
    return path


@pytest.mark.parametrize("mode", [0o620, 0o602, 0o666, 0o660])
@pytest.mark.parametrize("token", [True, False])
def test_a_config_file_others_can_write_warns(
    tmp_path: Path, mode: int, token: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file group or others can write (they could point base_url elsewhere while the
    token comes from the environment) warns with InsecureConfigFileWarning, naming the
    mode, whether or not it holds the token."""
    monkeypatch.setenv("NISSE_LLM_TOKEN", "sk-env-token-0000")
    path = _toml(tmp_path / "c.toml", token=token)
    os.chmod(path, mode)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        load_settings(path)
    writable = [
        w
        for w in caught
        if w.category is InsecureConfigFileWarning
        and "writable by group or others" in str(w.message)
    ]
    assert len(writable) == 1
    assert f"(mode {mode:04o})" in str(writable[0].message)


def test_an_owner_only_writable_file_does_not_warn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """0644 without the token (readable, not writable, by others) loads silently."""
    monkeypatch.setenv("NISSE_LLM_TOKEN", "sk-env-token-0000")
    path = _toml(tmp_path / "c.toml", token=False)
    os.chmod(path, 0o644)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        load_settings(path)
    assert [w for w in caught if w.category is InsecureConfigFileWarning] == []
