"""Role profiles: the string and table forms, every option key from file, environment and
argument, the pin round trip, the errors, and invalid combinations refused at load time."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]  # no stubs in the dev extras
import pytest

from nisse_llm.config.options import RequestOptions
from nisse_llm.config.profiles import OPTION_KEYS, RoleProfile
from nisse_llm.config.settings import ENV_VARS, Pin, RoleMap, load_settings
from nisse_llm.errors import ConfigError
from tests.config.helpers import COMPLETE, CONFIG_SCHEMA, TOKEN, write_config

# An OpenAI model no rule row places: every option of the unplaced rules is valid for it.
GPT = "openai/gpt-scripted"
# The options only some models take are tried on one that takes them.
MODEL_FOR = {"reasoning_display": "claude-opus-5-5"}

# option: (file value, env string, argument value, expected from file, env, argument)
OPTION_CASES: dict[str, tuple[Any, str, Any, Any, Any, Any]] = {
    "max_output_tokens": (1000, "2000", 3000, 1000, 2000, 3000),
    "reasoning": ("low", "4096", "high", "low", 4096, "high"),
    "temperature": (0.5, "0.7", 1, 0.5, 0.7, 1.0),
    "top_p": (0.5, "0.9", 1.0, 0.5, 0.9, 1.0),
    "stop": (["a"], '["b", "c,d"]', ("e",), ("a",), ("b", "c,d"), ("e",)),
    "tool_choice": ("auto", "required", "submit_review", "auto", "required", "submit_review"),
    "parallel_tool_calls": (True, "false", True, True, False, True),
    "reasoning_display": (
        "summarized",
        "omitted",
        "summarized",
        "summarized",
        "omitted",
        "summarized",
    ),
    "like": ("gpt-5.5", "gpt-6-astra", "gpt-5.4-mini", "gpt-5.5", "gpt-6-astra", "gpt-5.4-mini"),
}
PROFILE_KEYS = [f"roles.{role}.{option}" for role in RoleMap.ROLES for option in OPTION_KEYS]


def _document(**roles: Any) -> dict[str, Any]:
    return {"llm": dict(COMPLETE["llm"]), "roles": {**COMPLETE["roles"], **roles}}


def test_every_role_option_has_a_case_and_an_environment_variable() -> None:
    assert set(OPTION_CASES) == set(OPTION_KEYS)
    for key in PROFILE_KEYS:
        _, role, option = key.split(".")
        assert ENV_VARS[key] == f"NISSE_ROLE_{role.upper()}_{option.upper()}"


@pytest.mark.parametrize("key", PROFILE_KEYS)
def test_each_option_argument_beats_environment_beats_file(
    key: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """For each role's option the highest source wins; the model stays the file's."""
    _, role, option = key.split(".")
    file_value, env_value, arg_value, from_file, from_env, from_arg = OPTION_CASES[option]

    model = MODEL_FOR.get(option, GPT)

    def load(*, in_file: bool, in_env: bool, in_arg: bool) -> Any:
        table: dict[str, Any] = {"model": model}
        if in_file:
            table[option] = file_value
        path = write_config(tmp_path / "nisse-llm.toml", _document(**{role: table}))
        if in_env:
            monkeypatch.setenv(ENV_VARS[key], env_value)
        else:
            monkeypatch.delenv(ENV_VARS[key], raising=False)
        overrides = {"roles": {role: {option: arg_value}}} if in_arg else {}
        settings = load_settings(path, **overrides)
        assert settings.roles.resolve(role) == model
        options = settings.roles.options(role)
        return None if options is None else getattr(options, option)

    assert load(in_file=True, in_env=True, in_arg=True) == from_arg
    assert load(in_file=False, in_env=False, in_arg=True) == from_arg
    assert load(in_file=True, in_env=True, in_arg=False) == from_env
    assert load(in_file=False, in_env=True, in_arg=False) == from_env
    assert load(in_file=True, in_env=False, in_arg=False) == from_file
    assert load(in_file=False, in_env=False, in_arg=False) is None


def test_string_and_table_forms_side_by_side(tmp_path: Path) -> None:
    """A plain string stays a string; a table holds the model and its options."""
    path = tmp_path / "nisse-llm.toml"
    path.write_text(
        f"""
