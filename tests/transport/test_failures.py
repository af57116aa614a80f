"""Every failure mode against a real loopback server: both routes, sync and async, one table."""

from __future__ import annotations

import json
import socket
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from nisse_llm.config.routing import Route
from nisse_llm.errors import (
    AuthenticationFailed,
    BudgetExhausted,
    ContextWindowExceeded,
    LLMError,
    RenderError,
    TruncatedResponse,
    UpstreamUnavailable,
)
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
from tests.transport.loopback import (
    TOKEN_MARK,
    LoopbackServer,
    PerRoute,
    Plan,
    Reply,
    Reset,
    SleepLog,
    closed_port_url,
    error_body,
    fixture_body,
)
from tests.transport.overflow_bodies import NEAR_MISSES, OVERFLOWS

HTML_502 = (
    f"<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad Gateway"
    f"</h1></center><hr><center>nginx</center><!-- key {TOKEN_MARK} --></body></html>"
).encode()


def _per_route(chat: str, messages: str, *, echo_token: bool = False) -> PerRoute:
    return PerRoute(
        fixture_body(chat, echo_token=echo_token), fixture_body(messages, echo_token=echo_token)
    )


def _recorded_responses(*, truncated: bool = False) -> bytes:
    """A recorded Responses reply (tests/fixtures/responses), cut at the ceiling if asked."""
    path = Path(__file__).parent.parent / "fixtures" / "responses" / "vercel_gpt_6_sol_text.json"
    body = json.loads(path.read_text())
    if truncated:
        body["status"] = "incomplete"
        body["incomplete_details"] = {"reason": "max_output_tokens"}
    return json.dumps(body).encode()


def _with_responses(bodies: PerRoute, responses: bytes) -> PerRoute:
    return PerRoute(bodies.chat, bodies.messages, responses)


def _raw(name: str) -> bytes:
    return fixture_body(name)


# LiteLLM's budget refusals, as its templates write them (PROXY.md, litellm 1.108 source).
BUDGET_WORDINGS = {
    "crossed-budget": error_body(
        "No deployments available - crossed budget: Exceeded budget for deployment "
        f"gpt-4o-mini key={TOKEN_MARK}"
    ),
    "budget-has-been-exceeded": error_body(
        f"Budget has been exceeded! Key={TOKEN_MARK} Current cost: 2.61, Max budget: 2.5"
    ),
    "exceeded-budget-user": error_body(
        "Authentication Error, ExceededBudget: User=agent-7 over budget. Spend=3.2, Budget=3.0"
        f" key={TOKEN_MARK}"
    ),
    "exceeded-budget-key-duration": error_body(
        f"ExceededBudget: Key over 1d budget. Key={TOKEN_MARK} Spend=5.01, Budget=5.0"
    ),
    "exceeded-budget-for-model": error_body(
        f"LiteLLM Virtual Key: {TOKEN_MARK}, key_alias: None, exceeded budget for model=gpt-4o-mini"
    ),
    "session-budget": error_body(
        "Session budget exceeded for session s-42. Current spend: $1.0100, "
        f"max_budget_per_session: $1.00. key={TOKEN_MARK}"
    ),
    "type-budget_exceeded": fixture_body("litellm_error_429_budget_exceeded.json", echo_token=True),
}

# A 400 whose body mentions a budget only because the prompt did: not a budget refusal.
PROMPT_ECHO_400 = error_body(
    "Invalid value for 'messages[0].content': 'My budget has been exceeded, "
    f"what now?' is too long. key={TOKEN_MARK}",
    type_="invalid_request_error",
)
# The budget wording outside the error's type and message (a provider's extra field).
BUDGET_IN_EXTRA_FIELD_400 = (
    b'{"error": {"message": "tool_use_failed", "type": "invalid_request_error", '
    b'"failed_generation": "Budget has been exceeded! crossed budget"}}'
)


@dataclass(frozen=True)
class Row:
    """One scripted misbehaviour and what the caller must see."""

    plans: tuple[Plan, ...]
    raised: type[LLMError] | None
    status: int | None
    requests: int = 1
    waits: tuple[float, ...] = ()
    retry_after_s: float | None = None
    echoes_token: bool = False
    refused: bool = False
    timeout_s: float | None = None


