"""Every failure the real proxy produces, classified by nisse_llm on both routes."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest

from nisse_llm.errors import (
    AuthenticationFailed,
    BudgetExhausted,
    LLMError,
    TruncatedResponse,
    UpstreamUnavailable,
)
from nisse_llm.events.canonical import AssistantText, UserText
from nisse_llm.testing import (
    Failure,
    Script,
    anthropic_failure,
    openai_failure,
    reply,
    slow,
    truncated,
)
from nisse_llm.testing.proxy import LiteLLMProxy
from tests.integration.helpers import (
    COMBO_IDS,
    COMBOS,
    REQUEST_TIMEOUT_S,
    ClientRoute,
    Combo,
    client_for,
)

pytestmark = pytest.mark.proxy

HELLO = [UserText(text="Say hello.")]
# The client's default wait before its one retry of a 429 (the proxy sends no retry-after).
DEFAULT_RATE_LIMIT_WAIT_S = 20.0


def _upstream_error(combo: Combo, status: int = 500) -> Failure:
    if combo.upstream == "anthropic_messages":
        return anthropic_failure(status, "api_error", "Internal server error")
    return openai_failure(
        status, "The server had an error processing your request.", type="server_error"
    )


@pytest.mark.parametrize("combo", COMBOS, ids=COMBO_IDS)
def test_truncation_through_the_proxy_raises_truncated_response(
    proxy: LiteLLMProxy, script: Script, combo: Combo
) -> None:
    """An answer cut off at the ceiling survives the proxy and becomes `TruncatedResponse`."""
    script.add(combo.upstream, truncated("The plan: first, refac"))
    with client_for(proxy, combo.route) as h, pytest.raises(TruncatedResponse):
        h.client.complete(HELLO, None, combo.model())
    assert len(script.requests) == 1


@pytest.mark.parametrize("combo", COMBOS, ids=COMBO_IDS)
def test_upstream_500_is_upstream_unavailable(
    proxy: LiteLLMProxy, script: Script, combo: Combo
) -> None:
    """An upstream 500 comes through the proxy as 500 and is `UpstreamUnavailable`, not retried."""
    script.add(combo.upstream, _upstream_error(combo))
    with client_for(proxy, combo.route) as h, pytest.raises(UpstreamUnavailable) as caught:
        h.client.complete(HELLO, None, combo.model())
    assert type(caught.value) is UpstreamUnavailable
    assert caught.value.status == 500
    assert h.sleeps == []
    assert len(script.requests) == 1


def test_anthropic_overloaded_529_is_upstream_unavailable(
    proxy: LiteLLMProxy, script: Script
) -> None:
    """Anthropic's 529 overloaded becomes the proxy's 500 api_error: `UpstreamUnavailable`."""
    script.messages(anthropic_failure(529, "overloaded_error", "Overloaded"))
    with client_for(proxy, "messages") as h, pytest.raises(UpstreamUnavailable) as caught:
        h.client.complete(HELLO, None, "claude-scripted")
    assert caught.value.status == 500
    assert "overloaded" in str(caught.value).lower()


@pytest.mark.parametrize("combo", COMBOS, ids=COMBO_IDS)
def test_upstream_down_is_upstream_unavailable(
    proxy: LiteLLMProxy, script: Script, combo: Combo
) -> None:
    """A deployment whose upstream refuses connections gives 500 from the proxy: `UpstreamUnavailable`."""
    with client_for(proxy, combo.route) as h, pytest.raises(UpstreamUnavailable) as caught:
        h.client.complete(HELLO, None, combo.model("down"))
    assert type(caught.value) is UpstreamUnavailable
    assert caught.value.status == 500
    assert h.sleeps == []
    assert script.requests == []


@pytest.mark.parametrize("combo", COMBOS, ids=COMBO_IDS)
def test_upstream_slower_than_request_timeout_is_upstream_unavailable(
    proxy: LiteLLMProxy, script: Script, combo: Combo
) -> None:
    """An upstream slower than the proxy's request_timeout gets the proxy's 408: `UpstreamUnavailable`."""
    script.add(combo.upstream, slow(reply("too late"), REQUEST_TIMEOUT_S + 3))
    started = time.monotonic()
    with client_for(proxy, combo.route) as h, pytest.raises(UpstreamUnavailable) as caught:
        h.client.complete(HELLO, None, combo.model())
    assert caught.value.status == 408
    assert REQUEST_TIMEOUT_S <= time.monotonic() - started < REQUEST_TIMEOUT_S + 3
    assert h.sleeps == []


def _start_of_a_fresh_minute_if_needed(needed_s: float = 4.0) -> None:
    # LiteLLM counts rpm per UTC wall-clock minute ("%H-%M"): all three requests of the
    # test must land in one minute, so near a minute's end wait for the next one.
    now = datetime.now(UTC)
    left = 60 - now.second - now.microsecond / 1e6
    if left < needed_s:
        time.sleep(left + 0.05)


RPM_COMBOS = [Combo("chat", "gpt"), Combo("messages", "claude")]


@pytest.mark.parametrize("combo", RPM_COMBOS, ids=[c.id for c in RPM_COMBOS])
def test_rate_limit_is_retried_once_then_upstream_unavailable(
    proxy: LiteLLMProxy, script: Script, combo: Combo
) -> None:
    """The proxy's own rpm limit (rpm: 1) gets a 429; the client waits once, retries, then raises `UpstreamUnavailable`."""
    script.add(combo.upstream, reply("first of the minute"))
    model = combo.model("rpm1")
    _start_of_a_fresh_minute_if_needed()
    with client_for(proxy, combo.route) as h:
        assert h.client.complete(HELLO, None, model) == [
            AssistantText(text="first of the minute", model=model)
        ]
        with pytest.raises(UpstreamUnavailable) as caught:
            h.client.complete(HELLO, None, model)
        sent = len(h.sent.bodies)
    assert type(caught.value) is UpstreamUnavailable
    assert caught.value.status == 429
    assert "rate limit" in str(caught.value).lower()
    assert h.sleeps == [DEFAULT_RATE_LIMIT_WAIT_S]
    assert sent == 3  # the first call, the limited one, its single retry
    assert len(script.requests) == 1  # the proxy refused both before reaching the upstream