[llm]
base_url = "http://127.0.0.1:4000"
token = "{TOKEN}"

[roles]
executor = "claude-sonnet-4-5"
delegate = "claude-opus-4-1"
consultant = "openai/gpt-5-mini"

[roles.planner]
model = "claude-opus-4-1"
reasoning = "high"
max_output_tokens = 32000
stop = ["</plan>"]
""",
        encoding="utf-8",
    )
    path.chmod(0o600)
    roles = load_settings(path).roles
    assert roles.executor == "claude-sonnet-4-5"
    assert roles.options("executor") is None
    assert roles.resolve("planner") == "claude-opus-4-1"
    assert roles.options("planner") == RequestOptions(
        reasoning="high", max_output_tokens=32000, stop=("</plan>",)
    )
    assert roles.pinned()["planner"] == "claude-opus-4-1"


def test_a_table_with_only_a_model_is_the_string_form(tmp_path: Path) -> None:
    path = write_config(tmp_path / "n.toml", _document(planner={"model": GPT}))
    pin = load_settings(path).pin()
    plain = load_settings(write_config(tmp_path / "p.toml", _document(planner=GPT))).pin()
    assert pin.roles.planner == GPT
    assert pin.fingerprint == plain.fingerprint


def test_the_model_variable_keeps_the_files_options(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """NISSE_ROLE_PLANNER replaces the model only; the table's options stay."""
    path = write_config(tmp_path / "n.toml", _document(planner={"model": GPT, "reasoning": "low"}))
    monkeypatch.setenv("NISSE_ROLE_PLANNER", "openai/o4-mini")
    roles = load_settings(path).roles
    assert roles.resolve("planner") == "openai/o4-mini"
    assert roles.options("planner") == RequestOptions(reasoning="low")


def test_options_from_the_environment_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_config(tmp_path / "n.toml", _document(consultant=GPT))
    monkeypatch.setenv("NISSE_ROLE_CONSULTANT_TEMPERATURE", "0.2")
    monkeypatch.setenv("NISSE_ROLE_CONSULTANT_STOP", "END")
    monkeypatch.setenv("NISSE_ROLE_CONSULTANT_PARALLEL_TOOL_CALLS", "0")
    assert load_settings(path).roles.options("consultant") == RequestOptions(
        temperature=0.2, stop=("END",), parallel_tool_calls=False
    )


def test_the_record_holds_the_profile_and_restores_it(tmp_path: Path) -> None:
    planner = {"model": "claude-opus-4-1", "reasoning": "high", "max_output_tokens": 32000}
    executor = {"model": GPT, "temperature": 0.1, "stop": ["END"], "tool_choice": "required"}
    path = write_config(tmp_path / "n.toml", _document(planner=planner, executor=executor))
    pin = load_settings(path).pin()
    record = pin.record()
    assert record["roles"]["planner"] == {
        "model": "claude-opus-4-1",
        "route": "anthropic_messages",
        "options": {"reasoning": "high", "max_output_tokens": 32000},
    }
    assert record["roles"]["executor"]["options"] == {
        "temperature": 0.1,
        "stop": ["END"],
        "tool_choice": "required",
    }
    assert "options" not in record["roles"]["delegate"]
    restored = Pin.from_record(json.loads(json.dumps(record)), TOKEN, base_url=pin.base_url)
    assert restored == pin
    assert restored.options_for("planner") == RequestOptions(
        reasoning="high", max_output_tokens=32000
    )
    assert restored.fingerprint == pin.fingerprint


def test_the_fingerprint_covers_the_profile(tmp_path: Path) -> None:
    low = load_settings(
        write_config(tmp_path / "a.toml", _document(planner={"model": GPT, "reasoning": "low"}))
    ).pin()
    high = load_settings(
        write_config(tmp_path / "b.toml", _document(planner={"model": GPT, "reasoning": "high"}))
    ).pin()
    assert low.fingerprint != high.fingerprint


