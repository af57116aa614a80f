"""Guard rails for the mistakes operators and callers really make: each is refused with a
message naming the key, its variable and the fix, never accepted silently."""

from __future__ import annotations

from pathlib import Path

import pytest

from nisse_llm import (
    AnthropicMessagesRenderer,
    LLMError,
    OpenAIChatRenderer,
    UnknownRoleError,
    UserText,
)
from nisse_llm.config.settings import Pin, load_settings
from nisse_llm.errors import ConfigError
from tests.config.helpers import COMPLETE, TOKEN, complete, write_config


def _problems(path: Path | None = None, **overrides: object) -> tuple[str, ...]:
    with pytest.raises(ConfigError) as caught:
        load_settings(path, **overrides)
    return caught.value.problems


# --- a list variable written as JSON -------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('["claude-", "anthropic/"]', ("claude-", "anthropic/")),
        ('[ "sonnet-" ]', ("sonnet-",)),
        ("claude-, anthropic/", ("claude-", "anthropic/")),
    ],
)
def test_a_list_variable_reads_as_the_list_it_means(
    monkeypatch: pytest.MonkeyPatch, raw: str, expected: tuple[str, ...]
) -> None:
    """JSON or comma-separated, NISSE_PASSTHROUGH_PREFIXES is the list it says, and so the
    roles route as meant (a JSON string read as one prefix would misroute every Claude role)."""
    monkeypatch.setenv("NISSE_PASSTHROUGH_PREFIXES", raw)
    settings = load_settings(**COMPLETE)
    assert settings.llm.passthrough_prefixes == expected


@pytest.mark.parametrize("raw", ['["claude-", 3]', '["claude-"', "[{}]"])
def test_a_list_variable_that_is_broken_json_is_refused(
    monkeypatch: pytest.MonkeyPatch, raw: str
) -> None:
    """Bracketed but not a JSON array of strings: refused, naming the variable and the fix."""
    monkeypatch.setenv("NISSE_PASSTHROUGH_PREFIXES", raw)
    (problem,) = _problems(**COMPLETE)
    assert problem.startswith("llm.passthrough_prefixes (env NISSE_PASSTHROUGH_PREFIXES): ")
    assert "write a JSON array of strings" in problem
    assert "or a comma-separated list" in problem
    assert problem.endswith("from environment variable NISSE_PASSTHROUGH_PREFIXES")


# --- a base URL holding a path the SDK appends ---------------------------------------


@pytest.mark.parametrize(
    ("url", "suffix", "fixed"),
    [
        ("http://127.0.0.1:4000/v1", "/v1", "http://127.0.0.1:4000"),
        ("http://127.0.0.1:4000/v1/", "/v1", "http://127.0.0.1:4000"),
        ("https://gw.example/litellm/v1", "/v1", "https://gw.example/litellm"),
        ("http://proxy:4000/chat/completions", "/chat/completions", "http://proxy:4000"),
        ("http://proxy:4000/v1/chat/completions", "/v1/chat/completions", "http://proxy:4000"),
        ("http://proxy:4000/v1/messages", "/v1/messages", "http://proxy:4000"),
    ],
)
def test_a_base_url_with_an_appended_path_is_refused_with_the_url_to_use(
    tmp_path: Path, url: str, suffix: str, fixed: str
) -> None:
    """A pasted endpoint would double the path (/v1/v1/messages): refused with the fix."""
    path = write_config(tmp_path / "c.toml", complete(llm={"base_url": url}))
    (problem,) = _problems(path)
    assert problem.startswith("llm.base_url (env NISSE_LLM_BASE_URL): ")
    assert f"ends with {suffix}, which the SDK appends itself" in problem
    assert f"use {fixed}," in problem
    assert problem.endswith(f"from file {path}")


@pytest.mark.parametrize(
    "url", ["https://gw.example/litellm", "http://127.0.0.1:4000/proxy/", "http://h:1/v10"]
)
def test_a_proxy_under_a_real_path_prefix_keeps_working(url: str) -> None:
    """A mount prefix is not an appended path: accepted (trailing slash dropped)."""
    settings = load_settings(llm={**COMPLETE["llm"], "base_url": url}, roles=COMPLETE["roles"])
    assert settings.llm.base_url == url.rstrip("/")