def _rows() -> dict[str, Row]:
    rows = {
        "connection-refused": Row((), UpstreamUnavailable, None, requests=0, refused=True),
        "reset-mid-response": Row((Reset(),), UpstreamUnavailable, None),
        "slower-than-timeout": Row((Reply(delay_s=2.0),), UpstreamUnavailable, None, timeout_s=0.3),
        "500-cannot-connect": Row(
            (
                Reply(
                    500,
                    error_body(
                        "litellm.APIConnectionError: Cannot connect to host 127.0.0.1:9 "
                        f"key={TOKEN_MARK}",
                        code="500",
                    ),
                ),
            ),
            UpstreamUnavailable,
            500,
            echoes_token=True,
        ),
        "502-html": Row(
            (Reply(502, HTML_502, content_type="text/html"),),
            UpstreamUnavailable,
            502,
            echoes_token=True,
        ),
        "503": Row(
            (Reply(503, error_body(f"Service Unavailable {TOKEN_MARK}", code="503")),),
            UpstreamUnavailable,
            503,
            echoes_token=True,
        ),
        "529-overloaded": Row(
            (Reply(529, _raw("ant_error_529_overloaded.json")),), UpstreamUnavailable, 529
        ),
        "408-proxy-timeout": Row(
            (Reply(408, error_body(f"litellm.Timeout: timed out {TOKEN_MARK}", code="408")),),
            UpstreamUnavailable,
            408,
            echoes_token=True,
        ),
        "429-then-200-retry-after": Row(
            (
                Reply(
                    429,
                    _per_route(
                        "litellm_error_429_rate_limit.json", "ant_error_429_rate_limit.json"
                    ),
                    headers=(("Retry-After", "7"),),
                ),
                Reply(),
            ),
            None,
            200,
            requests=2,
            waits=(7.0,),
        ),
        "429-then-200-retry-after-ms": Row(
            (
                Reply(
                    429,
                    _raw("litellm_error_429_rate_limit.json"),
                    headers=(("retry-after-ms", "1500"), ("Retry-After", "2")),
                ),
                Reply(),
            ),
            None,
            200,
            requests=2,
            waits=(1.5,),
        ),
        "429-then-200-default-wait": Row(
            (Reply(429, _raw("litellm_error_429_rate_limit.json")), Reply()),
            None,
            200,
            requests=2,
            waits=(20.0,),
        ),
        "429-twice": Row(
            (
                Reply(429, fixture_body("litellm_error_429_rate_limit.json", echo_token=True)),
                Reply(429, fixture_body("litellm_error_429_rate_limit.json", echo_token=True)),
            ),
            UpstreamUnavailable,
            429,
            requests=2,
            waits=(20.0,),
            echoes_token=True,
        ),
        "429-retry-after-beyond-cap": Row(
            (
                Reply(
                    429,
                    _per_route(
                        "litellm_error_429_rate_limit.json", "ant_error_429_rate_limit.json"
                    ),
                    headers=(("Retry-After", "3600"),),
                ),
            ),
            UpstreamUnavailable,
            429,
            retry_after_s=3600.0,
        ),
        "401": Row(
            (
                Reply(
                    401,
                    error_body(
                        f"Authentication Error, Invalid proxy server token passed. Received API Key = {TOKEN_MARK}",
                        type_="auth_error",
                        code="401",
                    ),
                ),
            ),
            AuthenticationFailed,
            401,
            echoes_token=True,
        ),
        "403": Row(
            (
                Reply(
                    403,
                    error_body(
                        "The requested model 'gpt-b' is not available for this API key, or "
                        "the model name is invalid.",
                        type_="key_model_access_denied",
                        code="403",
                    ),
                ),
            ),
            AuthenticationFailed,
            403,
        ),
        "400-provider": Row(
            (
                Reply(
                    400,
                    _per_route(
                        "oai_error_400_unsupported_value.json",
                        "ant_error_400_orphan_tool_result.json",
                        echo_token=True,
                    ),
                ),
            ),
            LLMError,
            400,
            echoes_token=True,
        ),
        "400-litellm-wrapped": Row(
            (
                Reply(
                    400, fixture_body("litellm_error_400_wrapped_anthropic.json", echo_token=True)
                ),
            ),
            LLMError,
            400,
            echoes_token=True,
        ),
        "400-prompt-mentions-budget": Row(
            (Reply(400, PROMPT_ECHO_400),), LLMError, 400, echoes_token=True
        ),
        "400-budget-words-outside-message": Row(
            (Reply(400, BUDGET_IN_EXTRA_FIELD_400),), LLMError, 400
        ),
        "404-model-not-found": Row(
            (
                Reply(
                    404,
                    _per_route(
                        "oai_error_404_model_not_found.json", "ant_error_404_not_found.json"
                    ),
                ),
            ),
            LLMError,
            404,
        ),
        "200-html": Row(
            (Reply(200, b"<html><body>Welcome to nginx!</body></html>", content_type="text/html"),),
            LLMError,
            200,
        ),
        "200-truncated-json": Row(
            (
                Reply(
                    200,
                    PerRoute(_raw("oai_text_plain.json")[:60], _raw("ant_text_plain.json")[:60]),
                ),
            ),
            LLMError,
            200,
        ),
        "200-not-a-completion": Row(
            (Reply(200, _raw("malformed_200_not_a_chat_completion.json")),), LLMError, 200
        ),
        "200-truncation": Row(
            (
                Reply(
                    200,
                    _with_responses(
                        _per_route("oai_finish_length.json", "ant_max_tokens_haiku_probe.json"),
                        _recorded_responses(truncated=True),
                    ),
                ),
            ),
            TruncatedResponse,
            200,
        ),
        "200-ok": Row(
            (
                Reply(
                    200,
                    _with_responses(
                        _per_route("oai_text_plain.json", "ant_text_plain.json"),
                        _recorded_responses(),
                    ),
                ),
            ),
            None,
            200,
        ),
    }
    for wording, body in BUDGET_WORDINGS.items():
        for status in (400, 422, 429):
            rows[f"budget-{wording}-{status}"] = Row(
                (Reply(status, body, headers=(("Retry-After", "1"),)),),
                BudgetExhausted,
                status,
                echoes_token=True,
            )
    for name, overflow in OVERFLOWS.items():  # counts: tests/transport/test_overflow.py
        rows[f"overflow-{name}"] = Row(
            (Reply(overflow.status, overflow.body),), ContextWindowExceeded, overflow.status
        )
    for name, near in NEAR_MISSES.items():
        rows[f"not-overflow-{name}"] = Row((Reply(near.status, near.body),), LLMError, 400)
    return rows