def test_an_edited_profile_in_a_record_is_refused(tmp_path: Path) -> None:
    path = write_config(tmp_path / "n.toml", _document(planner={"model": GPT, "reasoning": "low"}))
    record = load_settings(path).pin().record()
    record["roles"]["planner"]["options"]["reasoning"] = "high"
    with pytest.raises(ConfigError, match="fingerprint does not match"):
        Pin.from_record(record, TOKEN)


def test_editing_the_toml_after_pinning_changes_nothing(tmp_path: Path) -> None:
    path = write_config(tmp_path / "n.toml", _document(planner={"model": GPT, "reasoning": "low"}))
    pin = load_settings(path).pin()
    write_config(path, _document(planner={"model": GPT, "reasoning": "high", "top_p": 0.5}))
    assert pin.options_for("planner") == RequestOptions(reasoning="low")
    assert load_settings(path).pin().options_for("planner") == RequestOptions(
        reasoning="high", top_p=0.5
    )


def test_an_unknown_key_in_a_role_table_is_named_with_a_suggestion(tmp_path: Path) -> None:
    path = write_config(tmp_path / "n.toml", _document(planner={"model": GPT, "reasonig": "high"}))
    with pytest.raises(ConfigError) as caught:
        load_settings(path)
    (problem,) = caught.value.problems
    assert problem.startswith("roles.planner.reasonig: unknown key in file")
    assert "(did you mean roles.planner.reasoning?)" in problem
    assert "[roles.planner] holds model, max_output_tokens, reasoning" in problem


REASONING_WORDS = (
    'must be "off", "minimal", "low", "medium", "high", "xhigh", "max" or a thinking budget'
)


@pytest.mark.parametrize(
    ("table", "words"),
    [
        ({"model": GPT, "reasoning": "extreme"}, REASONING_WORDS),
        ({"model": GPT, "reasoning": 0}, REASONING_WORDS),
        ({"model": GPT, "temperature": 3.0}, "less than or equal to 2"),
        ({"model": GPT, "top_p": 0}, "greater than 0"),
        ({"model": GPT, "max_output_tokens": "many"}, "valid integer"),
        ({"model": GPT, "tool_choice": "two words"}, 'must be "auto", "none", "required"'),
        ({"model": GPT, "stop": [""]}, "(item 0)"),
        ({"model": GPT, "parallel_tool_calls": "yes"}, "valid boolean"),
    ],
)
def test_a_bad_option_value_names_its_key_and_variable(
    table: dict[str, Any], words: str, tmp_path: Path
) -> None:
    path = write_config(tmp_path / "n.toml", _document(planner=table))
    with pytest.raises(ConfigError) as caught:
        load_settings(path)
    (problem,) = caught.value.problems
    option = next(key for key in table if key != "model")
    assert problem.startswith(
        f"roles.planner.{option} (env NISSE_ROLE_PLANNER_{option.upper()}): "
    ), problem
    assert words in problem
    assert problem.endswith(f"from file {path}")


def test_a_role_that_is_neither_string_nor_table(tmp_path: Path) -> None:
    path = write_config(tmp_path / "n.toml", _document(planner=5))
    with pytest.raises(ConfigError) as caught:
        load_settings(path)
    (problem,) = caught.value.problems
    assert problem.startswith("roles.planner (env NISSE_ROLE_PLANNER): must be a model string or")


def test_a_table_without_a_model_is_missing_its_model(tmp_path: Path) -> None:
    path = write_config(tmp_path / "n.toml", _document(planner={"reasoning": "low"}))
    with pytest.raises(ConfigError) as caught:
        load_settings(path)
    assert caught.value.problems == (
        f"roles.planner (env NISSE_ROLE_PLANNER): missing; set it in {path} "
        "or set NISSE_ROLE_PLANNER",
    )