# --- quoted numbers, strings for arrays ----------------------------------------------


@pytest.mark.parametrize(
    ("key", "value", "wanted"),
    [
        ("max_output_tokens", "8192", "an integer"),
        ("timeout_s", "30.5", "a number"),
        ("prompt_cache", "true", "a boolean (true or false)"),
    ],
)
def test_a_quoted_value_says_to_drop_the_quotes(
    tmp_path: Path, key: str, value: str, wanted: str
) -> None:
    """``max_output_tokens = "8192"``: it is a string; drop the quotes."""
    path = write_config(tmp_path / "c.toml", complete(llm={key: value}))
    (problem,) = _problems(path)
    assert problem.startswith(f"llm.{key} (env NISSE_")
    assert f"is a string, not {wanted}; drop the quotes, got {value!r}" in problem


def test_a_quoted_word_is_not_told_to_drop_its_quotes(tmp_path: Path) -> None:
    """A string that is no number once unquoted keeps the plain type message."""
    path = write_config(tmp_path / "c.toml", complete(llm={"max_output_tokens": "lots"}))
    (problem,) = _problems(path)
    assert "drop the quotes" not in problem
    assert "valid integer" in problem


def test_a_string_where_an_array_belongs_says_array(tmp_path: Path) -> None:
    """``passthrough_prefixes = "claude-"`` is told "array", never pydantic's "tuple"."""
    path = write_config(tmp_path / "c.toml", complete(llm={"passthrough_prefixes": "claude-"}))
    (problem,) = _problems(path)
    assert "must be an array of strings" in problem
    assert "tuple" not in problem


# --- a pin record missing its fingerprint --------------------------------------------


def test_a_record_without_a_fingerprint_says_it_is_missing() -> None:
    """Not "does not match": the key is absent, and the message says so."""
    pin = load_settings(**COMPLETE).pin()
    record = pin.record()
    del record["fingerprint"]
    with pytest.raises(ConfigError, match="pin record has no fingerprint") as caught:
        Pin.from_record(record, TOKEN)
    assert "does not match" not in str(caught.value)


# --- a caller's mistakes are not failed model calls ----------------------------------


def test_an_unknown_role_lists_the_roles() -> None:
    """A ValueError subclass with the valid choices, never an LLMError."""
    pin = load_settings(**COMPLETE).pin()
    with pytest.raises(UnknownRoleError) as caught:
        pin.model_for("reviewer")
    assert isinstance(caught.value, ValueError)
    assert not isinstance(caught.value, LLMError)
    assert "executor, planner, delegate, consultant" in str(caught.value)


@pytest.mark.parametrize("renderer", [OpenAIChatRenderer(), AnthropicMessagesRenderer()])
@pytest.mark.parametrize("method", ["render_bytes", "render_request"])
@pytest.mark.parametrize(
    ("log", "said"),
    [
        ("fix the test", r"not str \(wrap a prompt as \[UserText\(text=\.\.\.\)\]\)"),
        (b"bytes", "not bytes"),
        ({"role": "user"}, "not dict"),
        (None, "not NoneType"),
        (["fix the test"], "not str: 'fix the test'"),
        ([UserText(text="hi"), {"role": "user"}], "not dict"),
    ],
)
def test_a_log_that_is_not_a_log_is_a_type_error(
    renderer: OpenAIChatRenderer | AnthropicMessagesRenderer, method: str, log: object, said: str
) -> None:
    """A prompt string, a dict or a bare item where a list of events belongs: TypeError
    naming what arrived and what belongs there (not an AssertionError or AttributeError)."""
    with pytest.raises(TypeError, match=said) as caught:
        getattr(renderer, method)(log, None, "claude-x")
    assert "canonical events" in str(caught.value)
    assert not isinstance(caught.value, LLMError)