ROWS = _rows()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("name", list(ROWS))
async def test_failure_table(name: str, route: Route, mode: Mode, server: LoopbackServer) -> None:
    """Each scripted reply yields the table's exact class and status, the scripted number of
    requests and waits, and no exception text carries the token the server echoed."""
    row = ROWS[name]
    server.plan(*row.plans)
    sleep = SleepLog()
    base_url = closed_port_url() if row.refused else server.base_url
    options = {} if row.timeout_s is None else {"timeout_s": row.timeout_s}
    client = make_client(route, mode, base_url, sleep=sleep, **options)
    try:
        if row.raised is None:
            events = await complete(client, EVENTS, None, MODEL[route])
            assert events
            assert client.last_usage is not None
        else:
            with pytest.raises(LLMError) as caught:
                await complete(client, EVENTS, None, MODEL[route])
            exc = caught.value
            assert type(exc) is row.raised
            assert exc.status == row.status
            assert_no_token(exc)
            if row.echoes_token:
                assert "[redacted]" in str(exc)
            if isinstance(exc, UpstreamUnavailable):
                assert exc.retry_after_s == row.retry_after_s
    finally:
        await close(client)
    assert len(server.requests) == row.requests
    assert tuple(sleep.waits) == row.waits


@pytest.mark.parametrize("mode", MODES)
async def test_transport_failure_after_a_429_has_no_status(
    mode: Mode, server: LoopbackServer
) -> None:
    """A reset on the retry is reported with no status, not the earlier attempt's 429."""
    server.plan(Reply(429, error_body("slow down", code="429")), Reset())
    sleep = SleepLog()
    client = make_client("openai_chat", mode, server.base_url, sleep=sleep)
    try:
        with pytest.raises(UpstreamUnavailable) as caught:
            await complete(client, EVENTS, None, MODEL["openai_chat"])
    finally:
        await close(client)
    assert type(caught.value) is UpstreamUnavailable
    assert caught.value.status is None
    assert sleep.waits == [20.0]
    assert len(server.requests) == 2


def _refusing_url() -> str:
    """A loopback URL nothing listens on (a port bound, then let go)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


@pytest.mark.parametrize("refused", [False, True], ids=["reset-mid-body", "refused"])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("route", ROUTES)
async def test_a_transport_failure_keeps_its_request(
    route: Route, mode: Mode, refused: bool, server: LoopbackServer
) -> None:
    """The httpx error behind an `UpstreamUnavailable` names its request, as an httpx
    client's would, though attempts go straight through the transport: whether it broke
    while the reply was read or before any reply (a refused connection)."""
    if refused:
        base_url = _refusing_url()
    else:
        server.plan(Reset())
        base_url = server.base_url
    client = make_client(route, mode, base_url, sleep=SleepLog())
    try:
        with pytest.raises(UpstreamUnavailable) as caught:
            await complete(client, EVENTS, None, MODEL[route])
    finally:
        await close(client)
    cause = caught.value.__cause__
    assert isinstance(cause, httpx.TransportError)
    assert cause.request.method == "POST"
    assert str(cause.request.url).startswith(base_url)


@pytest.mark.parametrize("mode", MODES)
async def test_unrenderable_log_sends_nothing(mode: Mode, server: LoopbackServer) -> None:
    """A log no route can send (empty) raises RenderError before any request."""
    client = make_client("anthropic_messages", mode, server.base_url, sleep=SleepLog())
    try:
        with pytest.raises(RenderError):
            await complete(client, [], None, MODEL["anthropic_messages"])
    finally:
        await close(client)
    assert server.requests == []
