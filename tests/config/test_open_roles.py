"""Open role names: the seeds' four roles are the defaults, an operator may add roles
(validated, pinned, fingerprinted, in the schema as a pattern), and an agent requires
only the roles it uses."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from nisse_llm import UserText
from nisse_llm.config.settings import ROLE_NAME_PATTERN, SEED_ROLES, Pin, load_settings
from nisse_llm.errors import ConfigError, UnknownRoleError
from nisse_llm.testing import Script, ScriptedTransport, reply
from nisse_llm.transport.routers import RoleRouter
from tests.config.helpers import COMPLETE, CONFIG_SCHEMA, TOKEN, complete, write_config

LLM = COMPLETE["llm"]
TWO = {"planner": "claude-opus-4-8", "executor": "gpt-5.4-mini"}


def _problems(path: Path | None = None, **kwargs: object) -> tuple[str, ...]:
    with pytest.raises(ConfigError) as caught:
        load_settings(path, **kwargs)  # type: ignore[arg-type]
    return caught.value.problems


def test_an_agent_requires_only_the_roles_it_uses(tmp_path: Path) -> None:
    """With ``require_roles``, a config mapping only planner and executor loads, and the
    pin holds exactly those two."""
    path = write_config(tmp_path / "c.toml", {"llm": LLM, "roles": TWO})
    pin = load_settings(path, require_roles=("planner", "executor")).pin()
    assert pin.roles.names == ("executor", "planner")
    assert set(pin.record()["roles"]) == {"executor", "planner"}
    with pytest.raises(UnknownRoleError) as caught:
        pin.model_for("delegate")
    assert str(caught.value) == "unknown role 'delegate'; the roles are executor, planner"


def test_the_seed_roles_stay_required_by_default(tmp_path: Path) -> None:
    """Without ``require_roles`` the four seed roles are required: each missing one is a
    problem naming its key, its variable and the file."""
    path = write_config(tmp_path / "c.toml", {"llm": LLM, "roles": TWO})
    assert SEED_ROLES == ("executor", "planner", "delegate", "consultant")
    assert _problems(path) == (
        f"roles.delegate (env NISSE_ROLE_DELEGATE): missing; set it in {path} or set "
        "NISSE_ROLE_DELEGATE",
        f"roles.consultant (env NISSE_ROLE_CONSULTANT): missing; set it in {path} or set "
        "NISSE_ROLE_CONSULTANT",
    )


def test_a_missing_required_role_joins_every_other_problem(tmp_path: Path) -> None:
    """A required added role that is missing is listed with the other problems at once."""
    path = write_config(tmp_path / "c.toml", {"llm": {"base_url": "http://h"}, "roles": TWO})
    problems = _problems(path, require_roles=("planner", "reviewer"))
    assert problems == (
        f"llm.token (env NISSE_LLM_TOKEN): missing; set it in {path} or set NISSE_LLM_TOKEN",
        f"roles.reviewer (env NISSE_ROLE_REVIEWER): missing; set it in {path} or set "
        "NISSE_ROLE_REVIEWER",
    )


def test_an_added_role_is_pinned_fingerprinted_and_restored(tmp_path: Path) -> None:
    """A reviewer role with options is in the record, changes the fingerprint, and comes
    back from the record."""
    roles = {**COMPLETE["roles"], "reviewer": {"model": "claude-opus-4-8", "reasoning": "high"}}
    pin = load_settings(write_config(tmp_path / "c.toml", {"llm": LLM, "roles": roles})).pin()
    plain = load_settings(write_config(tmp_path / "d.toml", COMPLETE)).pin()
    record = pin.record()
    assert record["roles"]["reviewer"] == {
        "model": "claude-opus-4-8",
        "route": "anthropic_messages",
        "options": {"reasoning": "high"},
    }
    assert pin.fingerprint != plain.fingerprint
    back = Pin.from_record(json.loads(json.dumps(record)), TOKEN, base_url=LLM["base_url"])
    assert back == pin
    assert back.roles.names == (*SEED_ROLES, "reviewer")


def test_roles_come_from_their_environment_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    """NISSE_ROLE_<NAME> and NISSE_ROLE_<NAME>_<OPTION> add a role of any valid name, and
    its source says so."""
    monkeypatch.setenv("NISSE_ROLE_CODE_REVIEW", "gpt-5.4-mini")
    monkeypatch.setenv("NISSE_ROLE_CODE_REVIEW_MAX_OUTPUT_TOKENS", "4000")
    settings = load_settings(llm=LLM, roles=COMPLETE["roles"])
    pin = settings.pin()
    assert pin.model_for("code_review") == "gpt-5.4-mini"
    options = pin.options_for("code_review")
    assert options is not None
    assert options.max_output_tokens == 4000
    assert settings.sources["roles.code_review"] == "env NISSE_ROLE_CODE_REVIEW"
    assert settings.sources["roles.code_review.max_output_tokens"] == (
        "env NISSE_ROLE_CODE_REVIEW_MAX_OUTPUT_TOKENS"
    )


def test_a_misspelled_option_variable_is_not_a_new_role(monkeypatch: pytest.MonkeyPatch) -> None:
    """NISSE_ROLE_PLANNER_REASONIN is reported as a misspelled option, not taken as a role."""
    monkeypatch.setenv("NISSE_ROLE_PLANNER_REASONIN", "high")
    assert _problems(None, llm=LLM, roles=COMPLETE["roles"]) == (
        "NISSE_ROLE_PLANNER_REASONIN: not an option of role 'planner' (did you mean "
        "NISSE_ROLE_PLANNER_REASONING?); a role of its own may not be named like a "
        "misspelled option",
    )


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        (
            "Code-Review",
            "roles.Code-Review: not a role name; a role name is 1 to 32 lowercase letters, "
            "digits or _, starting with a letter (its variable is NISSE_ROLE_<NAME>)",
        ),
        (
            "planner_stop",
            "roles.planner_stop: not a role name; a role name must not end in _stop: "
            "NISSE_ROLE_PLANNER_STOP would read as the stop option of role 'planner'",
        ),
    ],
)
def test_a_bad_role_name_is_refused(tmp_path: Path, name: str, problem: str) -> None:
    """A role name outside the pattern, or one its variable would misread, is a problem
    naming the key and the rule."""
    path = write_config(tmp_path / "c.toml", complete(roles={name: "gpt-5.4-mini"}))
    assert _problems(path) == (f"{problem}; from file {path}",)


def test_require_roles_must_be_names() -> None:
    """A bare string, or a name no role can have, is refused before anything is read."""
    with pytest.raises(TypeError) as caught:
        load_settings(require_roles="planner")
    assert str(caught.value) == (
        "require_roles must be a collection of role names, got the string 'planner'; "
        "write require_roles=('planner',)"
    )
    with pytest.raises(ValueError, match=r"require_roles: 'Planner' is not a role name"):
        load_settings(require_roles=("Planner",))


def test_the_schema_shows_roles_as_a_pattern() -> None:
    """The committed schema describes the seeds by name and any other role by its pattern;
    it accepts a reviewer role and refuses a name outside the pattern."""
    schema = json.loads(CONFIG_SCHEMA.read_text())
    roles = schema["$defs"]["RoleMap"]
    assert sorted(roles["properties"]) == sorted(SEED_ROLES)
    assert list(roles["patternProperties"]) == [ROLE_NAME_PATTERN]
    assert roles["additionalProperties"] is False
    validator = jsonschema.Draft202012Validator(schema)
    validator.validate({"roles": {"reviewer": {"model": "m", "reasoning": "low"}}})
    assert not validator.is_valid({"roles": {"Reviewer": "m"}})


def test_a_router_completes_for_an_added_role() -> None:
    """A router over a pin with only an added role sends that role's calls to its model."""
    pin = load_settings(llm=LLM, roles={"reviewer": "gpt-5.4-mini"}, require_roles=()).pin()
    script = Script().responses(reply("Looks fine."))  # the model's route: Responses
    with RoleRouter.from_pin(pin, transport=ScriptedTransport(script)) as router:
        router.complete("reviewer", [UserText(text="Review this.")], None)
    assert script.requests[0].model == "gpt-5.4-mini"


def test_config_check_requires_the_roles_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`config check --require planner,executor` passes a two-role config and lists an
    added role too; without --require the seeds are required (exit 2)."""
    from nisse_llm.cli.main import main

    roles = {**TWO, "reviewer": "gpt-5.4-mini"}
    path = str(write_config(tmp_path / "c.toml", {"llm": LLM, "roles": roles}))
    assert main(["config", "check", "--config", path, "--require", "planner,executor"]) == 0
    out = capsys.readouterr().out
    listed = [line.split()[0] for line in out.splitlines()[3:6]]
    assert listed == ["executor", "planner", "reviewer"]
    assert main(["config", "check", "--config", path]) == 2
    assert "roles.delegate (env NISSE_ROLE_DELEGATE): missing" in capsys.readouterr().err
    assert main(["config", "check", "--config", path, "--require", "Planner"]) == 2
    assert "'Planner' is not a role name" in capsys.readouterr().err
