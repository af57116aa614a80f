"""The pure classification rules: budget wording, server waits, the cap, redaction."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from nisse_llm.errors import (
    AuthenticationFailed,
    BudgetExhausted,
    LLMError,
    ModelNotServed,
    UpstreamUnavailable,
)
from nisse_llm.transport._classify import (
    RateLimitPolicy,
    Retry,
    classify_failure,
    is_budget_refusal,
    redact,
    requested_wait_s,
)
from nisse_llm.wire.errors import read_error
from tests.transport.loopback import error_body, fixture_body

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
POLICY = RateLimitPolicy()


def _classify(
    status: int, body: bytes, *, headers: dict[str, str] | None = None, retries_done: int = 0
) -> Retry | LLMError:
    return classify_failure(
        status,
        headers or {},
        body,
        where="POST /chat/completions",
        token="sk-secret",
        policy=POLICY,
        retries_done=retries_done,
        now=NOW,
    )


@pytest.mark.parametrize(
    "message",
    [
        "No deployments available - crossed budget: Exceeded budget for deployment gpt-4o",
        "litellm.RateLimitError: No deployments available - crossed budget: Exceeded budget",
        "Budget has been exceeded! Current cost: 2.61, Max budget: 2.5",
        "litellm.BudgetExceededError: Budget has been exceeded! Current cost: 3, Max budget: 2",
        "Authentication Error, ExceededBudget: User=u1 over budget. Spend=3.2, Budget=3.0",
        "ExceededBudget: Key over 1d budget. Spend=5.01, Budget=5.0",
        "LiteLLM Virtual Key: 88dc28d0, key_alias: None, exceeded budget for model=gpt-4o",
        "LiteLLM Team Member: user=u1, team=t1, exceeded budget for model=gpt-4o",
        "Session budget exceeded for session s-42. Current spend: $1.0100",
    ],
)
def test_each_litellm_budget_wording_is_a_budget_refusal(message: str) -> None:
    """Every budget template LiteLLM sends is recognised from the parsed message."""
    body = error_body(message)
    assert is_budget_refusal(read_error(body), body)


@pytest.mark.parametrize(
    "message",
    [
        "Invalid value for 'messages[0].content': 'Budget has been exceeded! help' is too long",
        "prompt is too long: my ExceededBudget: tool failed",
        "LiteLLM Rate Limit Handler for rate limit type = key. Crossed TPM / RPM limit",
        "budget",
    ],
)
def test_budget_words_inside_another_error_are_not_a_budget_refusal(message: str) -> None:
    """A budget phrase quoted inside an unrelated message (a prompt echo) does not count."""
    body = error_body(message, type_="invalid_request_error")
    assert not is_budget_refusal(read_error(body), body)


def test_budget_type_alone_is_a_budget_refusal() -> None:
    """LiteLLM's newer ``error.type: budget_exceeded`` counts whatever the message says."""
    body = fixture_body("litellm_error_429_budget_exceeded.json")
    assert isinstance(_classify(429, body), BudgetExhausted)


def test_plain_text_budget_refusal_is_recognised() -> None:
    """A budget refusal in a body that is not JSON is judged by its text."""
    body = b"Budget has been exceeded! Current cost: 3, Max budget: 2"
    assert is_budget_refusal(read_error(body), body)


def test_budget_refusal_wins_over_retry_at_429() -> None:
    """A 429 budget refusal is raised at once, never turned into a retry."""
    verdict = _classify(
        429, error_body("Budget has been exceeded! Max budget: 1"), headers={"retry-after": "1"}
    )
    assert type(verdict) is BudgetExhausted
    assert verdict.status == 429


def test_retry_after_http_date_is_seconds_from_now() -> None:
    """``Retry-After`` as an HTTP date is the seconds between now and that date."""
    assert requested_wait_s({"retry-after": "Thu, 01 Jan 2026 12:00:45 GMT"}, now=NOW) == 45.0


def test_retry_after_in_the_past_is_no_wait() -> None:
    """A date already past asks for no wait at all."""
    assert requested_wait_s({"retry-after": "Thu, 01 Jan 2026 11:00:00 GMT"}, now=NOW) == 0.0


def test_retry_after_ms_takes_precedence() -> None:
    """``retry-after-ms`` is the more precise and wins over ``Retry-After``."""
    assert requested_wait_s({"retry-after-ms": "250", "retry-after": "9"}, now=NOW) == 0.25


def test_unparseable_retry_after_counts_as_absent() -> None:
    """A garbage header falls back to the configured wait."""
    assert requested_wait_s({"retry-after": "soon"}, now=NOW) is None
    assert _classify(429, b"{}", headers={"retry-after": "soon"}) == Retry(20.0)


def test_date_beyond_cap_raises_with_the_servers_wait() -> None:
    """A requested wait beyond the cap raises at once and carries the wait for resume logic."""
    verdict = _classify(429, b"{}", headers={"retry-after": "Thu, 01 Jan 2026 13:00:00 GMT"})
    assert type(verdict) is UpstreamUnavailable
    assert verdict.retry_after_s == 3600.0
    assert "beyond the 60 s cap" in verdict.message


def test_exhausted_retries_carry_the_servers_wait() -> None:
    """The last 429 is unavailable, still carrying the wait the server asked for."""
    verdict = _classify(429, b"{}", headers={"retry-after": "5"}, retries_done=1)
    assert type(verdict) is UpstreamUnavailable
    assert verdict.retry_after_s == 5.0


