"""Numbers passed to a client's or router's constructor get the TOML keys' ranges: a
`ConfigError` naming the keyword, the value, the range and a value to pass instead."""

from __future__ import annotations

import math
from typing import Any

import httpx
import pytest

from nisse_llm import (
    AnthropicPassthroughClient,
    AsyncAnthropicPassthroughClient,
    AsyncLiteLLMClient,
    AsyncRoleRouter,
    ConfigError,
    LiteLLMClient,
    RoleRouter,
    UserText,
    defaults,
)
from nisse_llm.testing import Script, ScriptedRouter, ScriptedTransport, reply
from tests.task.helpers import make_pin

CLIENTS = [
    LiteLLMClient,
    AnthropicPassthroughClient,
    AsyncLiteLLMClient,
    AsyncAnthropicPassthroughClient,
]


@pytest.mark.parametrize("client", CLIENTS, ids=lambda c: c.__name__)
@pytest.mark.parametrize(
    ("keyword", "value", "problem"),
    [
        ("timeout_s", -1, "must be above 0 and at most 3600 seconds"),
        ("timeout_s", math.nan, "must be a finite number of seconds"),
        ("connect_timeout_s", math.inf, "must be a finite number of seconds"),
        ("stream_idle_timeout_s", 0, "must be above 0 and at most 3600 seconds"),
        ("call_deadline_s", 7200, "must be above 0 and at most 3600 seconds"),
        ("stream_deadline_s", "60", "must be a number, got str"),
        ("rate_limit_wait_s", -0.5, "must be 0 to 3600 seconds"),
        ("rate_limit_retries", 11, "must be 0 to 10 retries"),
        ("rate_limit_retries", 1.5, "must be a whole number"),
        ("max_tokens", 0, "must be 1 to 1000000 tokens"),
        ("max_tokens", True, "must be a whole number, got bool"),
        ("max_response_bytes", 10, "must be 1024 to 4294967296 bytes"),
    ],
)
def test_an_out_of_range_keyword_is_a_config_error(
    client: Any, keyword: str, value: object, problem: str
) -> None:
    """Each client refuses the value before building anything, naming keyword and range."""
    with pytest.raises(ConfigError) as caught:
        client("http://127.0.0.1:4000", "sk-test", **{keyword: value})
    (line,) = caught.value.problems
    assert line.startswith(f"{client.__name__}({keyword}={value!r}): {problem} (the range of ")
    assert str(caught.value) == f"invalid value for {client.__name__}:\n  - {line}"


def test_the_whole_message_names_the_toml_key_and_a_fix() -> None:
    """The message reads as the TOML key's would, with a value to pass instead."""
    with pytest.raises(ConfigError) as caught:
        LiteLLMClient("http://127.0.0.1:4000", "sk-test", timeout_s=-1)
    assert caught.value.problems == (
        "LiteLLMClient(timeout_s=-1): must be above 0 and at most 3600 seconds (the range of "
        "llm.timeout_s in the TOML); pass, for example, timeout_s=120",
    )


def test_every_bad_value_is_listed_at_once_and_a_wait_past_its_cap_is_refused() -> None:
    """Several bad keywords are all listed; a wait above its cap is refused as in TOML."""
    with pytest.raises(ConfigError) as caught:
        LiteLLMClient("http://h", "sk-test", timeout_s=math.nan, max_tokens=-5)
    assert len(caught.value.problems) == 2
    with pytest.raises(ConfigError) as caught:
        LiteLLMClient("http://h", "sk-test", rate_limit_wait_s=90, rate_limit_wait_cap_s=60)
    assert caught.value.problems == (
        "LiteLLMClient(rate_limit_wait_s=90, rate_limit_wait_cap_s=60): the wait exceeds the "
        "cap; the wait must lie within the cap",
    )


@pytest.mark.parametrize("router", [RoleRouter, AsyncRoleRouter], ids=lambda r: r.__name__)
def test_routers_check_their_client_options(router: Any) -> None:
    """A router's ``from_pin`` names itself and the keyword."""
    with pytest.raises(ConfigError) as caught:
        router.from_pin(make_pin(), timeout_s=-1)
    assert caught.value.problems[0].startswith(
        f"{router.__name__}.from_pin(timeout_s=-1): must be above 0"
    )


def test_the_scripted_router_checks_them_too() -> None:
    """The scripted router goes through the same check."""
    with pytest.raises(ConfigError, match=r"ScriptedRouter.from_pin\(call_deadline_s=nan\)"):
        ScriptedRouter(call_deadline_s=math.nan)


class _Timeouts(httpx.BaseTransport):
    """Notes each request's timeouts, then hands it to the scripted upstream."""

    def __init__(self, inner: httpx.BaseTransport) -> None:
        self.inner = inner
        self.seen: list[dict[str, float | None]] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.seen.append(dict(request.extensions["timeout"]))
        return self.inner.handle_request(request)


def test_defaults_and_none_pass() -> None:
    """None keeps a keyword's default, and in-range values are sent unchanged: the read
    timeout is the chat default, the connect timeout and ``max_tokens`` the values given."""
    script = Script().chat(reply("ok"))
    timeouts = _Timeouts(ScriptedTransport(script))
    with LiteLLMClient(
        "http://h",
        "sk-test",
        timeout_s=None,
        connect_timeout_s=5,
        max_tokens=1,
        transport=timeouts,
    ) as client:
        client.complete([UserText(text="hi")], None, "gpt-x")
    assert timeouts.seen[0]["read"] == defaults.CHAT_TIMEOUT_S
    assert timeouts.seen[0]["connect"] == 5
    assert script.requests[0].json["max_tokens"] == 1
