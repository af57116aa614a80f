"""Context-window refusals: every provider's wording becomes `ContextWindowExceeded` with its
counts, on both routes, sync and async, complete() and stream(); near misses stay `LLMError`."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from nisse_llm.config.routing import Route
from nisse_llm.errors import ContextWindowExceeded, LLMError
from nisse_llm.transport._classify import RateLimitPolicy, classify_failure
from nisse_llm.wire._overflow import read_overflow
from tests.transport.harness import (
    EVENTS,
    MODEL,
    MODES,
    ROUTES,
    Mode,
    assert_no_token,
    close,
    complete,
    make_client,
)
from tests.transport.loopback import LoopbackServer, Reply, SleepLog, error_body
from tests.transport.overflow_bodies import NEAR_MISSES, OVERFLOWS
from tests.transport.stream_harness import read_stream

CALL_ID = "3f2c9a4e-1b7d-4e0a-9c55-8d2e6f1a7b30"


def _classify(status: int, body: bytes) -> object:
    return classify_failure(
        status,
        {},
        body,
        where="POST /v1/messages",
        token="sk-secret",
        policy=RateLimitPolicy(),
        retries_done=0,
        now=datetime(2026, 1, 1, tzinfo=UTC),
    )


@pytest.mark.parametrize("name", list(OVERFLOWS))
def test_each_providers_overflow_is_classified_with_its_counts(name: str) -> None:
    """Each recorded refusal classifies as ContextWindowExceeded carrying the counts it states."""
    row = OVERFLOWS[name]
    verdict = _classify(row.status, row.body)
    assert type(verdict) is ContextWindowExceeded
    assert (verdict.limit_tokens, verdict.requested_tokens) == (row.limit, row.requested)
    assert verdict.status == row.status
    assert "context window" in verdict.message


@pytest.mark.parametrize("name", list(NEAR_MISSES))
def test_a_400_mentioning_context_in_another_sense_stays_llm_error(name: str) -> None:
    """An output ceiling above the model's, a long ``user`` field, or "context" meaning
    something else is a plain bad request."""
    verdict = _classify(400, NEAR_MISSES[name].body)
    assert type(verdict) is LLMError


def test_a_rate_limit_naming_tokens_is_still_retried() -> None:
    """A 429 is never an overflow, whatever it says about tokens."""
    body = error_body("Request too large: maximum context length is 8192 tokens", code="429")
    assert not isinstance(_classify(429, body), LLMError)


def test_counts_with_thousands_separators_are_read() -> None:
    """A count written as 1,047,576 is read as the number."""
    found = read_overflow(
        "prompt is too long: 1,100,000 tokens > 1,047,576 maximum", error_type=None, code=None
    )
    assert found is not None
    assert (found.limit_tokens, found.requested_tokens) == (1_047_576, 1_100_000)


def test_the_code_alone_marks_an_overflow_without_counts() -> None:
    """OpenAI's code ``context_length_exceeded`` is enough, the counts then unknown."""
    found = read_overflow(
        "Your input exceeds the context window of this model.",
        error_type="invalid_request_error",
        code="context_length_exceeded",
    )
    assert found is not None
    assert (found.limit_tokens, found.requested_tokens) == (None, None)


def test_context_window_exceeded_is_an_llm_error_and_never_retried() -> None:
    """The class sits under LLMError (fail the turn) and outside UpstreamUnavailable (resume)."""
    from nisse_llm import ContextWindowExceeded as Exported
    from nisse_llm.errors import UpstreamUnavailable

    assert Exported is ContextWindowExceeded
    assert issubclass(ContextWindowExceeded, LLMError)
    assert not issubclass(ContextWindowExceeded, UpstreamUnavailable)


KINDS = ("complete", "stream")


async def _call(client: object, kind: str) -> None:
    if kind == "stream":
        await read_stream(client)
    else:
        await complete(client, EVENTS, None, MODEL[client.route])  # type: ignore[attr-defined]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("name", list(OVERFLOWS))
async def test_overflow_table(
    name: str, route: Route, mode: Mode, kind: str, server: LoopbackServer
) -> None:
    """Each refusal, both routes, sync and async, complete() and stream() (before the first
    byte): ContextWindowExceeded with the stated counts, the proxy's call id, one request and
    no retry."""
    row = OVERFLOWS[name]
    server.plan(Reply(row.status, row.body, headers=(("x-litellm-call-id", CALL_ID),)))
    sleep = SleepLog()
    client = make_client(route, mode, server.base_url, sleep=sleep)
    try:
        with pytest.raises(LLMError) as caught:
            await _call(client, kind)
    finally:
        await close(client)
    exc = caught.value
    assert type(exc) is ContextWindowExceeded
    assert (exc.limit_tokens, exc.requested_tokens) == (row.limit, row.requested)
    assert (exc.status, exc.call_id) == (row.status, CALL_ID)
    assert_no_token(exc)
    assert len(server.requests) == 1
    assert sleep.waits == []


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("name", list(NEAR_MISSES))
async def test_near_misses_stay_llm_error_on_every_path(
    name: str, route: Route, mode: Mode, server: LoopbackServer
) -> None:
    """The near misses stay a plain LLMError through the clients as well."""
    server.plan(Reply(400, NEAR_MISSES[name].body))
    client = make_client(route, mode, server.base_url, sleep=SleepLog())
    try:
        with pytest.raises(LLMError) as caught:
            await complete(client, EVENTS, None, MODEL[route])
    finally:
        await close(client)
    assert type(caught.value) is LLMError
    assert caught.value.call_id is None  # the server sent no call id header