def test_other_statuses_split_by_fault() -> None:
    """5xx and 408 are the upstream's fault; other non-2xx statuses the request's."""
    for status in (500, 502, 503, 504, 529, 408):
        assert type(_classify(status, b"")) is UpstreamUnavailable
    for status in (301, 400, 404, 413, 422):
        assert type(_classify(status, b"")) is LLMError


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (
            401,
            error_body("Authentication Error: invalid proxy token. Received API Key = sk-secret"),
        ),
        (401, error_body("Authentication Error - Expired Key. Key Expiry time 2026-12-03")),
        (403, error_body("The requested model 'gpt-b' is not available for this API key")),
        (403, b"Forbidden"),
        (400, error_body("No connected db.", type_="no_db_connection", code="400")),
        (400, b"No connected db."),
    ],
)
def test_a_refused_token_is_authentication_failed(status: int, body: bytes) -> None:
    """401, 403 and LiteLLM's no-database 400 are `AuthenticationFailed` (an `LLMError`),
    never a retry, naming the variable to fix, the token redacted."""
    verdict = _classify(status, body, headers={"retry-after": "1"})
    assert type(verdict) is AuthenticationFailed
    assert isinstance(verdict, LLMError)
    assert verdict.status == status
    assert verdict.message.startswith(
        f"POST /chat/completions: the proxy refused the token ({status}): "
    )
    assert verdict.message.endswith("; check NISSE_LLM_TOKEN or llm.token")
    assert "sk-secret" not in verdict.message
    assert "sk-secret" not in (verdict.server_message or "")


def test_a_budget_refusal_worded_as_an_auth_error_stays_a_budget_refusal() -> None:
    """LiteLLM's "Authentication Error, ExceededBudget: ..." at 401 is the budget, not the token."""
    verdict = _classify(401, error_body("Authentication Error, ExceededBudget: Key over budget."))
    assert type(verdict) is BudgetExhausted


def test_error_fields_come_from_the_parsed_body() -> None:
    """Status, error type and server message ride on the exception, the message redacted."""
    verdict = _classify(401, error_body("bad key sk-secret", type_="auth_error", code="401"))
    assert isinstance(verdict, LLMError)
    assert (verdict.status, verdict.error_type, verdict.server_message) == (
        401,
        "auth_error",
        "bad key [redacted]",
    )


def test_body_in_message_is_truncated() -> None:
    """A huge error body is cut to 500 characters in the exception."""
    verdict = _classify(400, b"x" * 10_000)
    assert isinstance(verdict, LLMError)
    assert verdict.message.endswith("x" * 500)
    assert "x" * 501 not in verdict.message


def test_redact_replaces_every_occurrence_and_ignores_an_empty_token() -> None:
    """Redaction removes each copy of the token, and an empty token changes nothing."""
    assert redact("a tok b tok", "tok") == "a [redacted] b [redacted]"
    assert redact("abc", "") == "abc"


def test_negative_policy_is_rejected() -> None:
    """A negative retry count or wait is a programming error, refused at construction."""
    with pytest.raises(ValueError, match="must not be negative"):
        RateLimitPolicy(retries=-1)


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e999"])
def test_non_finite_waits_count_as_absent(value: str) -> None:
    """A wait of nan or infinity is ignored (time.sleep would reject it), in either header."""
    assert requested_wait_s({"retry-after": value}, now=NOW) is None
    assert requested_wait_s({"retry-after-ms": value, "retry-after": "3"}, now=NOW) == 3.0


@pytest.mark.parametrize(
    ("status", "body", "model"),
    [
        (
            400,
            error_body(
                "/chat/completions: Invalid model name passed in model=gpt-5.4-nano. Call "
                "`/v1/models` to view available models for your key.",
                type_="invalid_request_error",
            ),
            "gpt-5.4-nano",
        ),
        (
            400,
            b'{"type":"error","error":{"type":"invalid_request_error","message":'
            b'"anthropic_messages: Invalid model name passed in model=claude-nowhere. Call '
            b'`/v1/models` to view available models for your key."}}',
            "claude-nowhere",
        ),
        (400, b"Invalid model name passed in model=my.alias", "my.alias"),
    ],
)
def test_an_unserved_model_is_model_not_served(status: int, body: bytes, model: str) -> None:
    """The proxy's "Invalid model name passed in model=X" is `ModelNotServed` naming the model
    and the role, with the fix in the message."""
    verdict = classify_failure(
        status,
        {},
        body,
        where="POST /chat/completions",
        token="sk-secret",
        policy=POLICY,
        retries_done=0,
        now=NOW,
        model=model,
        role="planner",
    )
    assert isinstance(verdict, ModelNotServed)
    assert (verdict.model, verdict.role, verdict.status) == (model, "planner", status)
    assert str(verdict) == (
        f"POST /chat/completions: the proxy does not serve {model!r} for role 'planner' (400): "
        f"set the role 'planner' to a model it serves, or add {model!r} to the proxy's model "
        "list (GET /v1/models lists what it serves)"
    )


def test_an_unserved_model_without_a_role_says_name_a_served_model() -> None:
    """A direct client call (no router role) takes the model from the proxy's words."""
    body = error_body("Invalid model name passed in model=gpt-x. Call `/v1/models`.")
    verdict = _classify(400, body)
    assert isinstance(verdict, ModelNotServed)
    assert (verdict.model, verdict.role) == ("gpt-x", None)
    assert "the proxy does not serve 'gpt-x' (400): name a model it serves" in str(verdict)


def test_quoted_invalid_model_wording_inside_another_error_is_not_matched() -> None:
    """The wording counts only at the message's start, never quoted inside another error."""
    body = error_body("Bad request: the prompt said 'Invalid model name passed in model=x'")
    verdict = _classify(400, body)
    assert type(verdict) is LLMError
