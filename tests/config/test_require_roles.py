"""``require_roles``: the configuration says which roles it must define (a top-level TOML
key, ``NISSE_REQUIRE_ROLES``), read alike by `load_settings` and `config check`; the
argument and ``--require`` win over the environment, which wins over the file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from nisse_llm.cli.main import EXIT_OK, EXIT_USAGE, main
from nisse_llm.config.settings import SEED_ROLES, load_settings
from nisse_llm.errors import ConfigError
from tests.config.helpers import COMPLETE, CONFIG_SCHEMA, write_config

LLM = COMPLETE["llm"]
TWO = {"planner": "claude-opus-4-8", "executor": "gpt-5.4-mini"}


def _two_roles(tmp_path: Path, **top: Any) -> Path:
    return write_config(tmp_path / "nisse.toml", {**top, "llm": LLM, "roles": TWO})


def test_a_two_role_file_that_says_so_loads(tmp_path: Path) -> None:
    """``require_roles = ["planner", "executor"]`` at the top of the file: the two-role
    file loads with no argument, and the settings say where the requirement came from."""
    path = _two_roles(tmp_path, require_roles=["planner", "executor"])
    settings = load_settings(path)
    assert settings.require_roles == ("planner", "executor")
    assert settings.pin().roles.names == ("executor", "planner")
    assert settings.sources["require_roles"] == f"file {path}, line 1"


def test_the_file_requirement_is_checked(tmp_path: Path) -> None:
    """A role the file requires and no layer defines is a problem naming the file."""
    path = _two_roles(tmp_path, require_roles=["planner", "executor", "reviewer"])
    with pytest.raises(ConfigError) as caught:
        load_settings(path)
    assert caught.value.problems == (
        f"roles.reviewer (env NISSE_ROLE_REVIEWER): missing; set it in {path} or set "
        "NISSE_ROLE_REVIEWER",
    )


def test_argument_beats_environment_beats_file_beats_the_seeds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The highest layer stating require_roles decides; with none, the seeds' four."""
    roles = {**COMPLETE["roles"], "reviewer": "claude-opus-4-8"}
    path = write_config(
        tmp_path / "c.toml", {"require_roles": ["reviewer"], "llm": LLM, "roles": roles}
    )
    monkeypatch.setenv("NISSE_REQUIRE_ROLES", " planner , executor ")
    settings = load_settings(path, require_roles=("delegate",))
    assert (settings.require_roles, settings.sources["require_roles"]) == (
        ("delegate",),
        "argument require_roles=",
    )
    settings = load_settings(path)
    assert (settings.require_roles, settings.sources["require_roles"]) == (
        ("planner", "executor"),
        "env NISSE_REQUIRE_ROLES",
    )
    monkeypatch.delenv("NISSE_REQUIRE_ROLES")
    assert load_settings(path).require_roles == ("reviewer",)
    plain = write_config(tmp_path / "d.toml", COMPLETE)
    settings = load_settings(plain)
    assert (settings.require_roles, settings.sources["require_roles"]) == (SEED_ROLES, "default")


def test_the_environment_requirement_is_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``NISSE_REQUIRE_ROLES`` (a JSON array too) requires its roles over the file's."""
    path = _two_roles(tmp_path, require_roles=["planner", "executor"])
    monkeypatch.setenv("NISSE_REQUIRE_ROLES", '["planner", "reviewer"]')
    with pytest.raises(ConfigError) as caught:
        load_settings(path)
    assert caught.value.problems == (
        f"roles.reviewer (env NISSE_ROLE_REVIEWER): missing; set it in {path} or set "
        "NISSE_ROLE_REVIEWER",
    )


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("planner", 'must be an array of strings, such as ["claude-", "anthropic/"]'),
        (
            ["planner", "Reviewer"],
            "'Reviewer' is not a role name: a role name is 1 to 32 lowercase letters, "
            "digits or _, starting with a letter (its variable is NISSE_ROLE_<NAME>)",
        ),
    ],
    ids=["a-string", "not-a-role-name"],
)
def test_a_bad_requirement_names_its_key_variable_and_file(
    tmp_path: Path, value: object, reason: str
) -> None:
    """require_roles that is not an array of role names is one problem, named as every
    other key is."""
    path = _two_roles(tmp_path, require_roles=value)
    with pytest.raises(ConfigError) as caught:
        load_settings(path)
    (problem,) = caught.value.problems
    assert problem.startswith(f"require_roles (env NISSE_REQUIRE_ROLES): {reason}, got ")
    assert problem.endswith(f"; from file {path}")


