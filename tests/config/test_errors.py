"""Every configuration failure is a ConfigError a person can act on: key, env name, source."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from nisse_llm.config.settings import InsecureConfigFileWarning, load_settings
from nisse_llm.errors import ConfigError, LLMError
from tests.config.helpers import COMPLETE, TOKEN, complete, write_config

ALL_MISSING = (
    "llm.base_url (env NISSE_LLM_BASE_URL): missing; set NISSE_LLM_BASE_URL, or set "
    "llm.base_url in a TOML file (named by --config or NISSE_CONFIG, or ./nisse.toml)",
    "llm.token (env NISSE_LLM_TOKEN): missing; set NISSE_LLM_TOKEN, or set "
    "llm.token in a TOML file (named by --config or NISSE_CONFIG, or ./nisse.toml)",
    "roles.executor (env NISSE_ROLE_EXECUTOR): missing; set NISSE_ROLE_EXECUTOR, or set "
    "roles.executor in a TOML file (named by --config or NISSE_CONFIG, or ./nisse.toml)",
    "roles.planner (env NISSE_ROLE_PLANNER): missing; set NISSE_ROLE_PLANNER, or set "
    "roles.planner in a TOML file (named by --config or NISSE_CONFIG, or ./nisse.toml)",
    "roles.delegate (env NISSE_ROLE_DELEGATE): missing; set NISSE_ROLE_DELEGATE, or set "
    "roles.delegate in a TOML file (named by --config or NISSE_CONFIG, or ./nisse.toml)",
    "roles.consultant (env NISSE_ROLE_CONSULTANT): missing; set NISSE_ROLE_CONSULTANT, or "
    "set roles.consultant in a TOML file (named by --config or NISSE_CONFIG, or ./nisse.toml)",
)


def _problems(path: Path | None = None, **overrides: object) -> tuple[str, ...]:
    with pytest.raises(ConfigError) as caught:
        load_settings(path, **overrides)
    error = caught.value
    assert str(error).splitlines()[1:] == [f"  - {p}" for p in error.problems]
    return error.problems


def test_every_missing_key_is_reported_at_once() -> None:
    """With nothing configured, one error lists all six required keys with their env names."""
    with pytest.raises(ConfigError) as caught:
        load_settings()
    assert caught.value.problems == ALL_MISSING
    looked = Path.cwd() / "nisse.toml"
    assert str(caught.value).startswith(
        "invalid configuration (no config file: no path given, NISSE_CONFIG unset, and no "
        f"nisse.toml in the current folder ({looked})), 6 problems:\n"
    )


def test_missing_keys_name_the_file_that_lacks_them(tmp_path: Path) -> None:
    """A key absent from a given file is reported with that file's path and its env name."""
    path = write_config(tmp_path / "c.toml", {"llm": {"base_url": "http://h"}})
    problems = _problems(path)
    assert (
        problems[0]
        == f"llm.token (env NISSE_LLM_TOKEN): missing; set it in {path} or set NISSE_LLM_TOKEN"
    )
    assert len(problems) == 5


