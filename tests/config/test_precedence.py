"""Precedence for every key: explicit argument over environment over TOML file over default."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from nisse_llm.config.settings import ENV_VARS, Settings, load_settings
from nisse_llm.errors import ConfigError
from tests.config.helpers import COMPLETE, write_config

_MISSING = object()

# key: (file value, env string, argument value, expected from file, env, argument, default)
CASES: dict[str, tuple[Any, str, Any, Any, Any, Any, Any]] = {
    "llm.base_url": (
        "http://file.test:1",
        "https://env.test:2/",
        "http://arg.test:3/proxy",
        "http://file.test:1",
        "https://env.test:2",
        "http://arg.test:3/proxy",
        _MISSING,
    ),
    "llm.token": (
        "sk-file-111111",
        "sk-env-222222",
        "sk-arg-333333",
        "sk-file-111111",
        "sk-env-222222",
        "sk-arg-333333",
        _MISSING,
    ),
    "llm.max_output_tokens": (1000, "2000", 3000, 1000, 2000, 3000, 16384),
    "llm.timeout_s": (30, "45.5", 60.0, 30.0, 45.5, 60.0, 120.0),
    "llm.passthrough_timeout_s": (100, "200", 250.5, 100.0, 200.0, 250.5, 300.0),
    "llm.connect_timeout_s": (1.5, "2", 3, 1.5, 2.0, 3.0, 10.0),
    "llm.stream_idle_timeout_s": (30, "40", 50, 30.0, 40.0, 50.0, 120.0),
    "llm.rate_limit_retries": (0, "3", 2, 0, 3, 2, 1),
    "llm.rate_limit_wait_s": (5, "7.5", 9, 5.0, 7.5, 9.0, 20.0),
    "llm.rate_limit_wait_cap_s": (30, "40", 50, 30.0, 40.0, 50.0, 60.0),
    "llm.passthrough_prefixes": (
        ["file-"],
        " env-, vendor/ ",
        ("arg-",),
        ("file-",),
        ("env-", "vendor/"),
        ("arg-",),
        ("claude-", "anthropic/"),
    ),
    "llm.prompt_cache": (False, "true", False, False, True, False, True),
    "llm.prompt_cache_ttl": ("1h", "5m", "1h", "1h", "5m", "1h", "5m"),
    "llm.preflight": (True, "false", True, True, False, True, False),
    "llm.max_response_bytes": (2048, "4096", 8192, 2048, 4096, 8192, 64 * 1024 * 1024),
    "llm.call_deadline_s": (30, "45", 60.5, 30.0, 45.0, 60.5, 600.0),
    "llm.stream_deadline_s": (100, "200.5", 300, 100.0, 200.5, 300.0, 3600.0),
    "roles.executor": ("file-a", "env-a", "arg-a", "file-a", "env-a", "arg-a", _MISSING),
    "roles.planner": ("file-b", "env-b", "arg-b", "file-b", "env-b", "arg-b", _MISSING),
    "roles.delegate": ("file-c", "env-c", "arg-c", "file-c", "env-c", "arg-c", _MISSING),
    "roles.consultant": ("file-d", "env-d", "arg-d", "file-d", "env-d", "arg-d", _MISSING),
}


def _value(settings: Settings, key: str) -> Any:
    table, name = key.split(".")
    value = getattr(getattr(settings, table), name)
    return value.get_secret_value() if isinstance(value, SecretStr) else value


def test_cases_cover_every_key() -> None:
    """The precedence table below names every configuration key there is."""
    profile_options = {key for key in ENV_VARS if key.count(".") == 2}  # test_role_profiles
    # test_require_roles, test_task_store (task_schema too)
    top_level = {"require_roles", "task_store", "task_schema"}
    assert set(CASES) == set(ENV_VARS) - profile_options - top_level


@pytest.mark.parametrize("key", sorted(CASES))
def test_argument_beats_environment_beats_file_beats_default(
    key: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """For each key the highest source present wins: argument, environment, file, default."""
    file_value, env_value, arg_value, from_file, from_env, from_arg, default = CASES[key]
    table, name = key.split(".")
    env = ENV_VARS[key]

    def load(*, in_file: bool, in_env: bool, in_arg: bool) -> Settings:
        document = {t: dict(v) for t, v in COMPLETE.items()}
        document[table].pop(name, None)
        if in_file:
            document[table][name] = file_value
        path = write_config(tmp_path / "nisse-llm.toml", document)
        if in_env:
            monkeypatch.setenv(env, env_value)
        else:
            monkeypatch.delenv(env, raising=False)
        overrides = {table: {name: arg_value}} if in_arg else {}
        return load_settings(path, **overrides)

    assert _value(load(in_file=True, in_env=True, in_arg=True), key) == from_arg
    assert _value(load(in_file=False, in_env=False, in_arg=True), key) == from_arg
    assert _value(load(in_file=True, in_env=True, in_arg=False), key) == from_env
    assert _value(load(in_file=False, in_env=True, in_arg=False), key) == from_env
    assert _value(load(in_file=True, in_env=False, in_arg=False), key) == from_file
    if default is _MISSING:
        with pytest.raises(ConfigError) as caught:
            load(in_file=False, in_env=False, in_arg=False)
        assert caught.value.problems == (
            f"{key} (env {env}): missing; set it in {tmp_path / 'nisse-llm.toml'} or set {env}",
        )
    else:
        assert _value(load(in_file=False, in_env=False, in_arg=False), key) == default