def test_config_check_passes_a_two_role_file_with_no_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`config check` reads the file's require_roles: exit 0, the two roles listed and the
    requirement shown with its source; --require still wins over it."""
    path = str(_two_roles(tmp_path, require_roles=["planner", "executor"]))
    assert main(["config", "check", "--config", path]) == EXIT_OK
    out = capsys.readouterr().out
    assert [line.split()[0] for line in out.splitlines()[3:5]] == ["executor", "planner"]
    (row,) = [line.split("  ") for line in out.splitlines() if "require_roles" in line]
    assert [cell.strip() for cell in row if cell.strip()] == [
        "require_roles",
        "planner, executor",
        f"file {path}, line 1",
    ]
    assert main(["config", "check", "--config", path, "--require", "planner,reviewer"]) == 2
    assert "roles.reviewer (env NISSE_ROLE_REVIEWER): missing" in capsys.readouterr().err


def test_config_check_reads_the_environment_requirement(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A two-role file without require_roles passes `config check` once
    NISSE_REQUIRE_ROLES names its roles, and fails (the seeds required) without it."""
    path = str(_two_roles(tmp_path))
    assert main(["config", "check", "--config", path]) == EXIT_USAGE
    assert "roles.delegate (env NISSE_ROLE_DELEGATE): missing" in capsys.readouterr().err
    monkeypatch.setenv("NISSE_REQUIRE_ROLES", "executor,planner")
    assert main(["config", "check", "--config", path]) == EXIT_OK


def test_the_schema_describes_require_roles() -> None:
    """The committed schema takes an array of role names at the top level, and names the
    variable."""
    schema = json.loads(CONFIG_SCHEMA.read_text())
    validator = jsonschema.Draft202012Validator(schema)
    validator.validate({"require_roles": ["planner", "executor"], "roles": TWO})
    assert not validator.is_valid({"require_roles": "planner"})
    assert not validator.is_valid({"require_roles": ["Planner"]})
    assert schema["properties"]["require_roles"]["description"].endswith(
        " Environment variable: NISSE_REQUIRE_ROLES."
    )


def test_the_getting_started_two_role_file_passes_config_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The two-role file the getting-started page shows passes `config check` with no
    flag, as the page says."""
    from tests.docs.pages import DOCS, read_page

    page = read_page(DOCS / "getting-started.md")
    (block,) = [b for b in page.files if b.marker("file") == "two-roles.toml"]
    path = write_config(tmp_path / "two-roles.toml", block.code)
    monkeypatch.setenv("NISSE_LLM_TOKEN", "sk-docs-example")
    assert main(["config", "check", "--config", str(path)]) == EXIT_OK
    assert capsys.readouterr().err == ""


def test_the_starter_files_require_roles_line_works_uncommented(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`config init`'s file shows require_roles commented out: uncommented, with the other
    two roles deleted, the file loads as a two-role configuration."""
    from nisse_llm.cli.starter import starter_toml

    lines = [
        line.removeprefix("# ") if line.startswith("# require_roles = ") else line
        for line in starter_toml().splitlines()
        if not line.startswith(("delegate = ", "consultant = "))
    ]
    path = write_config(tmp_path / "nisse.toml", "\n".join(lines) + "\n")
    monkeypatch.setenv("NISSE_LLM_TOKEN", "sk-starter-example")
    settings = load_settings(path)
    assert settings.require_roles == ("executor", "planner")
    assert settings.pin().roles.names == ("executor", "planner")


def test_require_roles_written_inside_a_table_is_told_to_move(tmp_path: Path) -> None:
    """TOML puts a key written under [roles] into that table: the problem says to move
    require_roles above the first table, rather than calling it a role."""
    text = (
        '[llm]\nbase_url = "http://127.0.0.1:4000"\n[roles]\nplanner = "claude-opus-4-8"\n'
        'executor = "gpt-5.4-mini"\nrequire_roles = ["planner", "executor"]\n'
    )
    path = write_config(tmp_path / "c.toml", text)
    with pytest.raises(ConfigError) as caught:
        load_settings(path, require_roles=("planner", "executor"), llm={"token": "sk-a-token"})
    assert caught.value.problems == (
        "roles.require_roles: require_roles is a top-level key, but this one is inside "
        f"[roles]: move it above the first table; from file {path}",
    )
