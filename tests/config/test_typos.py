"""Names that are probably misspelt: a role a small edit from another role, and a model no
rules row covers a small edit from one that a row does, are flagged by `load_settings`
(a `ConfigTypoWarning` naming both) and by `config check`; an added role that close to a
role the configuration requires by name is an error."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from nisse_llm import ConfigTypoWarning
from nisse_llm.cli.main import EXIT_OK, EXIT_USAGE, main
from nisse_llm.config._typos import close_name, model_typo
from nisse_llm.config.settings import Settings, load_settings
from nisse_llm.errors import ConfigError
from tests.config.helpers import COMPLETE, complete, write_config

LLM = COMPLETE["llm"]


def _warned(*args: object, **kwargs: object) -> tuple[Settings, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        settings = load_settings(*args, **kwargs)  # type: ignore[arg-type]
    assert all(w.category is ConfigTypoWarning for w in caught), caught
    return settings, [str(w.message) for w in caught]


def _check(path: Path, capsys: pytest.CaptureFixture[str], *flags: str) -> tuple[int, str]:
    code = main(["config", "check", "--config", str(path), *flags])
    return code, capsys.readouterr().err


PLANER = (
    "roles.planer (env NISSE_ROLE_PLANER): a small edit from the role planner, also set: "
    "is one of them misspelled?; from {source}"
)


def test_a_misspelt_role_variable_is_flagged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """NISSE_ROLE_PLANER beside the planner loads (it may be a role of its own) with a
    warning naming both roles, the variable and its source; config check prints it."""
    monkeypatch.setenv("NISSE_ROLE_PLANER", "claude-haiku-5-5")
    path = write_config(tmp_path / "c.toml", COMPLETE)
    settings, found = _warned(path)
    assert found == [PLANER.format(source="environment variable NISSE_ROLE_PLANER")]
    assert settings.pin().model_for("planner") == COMPLETE["roles"]["planner"]
    code, err = _check(path, capsys)
    assert code == EXIT_OK
    assert err == "warning: " + found[0] + "\n"


def test_a_misspelt_role_key_is_flagged(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``planer = ...`` beside ``planner`` in [roles]: the same warning, from the file."""
    path = write_config(tmp_path / "c.toml", complete(roles={"planer": "claude-haiku-5-5"}))
    _, found = _warned(path)
    assert found == [PLANER.format(source=f"file {path}")]
    code, err = _check(path, capsys)
    assert (code, err) == (EXIT_OK, f"warning: {found[0]}\n")


def test_two_added_roles_a_small_edit_apart_are_flagged_once(tmp_path: Path) -> None:
    """Neither required: one warning for the pair."""
    roles = {**COMPLETE["roles"], "reviewer": "gpt-5.4-mini", "reveiwer": "gpt-5.4-mini"}
    _, found = _warned(llm=LLM, roles=roles)
    assert found == [
        "roles.reveiwer (env NISSE_ROLE_REVEIWER): a small edit from the role reviewer, "
        "also set: is one of them misspelled?; from the argument roles="
    ]


@pytest.mark.parametrize("where", ["argument", "file", "environment"])
def test_a_role_close_to_one_required_by_name_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """With require_roles stated (argument, file or NISSE_REQUIRE_ROLES), an added role a
    small edit from a required one is a ConfigError naming both, its key, variable and
    source."""
    required = ["planner", "executor"]
    roles = {"planner": "claude-opus-4-8", "executor": "gpt-5.4-mini", "planer": "gpt-5.4-mini"}
    document: dict[str, object] = {"llm": LLM, "roles": roles}
    kwargs: dict[str, object] = {}
    if where == "argument":
        kwargs["require_roles"] = required
    elif where == "file":
        document = {"require_roles": required, **document}
    else:
        monkeypatch.setenv("NISSE_REQUIRE_ROLES", ",".join(required))
    path = write_config(tmp_path / "c.toml", document)  # type: ignore[arg-type]
    with pytest.raises(ConfigError) as caught:
        load_settings(path, **kwargs)  # type: ignore[arg-type]
    assert caught.value.problems == (
        "roles.planer (env NISSE_ROLE_PLANER): not a required role, and a small edit from "
        "the required role planner: is it roles.planner misspelled? Rename it, or add it to "
        f"require_roles; from file {path}",
    )


