"""Every default lives in nisse_llm.defaults: the settings' fields, the clients' keywords
and the routes' timeouts agree with it, so none can drift from the others."""

from __future__ import annotations

import inspect

import pytest

import nisse_llm
import nisse_llm.task.compaction
from nisse_llm import defaults
from nisse_llm.config.settings import LLMSettings
from nisse_llm.transport._classify import RateLimitPolicy

#: Settings field -> the default it must have.
SETTINGS = {
    "max_output_tokens": defaults.MAX_OUTPUT_TOKENS,
    "timeout_s": defaults.CHAT_TIMEOUT_S,
    "passthrough_timeout_s": defaults.PASSTHROUGH_TIMEOUT_S,
    "connect_timeout_s": defaults.CONNECT_TIMEOUT_S,
    "stream_idle_timeout_s": defaults.STREAM_IDLE_TIMEOUT_S,
    "rate_limit_retries": defaults.RATE_LIMIT_RETRIES,
    "rate_limit_wait_s": defaults.RATE_LIMIT_WAIT_S,
    "rate_limit_wait_cap_s": defaults.RATE_LIMIT_WAIT_CAP_S,
    "passthrough_prefixes": defaults.PASSTHROUGH_PREFIXES,
    "prompt_cache": defaults.PROMPT_CACHE,
    "prompt_cache_ttl": defaults.PROMPT_CACHE_TTL,
    "preflight": defaults.PREFLIGHT,
    "max_response_bytes": defaults.MAX_RESPONSE_BYTES,
    "call_deadline_s": defaults.CALL_DEADLINE_S,
    "stream_deadline_s": defaults.STREAM_DEADLINE_S,
}


def test_every_settings_default_comes_from_the_defaults_module() -> None:
    fields = LLMSettings.model_fields
    with_default = {name for name, field in fields.items() if not field.is_required()}
    assert with_default == set(SETTINGS)
    for name, value in SETTINGS.items():
        assert fields[name].default == value, name


@pytest.mark.parametrize(
    ("keyword", "value"),
    [
        ("retries", defaults.RATE_LIMIT_RETRIES),
        ("wait_s", defaults.RATE_LIMIT_WAIT_S),
        ("wait_cap_s", defaults.RATE_LIMIT_WAIT_CAP_S),
    ],
)
def test_the_rate_limit_policy_defaults_agree(keyword: str, value: object) -> None:
    assert inspect.signature(RateLimitPolicy).parameters[keyword].default == value


#: Client keyword -> the default it must have (the settings' field of the same name).
CLIENT_KEYWORDS = {
    "rate_limit_retries": defaults.RATE_LIMIT_RETRIES,
    "rate_limit_wait_s": defaults.RATE_LIMIT_WAIT_S,
    "rate_limit_wait_cap_s": defaults.RATE_LIMIT_WAIT_CAP_S,
    "stream_idle_timeout_s": defaults.STREAM_IDLE_TIMEOUT_S,
    "prompt_cache": defaults.PROMPT_CACHE,
    "preflight": defaults.PREFLIGHT,
    "max_response_bytes": defaults.MAX_RESPONSE_BYTES,
    "call_deadline_s": defaults.CALL_DEADLINE_S,
    "stream_deadline_s": defaults.STREAM_DEADLINE_S,
}


@pytest.mark.parametrize(
    "client",
    [
        nisse_llm.LiteLLMClient,
        nisse_llm.AsyncLiteLLMClient,
        nisse_llm.AnthropicPassthroughClient,
        nisse_llm.AsyncAnthropicPassthroughClient,
        nisse_llm.OpenAIResponsesClient,
        nisse_llm.AsyncOpenAIResponsesClient,
    ],
)
def test_every_client_keyword_default_comes_from_the_defaults_module(client: type) -> None:
    parameters = inspect.signature(client).parameters
    for name, value in CLIENT_KEYWORDS.items():
        assert parameters[name].default == value, name
    # A client's read timeout, when none is given, is its route's: chat's, or the longer
    # one of the routes delegations take.
    expected = (
        defaults.CHAT_TIMEOUT_S
        if client.ROUTE.name == "openai_chat"
        else defaults.PASSTHROUGH_TIMEOUT_S
    )
    assert client.ROUTE.default_timeout_s == expected


@pytest.mark.parametrize(
    "function",
    [
        nisse_llm.compact,
        nisse_llm.summarize,
        nisse_llm.asummarize,
        nisse_llm.CompactionPolicy,
        nisse_llm.task.compaction.plan_compaction,
        nisse_llm.task.compaction.aplan_compaction,
    ],
)
def test_compaction_keeps_its_turns_and_summary_room_by_the_defaults_module(
    function: object,
) -> None:
    """Every compaction entry keeps the same last turns and summary room, from one place."""
    parameters = inspect.signature(function).parameters  # type: ignore[arg-type]
    assert parameters["keep_last_turns"].default == defaults.KEEP_LAST_TURNS
    if "summary_tokens" in parameters and function in (
        nisse_llm.summarize,
        nisse_llm.asummarize,
        nisse_llm.CompactionPolicy,
    ):
        assert parameters["summary_tokens"].default == defaults.SUMMARY_TOKENS
