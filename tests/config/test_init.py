"""`nisse-llm config init`: a starter TOML that validates, with its schema beside it,
wherever the pair is put (checked by taplo, which follows the file's ``#:schema`` line)."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tomllib
from pathlib import Path

import jsonschema
import pytest

from nisse_llm.cli.schema import CONFIG_SCHEMA_FILE, render_schemas
from nisse_llm.cli.starter import starter_toml
from tests.config.helpers import TOKEN

TAPLO = shutil.which("taplo", path=str(Path(sys.executable).parent)) or shutil.which("taplo")


def _cli(
    *argv: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The installed command, run from ``cwd`` (outside the repository)."""
    return subprocess.run(
        [sys.executable, "-m", "nisse_llm.cli.main", *argv],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=60,
    )


def _taplo(path: Path) -> subprocess.CompletedProcess[str]:
    assert TAPLO, "taplo is a dev dependency: run through `make test`"
    return subprocess.run(
        [TAPLO, "check", path.name], cwd=path.parent, capture_output=True, text=True, timeout=60
    )


def test_init_writes_a_starter_that_validates_wherever_it_is_put(tmp_path: Path) -> None:
    """From a folder outside the repository: the pair is written, the TOML is valid for the
    schema (jsonschema and taplo), and it still is after the pair moves elsewhere."""
    made = _cli("config", "init", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    toml_path, schema_path = tmp_path / "nisse.toml", tmp_path / CONFIG_SCHEMA_FILE
    assert made.stdout.splitlines() == [f"wrote {toml_path.name}", f"wrote {schema_path.name}"]
    text = toml_path.read_text(encoding="utf-8")
    assert text == starter_toml()
    assert text.splitlines()[0] == f"#:schema ./{CONFIG_SCHEMA_FILE}"
    assert schema_path.read_text(encoding="utf-8") == render_schemas()[CONFIG_SCHEMA_FILE]
    assert stat.S_IMODE(toml_path.stat().st_mode) == 0o600
    jsonschema.Draft202012Validator(json.loads(schema_path.read_text())).validate(
        tomllib.loads(text)
    )
    checked = _taplo(toml_path)
    assert checked.returncode == 0, checked.stderr
    moved = tmp_path / "elsewhere" / "deeper"
    moved.mkdir(parents=True)
    for path in (toml_path, schema_path):
        path.rename(moved / path.name)
    assert _taplo(moved / toml_path.name).returncode == 0


def test_taplo_follows_the_schema_line_and_refuses_a_bad_value(tmp_path: Path) -> None:
    """The control: taplo really validates through the #:schema line (a quoted number fails)."""
    assert _cli("config", "init", str(tmp_path / "ops.toml"), cwd=tmp_path).returncode == 0
    path = tmp_path / "ops.toml"
    path.write_text(
        path.read_text().replace("max_output_tokens = 16384", 'max_output_tokens = "16384"')
    )
    checked = _taplo(path)
    assert checked.returncode != 0
    assert "is not of type" in checked.stdout + checked.stderr


def test_the_starter_loads_with_a_token_from_the_environment(tmp_path: Path) -> None:
    """The starter is a working configuration once the token comes from the environment."""
    assert _cli("config", "init", cwd=tmp_path).returncode == 0
    checked = _cli(
        "config",
        "check",
        "--config",
        "nisse.toml",
        cwd=tmp_path,
        env={"NISSE_LLM_TOKEN": TOKEN},
    )
    assert checked.returncode == 0, checked.stderr
    assert "configuration OK" in checked.stdout
    assert TOKEN not in checked.stdout + checked.stderr


def test_init_never_overwrites_without_force(tmp_path: Path) -> None:
    """An existing TOML is the operator's: refused (exit 2) unless --force; a folder works."""
    mine = tmp_path / "nisse.toml"
    mine.write_text("# mine\n")
    refused = _cli("config", "init", str(tmp_path), cwd=tmp_path)
    assert refused.returncode == 2
    assert "exists; not overwriting it" in refused.stderr
    assert "--force" in refused.stderr
    assert mine.read_text() == "# mine\n"
    forced = _cli("config", "init", str(tmp_path), "--force", cwd=tmp_path)
    assert forced.returncode == 0, forced.stderr
    assert mine.read_text() == starter_toml()


@pytest.mark.parametrize("folder", ["schemas-here", "a/b"])
def test_schema_dir_writes_from_the_installed_package(tmp_path: Path, folder: str) -> None:
    """`schema --dir` renders the schemas anywhere, with no repository checkout around."""
    made = _cli("schema", "--dir", folder, cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    written = sorted(path.name for path in (tmp_path / folder).iterdir())
    assert written == sorted(render_schemas())
    assert _cli("schema", "--check", "--dir", folder, cwd=tmp_path).returncode == 0
