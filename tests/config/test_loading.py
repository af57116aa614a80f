"""Where settings come from: the file path, empty variables, None overrides, env parsing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import nisse_llm
from nisse_llm.config.settings import ENV_VARS, load_settings
from tests.config.helpers import COMPLETE, TOKEN, complete, write_config


def test_nisse_config_names_the_file_and_the_argument_beats_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a path argument NISSE_CONFIG names the file; a path argument takes precedence."""
    from_env = write_config(tmp_path / "env.toml", complete(roles={"planner": "from-env-file"}))
    from_arg = write_config(tmp_path / "arg.toml", complete(roles={"planner": "from-arg-file"}))
    monkeypatch.setenv("NISSE_CONFIG", str(from_env))
    assert load_settings().roles.planner == "from-env-file"
    assert load_settings().config_file == from_env
    assert load_settings(from_arg).roles.planner == "from-arg-file"


def test_an_empty_environment_variable_counts_as_unset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Empty (or blank) variables, NISSE_CONFIG included, fall through to the next source."""
    path = write_config(tmp_path / "c.toml", COMPLETE)
    expected = load_settings(path).pin().record()
    for blank in ("", "  "):
        for env in ENV_VARS.values():
            monkeypatch.setenv(env, blank)
        assert load_settings(path).pin().record() == expected
    monkeypatch.setenv("NISSE_CONFIG", "")
    monkeypatch.setenv("NISSE_LLM_BASE_URL", "http://h")
    monkeypatch.setenv("NISSE_LLM_TOKEN", TOKEN)
    for role, model in COMPLETE["roles"].items():
        monkeypatch.setenv(f"NISSE_ROLE_{role.upper()}", model)
    assert load_settings().config_file is None


def test_none_inside_an_override_table_counts_as_not_given(tmp_path: Path) -> None:
    """llm={"timeout_s": None} leaves the file's value in place (handy for optional flags)."""
    path = write_config(tmp_path / "c.toml", complete(llm={"timeout_s": 42}))
    assert load_settings(path, llm={"timeout_s": None}, roles=None).llm.timeout_s == 42.0


def test_environment_strings_are_parsed_by_type(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Booleans, numbers and comma-separated prefixes are read from their env strings."""
    monkeypatch.setenv("NISSE_PROMPT_CACHE", "off")
    monkeypatch.setenv("NISSE_RATE_LIMIT_RETRIES", " 0 ")
    monkeypatch.setenv("NISSE_PASSTHROUGH_PREFIXES", "claude-,anthropic/, bedrock/anthropic.")
    llm = load_settings(write_config(tmp_path / "c.toml", COMPLETE)).llm
    assert llm.prompt_cache is False
    assert llm.rate_limit_retries == 0
    assert llm.passthrough_prefixes == ("claude-", "anthropic/", "bedrock/anthropic.")


def test_a_trailing_slash_on_the_base_url_is_dropped(tmp_path: Path) -> None:
    """Clients append paths to base_url, so it is stored without a trailing slash."""
    path = write_config(tmp_path / "c.toml", complete(llm={"base_url": "https://proxy.test/llm/"}))
    assert load_settings(path).llm.base_url == "https://proxy.test/llm"


def test_the_package_exports_the_config_names_lazily() -> None:
    """nisse_llm.load_settings is the config function, and importing nisse_llm skips config."""
    assert nisse_llm.load_settings is load_settings
    probe = (
        "import sys, nisse_llm; "
        "print('nisse_llm.config.settings' in sys.modules, 'pydantic_settings' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    assert result.stdout == "False False\n"