@pytest.mark.parametrize(
    ("role", "words", "keys"),
    [
        (
            {"model": "claude-sonnet-4-5", "temperature": 0.2},
            "cannot be sent to an Anthropic model",
            ["roles.planner.temperature (env NISSE_ROLE_PLANNER_TEMPERATURE)"],
        ),
        (
            {"model": "claude-sonnet-4-5", "reasoning": 500},
            "minimum thinking budget",
            ["roles.planner.reasoning"],
        ),
        (
            {"model": "claude-sonnet-4-5", "reasoning": 9000, "max_output_tokens": 8000},
            "must be below max_output_tokens (8000)",
            ["roles.planner.reasoning", "roles.planner.max_output_tokens"],
        ),
        (
            {"model": "claude-sonnet-4-5", "reasoning": 20000},
            "must be below max_output_tokens (16384)",
            ["roles.planner.reasoning", "llm.max_output_tokens (env NISSE_MAX_OUTPUT_TOKENS)"],
        ),
        (
            {"model": "anthropic/claude-opus-4-1", "reasoning": "low", "tool_choice": "required"},
            "no forced tool",
            ["roles.planner.reasoning", "roles.planner.tool_choice"],
        ),
        (
            {"model": GPT, "stop": ["1", "2", "3", "4", "5"]},
            "at most 4",
            ["roles.planner.stop"],
        ),
    ],
)
def test_an_invalid_combination_is_a_config_error_at_load_time(
    role: dict[str, Any], words: str, keys: list[str], tmp_path: Path
) -> None:
    path = write_config(tmp_path / "n.toml", _document(planner=role))
    with pytest.raises(ConfigError) as caught:
        load_settings(path)
    (problem,) = caught.value.problems
    assert words in problem
    for key in keys:
        assert key in problem
    assert repr(role["model"]) in problem


def test_an_operator_prefix_makes_a_role_anthropic_for_the_rules(tmp_path: Path) -> None:
    document = _document(planner={"model": "corp-sonnet", "temperature": 0.3})
    document["llm"]["passthrough_prefixes"] = ["corp-", "claude-"]
    with pytest.raises(ConfigError, match="Anthropic model"):
        load_settings(write_config(tmp_path / "n.toml", document))


def test_the_schema_validates_both_forms_and_refuses_unknown_keys() -> None:
    schema = json.loads(CONFIG_SCHEMA.read_text())
    validator = jsonschema.validators.validator_for(schema)(schema)
    good = _document(planner={"model": GPT, "reasoning": "high", "stop": ["x"]})
    validator.validate(good)
    for bad in (
        _document(planner={"model": GPT, "reasonig": "high"}),
        _document(planner={"model": GPT, "reasoning": "extreme"}),
        _document(planner=5),
    ):
        with pytest.raises(jsonschema.ValidationError):
            validator.validate(bad)


def test_a_role_profile_is_request_options_with_a_model() -> None:
    profile = RoleProfile(model=GPT, reasoning="low")
    assert profile.options == RequestOptions(reasoning="low")
    assert RoleProfile(model=GPT).options is None


def test_sources_name_where_each_option_came_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A role table's keys get their file line; an option variable names itself; the role's
    model keeps the role's own key whichever form wrote it."""
    path = tmp_path / "n.toml"
    path.write_text(
        f"""[llm]
base_url = "http://127.0.0.1:4000"
token = "{TOKEN}"
[roles]
executor = "claude-sonnet-4-5"
delegate = "claude-opus-4-1"
consultant = "openai/gpt-5-mini"
[roles.planner]
model = "openai/gpt-5"
reasoning = "high"
""",
        encoding="utf-8",
    )
    path.chmod(0o600)
    monkeypatch.setenv("NISSE_ROLE_PLANNER_STOP", "END")
    sources = load_settings(path).sources
    assert sources["roles.executor"] == f"file {path}, line 5"
    assert sources["roles.planner"] == f"file {path}, line 9"
    assert sources["roles.planner.reasoning"] == f"file {path}, line 10"
    assert sources["roles.planner.stop"] == "env NISSE_ROLE_PLANNER_STOP"
    assert "roles.planner.model" not in sources
    assert "roles.planner.temperature" not in sources