def test_config_check_fails_on_a_role_close_to_a_required_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`config check --require planner,executor` exits 2 on an added planer."""
    roles = {"planner": "claude-opus-4-8", "executor": "gpt-5.4-mini", "planer": "gpt-5.4-mini"}
    path = write_config(tmp_path / "c.toml", {"llm": LLM, "roles": roles})
    code, err = _check(path, capsys, "--require", "planner,executor")
    assert code == EXIT_USAGE
    assert "roles.planer (env NISSE_ROLE_PLANER): not a required role, and a small" in err


def test_a_misspelt_model_is_flagged_with_the_route_it_would_take(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """gpt-6-astro (no rules row; gpt-6-astra has one) loads and routes as written, with a
    warning naming the model meant and its route, from the file and from the variable."""
    path = write_config(tmp_path / "c.toml", complete(roles={"consultant": "openai/gpt-6-astro"}))
    settings, found = _warned(path)
    assert found == [
        "roles.consultant (env NISSE_ROLE_CONSULTANT): model 'openai/gpt-6-astro' matches no "
        "model-rules row: did you mean openai/gpt-6-astra? it would route to "
        f"openai_responses (as written: openai_chat); from file {path}"
    ]
    assert settings.pin().route("consultant") == "openai_chat"
    code, err = _check(path, capsys)
    assert (code, err) == (EXIT_OK, f"warning: {found[0]}\n")
    monkeypatch.setenv("NISSE_ROLE_EXECUTOR", "claude-sonet-4-6")
    _, found = _warned(path)
    assert found[0] == (
        "roles.executor (env NISSE_ROLE_EXECUTOR): model 'claude-sonet-4-6' matches no "
        "model-rules row: did you mean claude-sonnet-4-6? it would route to "
        "anthropic_messages (as written: anthropic_messages); from environment variable "
        "NISSE_ROLE_EXECUTOR"
    )


def test_a_misspelt_like_is_flagged_by_its_key() -> None:
    """An alias's ``like`` is the name whose rules apply: its typo names roles.<role>.like."""
    roles = {**COMPLETE["roles"], "executor": {"model": "team-exec", "like": "gpt-6-astro"}}
    _, found = _warned(llm=LLM, roles=roles)
    assert found == [
        "roles.executor.like (env NISSE_ROLE_EXECUTOR_LIKE): model 'gpt-6-astro' matches no "
        "model-rules row: did you mean gpt-6-astra? it would route to openai_responses (as "
        "written: openai_chat); from the argument roles="
    ]


def test_names_apart_on_purpose_load_without_a_warning() -> None:
    """Numbered roles, other versions of a model and aliases are not typos: with warnings
    as errors the configuration loads."""
    roles = {
        "executor": "claude-opus-4-1",  # an older version: not in the table, not a typo
        "planner": "gpt-a",
        "delegate": "team-alias",
        "consultant": "gpt-5.4-mini-2026-03-01",
        "worker1": "gpt-6-astra",
        "worker2": "gpt-6.2-astra",
    }
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert load_settings(llm=LLM, roles=roles).pin().roles.names[-2:] == (
            "worker1",
            "worker2",
        )


@pytest.mark.parametrize(
    ("name", "known", "meant"),
    [
        ("planer", ["planner", "executor"], "planner"),
        ("code-review", ["code_review"], "code_review"),  # only the separator
        ("worker1", ["worker2"], None),  # digits differ: two names on purpose
        ("executor2", ["executor"], None),
        ("reviewer_a", ["reviewer_b"], None),
        ("selector", ["executor"], None),  # alike, but three letters apart
        ("consultnat", ["consultant"], "consultant"),
        ("planner", ["planner"], None),
    ],
)
def test_the_small_edit_rule(name: str, known: list[str], meant: str | None) -> None:
    """One word differs by a small edit (at most two letters), or only the separators do;
    digits never count."""
    assert close_name(name, known) == meant


def test_a_model_a_row_covers_is_never_a_typo() -> None:
    """A dated name of a row's model is that model; an unknown name far from every row is
    an alias."""
    assert model_typo("gpt-6-astra-2026-01-01", ("claude-",)) is None
    assert model_typo("my-alias", ("claude-",)) is None
    assert model_typo("gpt6-astra", ("claude-",)) == ("gpt-6-astra", "openai_responses")


def test_a_misspelt_models_warning_names_the_route_its_profile_gives(tmp_path: Path) -> None:
    """A role whose profile sets ``route`` takes that route whatever its model's name: the
    warning says so, never the route the misspelt name alone would take."""
    roles = {"consultant": {"model": "openai/gpt-6-astro", "route": "openai_responses"}}
    path = write_config(tmp_path / "c.toml", complete(roles=roles))
    settings, found = _warned(path)
    assert settings.pin().route("consultant") == "openai_responses"
    assert found == [
        "roles.consultant (env NISSE_ROLE_CONSULTANT): model 'openai/gpt-6-astro' matches no "
        "model-rules row: did you mean openai/gpt-6-astra? it would route to "
        "openai_responses (as written: openai_responses, its profile's route); from file "
        f"{path}"
    ]