def test_a_config_error_is_an_llm_error_and_not_a_value_error() -> None:
    """Callers catch ConfigError as an LLMError; it is never a bare ValueError."""
    with pytest.raises(ConfigError) as caught:
        load_settings()
    assert isinstance(caught.value, LLMError)
    assert not isinstance(caught.value, ValueError)


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("lots", "input should be a valid integer, got 'lots'"),
        ("0", "input should be greater than 0, got 0"),
        ("-5", "input should be greater than 0, got -5"),
        ("1.5", "input should be a valid integer, got '1.5'"),
    ],
)
def test_a_bad_output_ceiling_in_the_environment_names_the_variable(
    value: str, reason: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """NISSE_MAX_OUTPUT_TOKENS=lots or 0 is a ConfigError naming key, variable and source."""
    monkeypatch.setenv("NISSE_MAX_OUTPUT_TOKENS", value)
    path = write_config(tmp_path / "c.toml", COMPLETE)
    assert _problems(path) == (
        f"llm.max_output_tokens (env NISSE_MAX_OUTPUT_TOKENS): {reason}; "
        "from environment variable NISSE_MAX_OUTPUT_TOKENS",
    )


def test_a_wrong_type_in_the_file_names_the_file(tmp_path: Path) -> None:
    """A string where an integer belongs is refused (no silent coercion) and names the file."""
    path = write_config(tmp_path / "c.toml", complete(llm={"max_output_tokens": "16384"}))
    assert _problems(path) == (
        "llm.max_output_tokens (env NISSE_MAX_OUTPUT_TOKENS): is a string, not an integer; "
        f"drop the quotes, got '16384'; from file {path}",
    )


@pytest.mark.parametrize(
    "url", ["ftp://proxy.test", "proxy.test:4000", "file:///etc/passwd", "http://", "http://h/?q=1"]
)
def test_a_base_url_that_is_not_http_is_refused(url: str, tmp_path: Path) -> None:
    """Only an http:// or https:// URL with a host and no query is a base URL."""
    path = write_config(tmp_path / "c.toml", complete(llm={"base_url": url}))
    assert _problems(path) == (
        "llm.base_url (env NISSE_LLM_BASE_URL): must be an http:// or https:// URL with a "
        f"host and no query, got {url!r}; from file {path}",
    )


def test_a_bad_base_url_from_the_environment_names_the_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The source named is the environment variable when the environment set the value."""
    monkeypatch.setenv("NISSE_LLM_BASE_URL", "localhost:4000")
    path = write_config(tmp_path / "c.toml", COMPLETE)
    (problem,) = _problems(path)
    assert problem.endswith("got 'localhost:4000'; from environment variable NISSE_LLM_BASE_URL")


def test_an_unknown_table_is_an_error_with_a_suggestion(tmp_path: Path) -> None:
    """A typo such as [role] is refused, naming the file and the table meant."""
    document = {"llm": COMPLETE["llm"], "role": COMPLETE["roles"]}
    path = write_config(tmp_path / "c.toml", document)
    assert _problems(path) == (
        f"[role]: unknown table in file {path}; it is probably [roles] misspelled, which is "
        "why [roles]'s keys are missing: rename it [roles]",
    )


def test_a_misspelled_table_leads_the_list_and_hides_what_it_implies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cause comes first; the four missing roles it implies are not listed one by one,
    and the other problems still are."""
    monkeypatch.setenv("NISSE_MAX_OUTPUT_TOKENS", "lots")
    document = {"llm": COMPLETE["llm"], "rols": {"planner": "x"}}
    problems = _problems(write_config(tmp_path / "c.toml", document))
    assert problems[0].startswith("[rols]: unknown table in file ")
    assert "rename it [roles]" in problems[0]
    assert not any("roles.executor" in p for p in problems)
    assert len(problems) == 2
    assert problems[1].startswith("llm.max_output_tokens (env NISSE_MAX_OUTPUT_TOKENS)")


def test_an_unknown_table_with_every_role_set_elsewhere_keeps_the_suggestion(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the roles come from the environment, [role] is just an unknown table."""
    for role, model in COMPLETE["roles"].items():
        monkeypatch.setenv(f"NISSE_ROLE_{role.upper()}", model)
    path = write_config(tmp_path / "c.toml", {"llm": COMPLETE["llm"], "role": {"x": "y"}})
    assert _problems(path) == (
        f"[role]: unknown table in file {path} (did you mean [roles]?); the tables are [llm], [roles], [mcp]",
    )


def test_a_misspelled_required_role_is_named_beside_the_missing_one(tmp_path: Path) -> None:
    """A typo such as planer = ... leaves planner missing; the problem names the close
    role given, so the typo is found."""
    roles = {**COMPLETE["roles"], "planer": "openai/gpt-5"}
    del roles["planner"]
    path = write_config(tmp_path / "c.toml", {"llm": COMPLETE["llm"], "roles": roles})
    assert _problems(path) == (
        f"roles.planner (env NISSE_ROLE_PLANNER): missing; set it in {path} or set "
        "NISSE_ROLE_PLANNER (roles.planer is set: is it roles.planner misspelled?)",
    )


def test_an_unknown_key_in_the_llm_table_is_an_error(tmp_path: Path) -> None:
    """Unknown keys are refused in every table, not only [roles]."""
    path = write_config(tmp_path / "c.toml", complete(llm={"timeout": 5}))
    (problem,) = _problems(path)
    assert problem.startswith(
        f"llm.timeout: unknown key in file {path} (did you mean llm.timeout_s?); [llm] holds base_url, token,"
    )


def test_an_unknown_top_level_key_is_an_error(tmp_path: Path) -> None:
    """A key outside any table is refused too."""
    path = write_config(tmp_path / "c.toml", {"base_url": "http://h", **COMPLETE})
    assert _problems(path) == (
        f"base_url: unknown top-level key in file {path}; keys live in the tables [llm], "
        "[roles], [mcp] (only require_roles, task_store and task_schema stand outside them)",
    )


def test_a_table_that_is_not_a_table_is_an_error(tmp_path: Path) -> None:
    """``llm = "x"`` is refused with the file named, even when the environment sets llm keys."""
    path = write_config(tmp_path / "c.toml", {"llm": "http://h", "roles": COMPLETE["roles"]})
    problems = _problems(path)
    assert problems[0] == f"llm: must be a table ([llm]), got a string; from file {path}"


def test_a_toml_syntax_error_names_file_line_and_column(tmp_path: Path) -> None:
    """A file that is not TOML is reported with its path, line and column."""
    path = write_config(tmp_path / "c.toml", '[llm]\nbase_url = "http://h"\ntimeout_s = = 5\n')
    assert _problems(path) == ()  # a syntax error is one message, not a list of keys
    with pytest.raises(ConfigError) as caught:
        load_settings(path)
    assert str(caught.value) == f"{path}, line 3, column 13: invalid TOML: Invalid value"


def test_a_syntax_error_at_the_end_of_the_file_names_the_last_position(tmp_path: Path) -> None:
    """An unterminated string is placed at the end of the document, line and column."""
    path = write_config(tmp_path / "c.toml", '[llm]\nbase_url = "http://h')
    with pytest.raises(ConfigError) as caught:
        load_settings(path)
    assert str(caught.value) == f"{path}, line 2, column 21: invalid TOML: Unterminated string"


def test_a_missing_file_names_where_its_path_came_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A path that does not exist is reported with the argument or NISSE_CONFIG that named it."""
    missing = tmp_path / "absent.toml"
    with pytest.raises(ConfigError, match="named by the config path argument"):
        load_settings(missing)
    monkeypatch.setenv("NISSE_CONFIG", str(missing))
    with pytest.raises(ConfigError) as caught:
        load_settings()
    assert str(caught.value) == f"config file {missing} (named by NISSE_CONFIG) does not exist"


def test_an_unreadable_or_undecodable_file_is_a_config_error(tmp_path: Path) -> None:
    """A directory or a non-UTF-8 file is reported by path, never as an OSError."""
    with pytest.raises(ConfigError, match=r"config file .* is not a regular file \(a directory\)"):
        load_settings(tmp_path)
    latin = tmp_path / "latin.toml"
    latin.write_bytes(b'[roles]\nexecutor = "caf\xe9"\n')
    with pytest.raises(ConfigError) as caught:
        load_settings(latin)
    assert str(caught.value) == f"config file {latin} is not UTF-8 text (line 2, byte 23)"


@pytest.mark.parametrize(
    ("env", "value", "problem"),
    [
        (
            "NISSE_PROMPT_CACHE",
            "maybe",
            "llm.prompt_cache (env NISSE_PROMPT_CACHE): input should be a valid boolean, "
            "got 'maybe'; from environment variable NISSE_PROMPT_CACHE",
        ),
        (
            "NISSE_PROMPT_CACHE_TTL",
            "2h",
            "llm.prompt_cache_ttl (env NISSE_PROMPT_CACHE_TTL): input should be '5m' or '1h', "
            "got '2h'; from environment variable NISSE_PROMPT_CACHE_TTL",
        ),
        (
            "NISSE_PASSTHROUGH_PREFIXES",
            "claude-,,x",
            "llm.passthrough_prefixes (env NISSE_PASSTHROUGH_PREFIXES): must not be empty, "
            "got '' (item 1); from environment variable NISSE_PASSTHROUGH_PREFIXES",
        ),
        (
            "NISSE_TIMEOUT_S",
            "0",
            "llm.timeout_s (env NISSE_TIMEOUT_S): input should be greater than 0, got 0.0; "
            "from environment variable NISSE_TIMEOUT_S",
        ),
        (
            "NISSE_CONNECT_TIMEOUT_S",
            "nan",
            "llm.connect_timeout_s (env NISSE_CONNECT_TIMEOUT_S): input should be a finite "
            "number, got nan; from environment variable NISSE_CONNECT_TIMEOUT_S",
        ),
        (
            "NISSE_RATE_LIMIT_RETRIES",
            "99",
            "llm.rate_limit_retries (env NISSE_RATE_LIMIT_RETRIES): input should be less than "
            "or equal to 10, got 99; from environment variable NISSE_RATE_LIMIT_RETRIES",
        ),
        (
            "NISSE_ROLE_PLANNER",
            "gpt 5",
            "roles.planner (env NISSE_ROLE_PLANNER): must be one word: no spaces, got 'gpt 5'; "
            "from environment variable NISSE_ROLE_PLANNER",
        ),
    ],
)
def test_bad_knob_values_name_key_variable_and_source(
    env: str, value: str, problem: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each knob is typed and bounded, and a bad value is reported in plain words."""
    monkeypatch.setenv(env, value)
    assert _problems(write_config(tmp_path / "c.toml", COMPLETE)) == (problem,)


def test_a_wait_beyond_its_cap_names_both_keys(tmp_path: Path) -> None:
    """rate_limit_wait_s above rate_limit_wait_cap_s is refused, naming both keys and sources."""
    path = write_config(tmp_path / "c.toml", complete(llm={"rate_limit_wait_s": 90}))
    assert _problems(path) == (
        "llm.rate_limit_wait_s (env NISSE_RATE_LIMIT_WAIT_S), llm.rate_limit_wait_cap_s "
        "(env NISSE_RATE_LIMIT_WAIT_CAP_S): the wait 90.0 exceeds the cap 60.0; the wait must "
        f"lie within the cap; llm.rate_limit_wait_s from file {path}, "
        "llm.rate_limit_wait_cap_s from the default",
    )


def test_bad_arguments_name_the_argument() -> None:
    """A bad override names the argument it came from; a non-table override is refused."""
    problems = _problems(
        None,
        llm={**COMPLETE["llm"], "timeout_s": "fast"},
        roles="all-claude",
        rolez={"planner": "x"},
    )
    assert problems[0] == "roles: the argument roles= must be a table (a dict), got str"
    assert (
        "llm.timeout_s (env NISSE_TIMEOUT_S): input should be a valid number, got 'fast'; "
        "from the argument llm="
    ) in problems
    assert (
        "[rolez]: unknown table in the argument rolez= (did you mean [roles]?); the tables are [llm], [roles], [mcp]"
        in problems
    )


def test_errors_from_every_source_arrive_together(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Problems from the file, the environment and the arguments are listed in one error."""
    monkeypatch.setenv("NISSE_MAX_OUTPUT_TOKENS", "lots")
    roles = {"executor": "x", "planer": "y"}
    path = write_config(tmp_path / "c.toml", {"llm": {"base_url": "ftp://h"}, "roles": roles})
    problems = _problems(path, llm={"timeout_s": -1})
    keys = [p.split(" ", 1)[0].rstrip(":") for p in problems]
    assert sorted(keys) == sorted(
        [
            "llm.base_url",
            "llm.token",
            "llm.max_output_tokens",
            "llm.timeout_s",
            "roles.planner",
            "roles.delegate",
            "roles.consultant",
        ]
    )


def test_a_token_in_a_file_others_can_read_warns(tmp_path: Path) -> None:
    """A TOML file holding the token with group/other permissions raises the specific warning."""
    path = write_config(tmp_path / "c.toml", COMPLETE, mode=0o644)
    with pytest.warns(InsecureConfigFileWarning) as caught:
        load_settings(path)
    assert str(caught[0].message) == (
        f"{path} holds llm.token and is readable by group or others (mode 0644); "
        f"run chmod 600 {path}, or set NISSE_LLM_TOKEN instead"
    )


def test_a_private_token_file_or_a_public_file_without_token_does_not_warn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Mode 600 with a token, or any mode without one, loads without a warning."""
    private = write_config(tmp_path / "private.toml", COMPLETE, mode=0o600)
    no_token = {"llm": {"base_url": "http://h"}, "roles": COMPLETE["roles"]}
    public = write_config(tmp_path / "public.toml", no_token, mode=0o644)
    monkeypatch.setenv("NISSE_LLM_TOKEN", TOKEN)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load_settings(private)
        load_settings(public)


def test_a_config_error_always_lists_a_problem(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every setting given as an argument but no role, none required: the error names the
    missing roles table as its one problem, never "0 problems"."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as caught:
        load_settings(llm={"base_url": "http://127.0.0.1:4000", "token": TOKEN}, require_roles=())
    message = str(caught.value)
    assert "0 problems" not in message
    assert caught.value.problems == (
        'roles: no role is set, and a configuration needs one; set roles.NAME = "MODEL" in a '
        "TOML file or NISSE_ROLE_<NAME>, or pass roles={...}",
    )
    assert message.startswith("invalid configuration (no config file:")


def test_no_config_file_is_said_only_when_a_file_would_supply_what_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Everything passed as arguments, one value wrong: the error is about that value, and
    does not open by saying no config file was found (a file would not fix it)."""
    monkeypatch.chdir(tmp_path)
    llm = {"base_url": "http://127.0.0.1:4000", "token": TOKEN, "max_output_tokens": "lots"}
    with pytest.raises(ConfigError) as caught:
        load_settings(llm=llm, roles={"executor": "gpt-4.1"}, require_roles=("executor",))
    message = str(caught.value)
    assert message.startswith("invalid configuration, 1 problem:\n  - llm.max_output_tokens")
    assert "no config file" not in message