BUDGET_COMBOS = [Combo("chat", "gpt"), Combo("messages", "claude")]


@pytest.mark.parametrize("combo", BUDGET_COMBOS, ids=[c.id for c in BUDGET_COMBOS])
def test_budget_refusal_is_budget_exhausted_and_never_retried(
    proxy: LiteLLMProxy, script: Script, combo: Combo
) -> None:
    """Once a deployment's max_budget is crossed the proxy's 429 is `BudgetExhausted`, with no wait and no retry."""
    script.add(combo.upstream, reply("this call spends the whole budget"))
    model = combo.model("budget")
    with client_for(proxy, combo.route) as h:
        h.client.complete(HELLO, None, model)
        # The proxy books spend in a success callback just after answering.
        time.sleep(0.3)
        started = time.monotonic()
        with pytest.raises(BudgetExhausted) as caught:
            h.client.complete(HELLO, None, model)
        elapsed = time.monotonic() - started
        sent = len(h.sent.bodies)
    assert caught.value.status == 429
    assert "budget" in str(caught.value).lower()
    assert h.sleeps == []
    assert sent == 2
    assert len(script.requests) == 1
    assert elapsed < DEFAULT_RATE_LIMIT_WAIT_S / 4  # answered at once, not after a retry wait


@pytest.mark.parametrize("route", ["chat", "messages"])
def test_wrong_token_is_authentication_failed_401_without_the_token(
    proxy: LiteLLMProxy, script: Script, route: ClientRoute
) -> None:
    """A token the proxy rejects is `AuthenticationFailed` (401, an `LLMError`), and the
    token never appears in it."""
    wrong = "sk-wrong-" + "7f3a9c" * 4
    with client_for(proxy, route, token=wrong) as h, pytest.raises(AuthenticationFailed) as caught:
        h.client.complete(HELLO, None, "gpt-scripted")
    error = caught.value
    assert isinstance(error, LLMError)
    assert not isinstance(error, UpstreamUnavailable)
    assert error.status == 401
    path = "/chat/completions" if route == "chat" else "/v1/messages"
    assert str(error).startswith(f"POST {proxy.base_url}{path}: the proxy refused the token (401)")
    assert str(error).endswith(
        "; check NISSE_LLM_TOKEN or llm.token (this one came from the token passed to the client)"
    )
    assert wrong not in str(error)
    assert wrong not in (error.server_message or "")
    assert wrong not in repr(error.args)
    assert h.sleeps == []
    assert script.requests == []
