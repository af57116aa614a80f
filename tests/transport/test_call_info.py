"""Call identity, cost, model limits and the pre-flight check against a loopback proxy stand-in."""

from __future__ import annotations

import json
import logging
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from nisse_llm.config.options import RequestOptions
from nisse_llm.config.routing import Route
from nisse_llm.config.settings import load_settings
from nisse_llm.errors import (
    AuthenticationFailed,
    ContextWindowExceeded,
    LLMError,
    UpstreamUnavailable,
)
from nisse_llm.events.canonical import CallInfo, Usage, UserText
from nisse_llm.testing.sse import sse_stream
from nisse_llm.transport._callinfo import call_info, priced, usage_keywords
from nisse_llm.transport.routers import AsyncRoleRouter, RoleRouter
from nisse_llm.wire.models_info import (
    Headroom,
    ModelInfo,
    body_output_ceiling,
    estimate_input_tokens,
    read_model_infos,
    read_token_count,
    token_count_request,
)
from tests.config.helpers import write_config
from tests.transport.harness import (
    EVENTS,
    MODEL,
    MODES,
    ROUTES,
    TOKEN,
    Mode,
    close,
    complete,
    make_client,
)
from tests.transport.loopback import RESPONSES, LoopbackServer, Reply, SleepLog, error_body
from tests.transport.stream_harness import is_sync, read_stream

# The headers LiteLLM 1.108.7 sent for a /v1/messages call to claude-sonnet-4-5 (measured;
# usage 700 fresh + 200 cache read + 100 cache write input tokens, 500 output tokens).
PROXY_HEADERS = {
    "x-litellm-call-id": "0d3f2b05-e91b-43a0-8cd8-41ec58c58d9f",
    "x-litellm-model-id": "4d7c4053ebba43a8a8081ebd84f6d10a56a477ca0b168c3a81f86b3b244c43c4",
    "x-litellm-response-cost": "0.010035",
    "x-litellm-response-cost-input": "0.0021",
    "x-litellm-key-spend": "0.010035",
    "x-litellm-response-duration-ms": "25.197982788085938",
    "x-litellm-model-group": "claude-priced",
    "x-litellm-attempted-retries": "0",
    "x-litellm-attempted-fallbacks": "0",
}
SONNET = ModelInfo(
    max_input_tokens=200_000,
    max_output_tokens=64_000,
    input_cost_per_token=Decimal("3e-06"),
    output_cost_per_token=Decimal("1.5e-05"),
    cache_read_cost_per_token=Decimal("3e-07"),
    cache_write_cost_per_token=Decimal("3.75e-06"),
    supports_reasoning=True,
    supports_vision=True,
    supports_prompt_caching=True,
)


def _model_list(**windows: int | None) -> bytes:
    """A /v1/model/info body: one entry per model, with that window (None: unknown)."""
    data = [
        {
            "model_name": name,
            "litellm_params": {"model": f"openai/{name}"},
            "model_info": {
                "max_input_tokens": window,
                "max_output_tokens": None if window is None else 4096,
                "input_cost_per_token": None if window is None else 1e-06,
                "output_cost_per_token": None if window is None else 2e-06,
                "supports_vision": None,
            },
        }
        for name, window in windows.items()
    ]
    return json.dumps({"data": data}).encode()


def _headers(**extra: str) -> tuple[tuple[str, str], ...]:
    return tuple({**PROXY_HEADERS, **extra}.items())


# --- pure pieces ------------------------------------------------------------------------------


def test_call_info_reads_every_proxy_header() -> None:
    """Each x-litellm header lands in its typed field; cost and spend are exact Decimals."""
    info = call_info(PROXY_HEADERS)
    assert info == CallInfo(
        call_id="0d3f2b05-e91b-43a0-8cd8-41ec58c58d9f",
        cost_usd=Decimal("0.010035"),
        cost_source="proxy",
        key_spend_usd=Decimal("0.010035"),
        model_group="claude-priced",
        model_id="4d7c4053ebba43a8a8081ebd84f6d10a56a477ca0b168c3a81f86b3b244c43c4",
        proxy_duration_ms=25.197982788085938,
        attempted_retries=0,
        attempted_fallbacks=0,
    )


def test_no_headers_is_an_all_none_call_info() -> None:
    """A plain OpenAI-compatible server sends none of the headers: every field is None."""
    assert call_info({}) == CallInfo()


@pytest.mark.parametrize("value", ["nan", "-1", "abc", "inf", ""])
def test_unreadable_numbers_count_as_absent(value: str) -> None:
    """A cost, spend, duration or count that is not a finite non-negative number is None."""
    headers = dict.fromkeys(
        (
            "x-litellm-response-cost",
            "x-litellm-key-spend",
            "x-litellm-response-duration-ms",
            "x-litellm-attempted-retries",
        ),
        value,
    )
    info = call_info(headers)
    assert (info.cost_usd, info.cost_source, info.key_spend_usd) == (None, None, None)
    assert (info.proxy_duration_ms, info.attempted_retries) == (None, None)


@pytest.mark.parametrize(
    ("header", "cost"),
    [
        # Reported with the issue: the printed cost and the task file's.
        ("0.00103475000000000001", "0.00103475"),
        ("0.00048075000000000006", "0.00048075"),
        # Measured from LiteLLM 1.108.7 (gpt-5.4-mini, claude-haiku-5-5 prices).
        ("0.00010650000000000001", "0.0001065"),
        ("0.00040689999999999997", "0.0004069"),
        ("6.879999999999999e-05", "0.0000688"),
        ("0.0008667999999999999", "0.0008668"),
        ("12.000000000000002", "12"),
        # Short ones are kept as written.
        ("0.003477", "0.003477"),
        ("1.35e-05", "0.0000135"),
        ("0", "0"),
    ],
)
def test_a_cost_printed_from_a_float_loses_its_noise(header: str, cost: str) -> None:
    """The proxy prints costs as floats, noise digits and all: the cost and the key's spend
    are the decimals they stand for, to a float's 15 significant digits."""
    info = call_info({"x-litellm-response-cost": header, "x-litellm-key-spend": header})
    assert str(info.cost_usd) == cost
    assert str(info.key_spend_usd) == cost
    # Only the noise went: what changed is below the float's own precision.
    assert info.cost_usd is not None
    assert abs(info.cost_usd - Decimal(header)) <= Decimal(header) * Decimal("1e-15")


def test_a_streamed_replys_cost_header_is_not_read() -> None:
    """A stream's headers were written before its reply: any cost in them is ignored."""
    info = call_info(PROXY_HEADERS, streamed=True)
    assert (info.cost_usd, info.cost_source) == (None, None)
    assert info.call_id == PROXY_HEADERS["x-litellm-call-id"]


def test_the_token_echoed_in_a_header_is_redacted() -> None:
    """A server echoing the key in a text header leaves only [redacted] in the CallInfo."""
    info = call_info(
        {"x-litellm-call-id": f"id-{TOKEN}", "x-litellm-model-group": TOKEN}, token=TOKEN
    )
    assert (info.call_id, info.model_group) == ("id-[redacted]", "[redacted]")


def test_prices_reproduce_the_proxys_measured_cost() -> None:
    """Fresh input, output, cache reads and cache writes at their prices add up to the cost
    the proxy sent for the same usage (claude-sonnet-4-5 and gpt-4.1-mini, measured)."""
    usage = Usage(input=1000, output=500, cache_read=200, cache_write=100)
    cost = priced(
        usage,
        input_cost_per_token=SONNET.input_cost_per_token,
        output_cost_per_token=SONNET.output_cost_per_token,
        cache_read_cost_per_token=SONNET.cache_read_cost_per_token,
        cache_write_cost_per_token=SONNET.cache_write_cost_per_token,
    )
    assert cost == Decimal("0.010035")
    mini = priced(
        Usage(input=1000, output=500), input_cost_per_token=4e-07, output_cost_per_token=1.6e-06
    )
    assert mini == Decimal("0.0012")
    assert priced(usage, input_cost_per_token=None, output_cost_per_token=None) is None


def test_usage_callbacks_get_role_and_call_only_when_they_ask() -> None:
    """A two-argument callback gets two arguments; one naming role or call (or **kwargs) gets those."""

    def plain(usage: Usage, model: str) -> None: ...
    def with_role(usage: Usage, model: str, *, role: str | None = None) -> None: ...
    def with_all(usage: Usage, model: str, **extra: Any) -> None: ...

    assert usage_keywords(plain) == frozenset()
    assert usage_keywords(with_role) == {"role"}
    assert usage_keywords(with_all) == {"role", "call"}
    assert usage_keywords(None) == frozenset()


def test_usages_sum_without_a_start_value() -> None:
    """sum() of usages is their field-by-field total."""
    usages = [Usage(input=10, output=2, cache_read=3), Usage(input=5, output=1, cache_write=4)]
    assert sum(usages) == Usage(input=15, output=3, cache_read=3, cache_write=4)


def test_the_model_list_is_read_by_name_with_none_for_the_unknown() -> None:
    """A listed priced model has its limits and prices; an unpriced one all None."""
    infos = read_model_infos(_model_list(priced=1000, unpriced=None))
    assert infos["priced"].max_input_tokens == 1000
    assert infos["priced"].input_cost_per_token == Decimal("0.000001")
    assert infos["unpriced"] == ModelInfo()
    with pytest.raises(ValueError, match="not a model list"):
        read_model_infos(b'{"detail": "nope"}')


def test_token_counter_body_and_ceiling_come_from_the_rendered_request() -> None:
    """The counter is sent the rendered messages, tools and system; the ceiling is the body's."""
    rendered = json.dumps(
        {"model": "m", "max_tokens": 77, "system": "be brief", "messages": [{"role": "user"}]}
    ).encode()
    assert json.loads(token_count_request(rendered, "alias")) == {
        "model": "alias",
        "messages": [{"role": "user"}],
        "system": "be brief",
    }
    assert body_output_ceiling(rendered) == 77
    assert estimate_input_tokens(rendered) > 0
    assert read_token_count(b'{"total_tokens": 12}') == 12
    with pytest.raises(ValueError, match="not a token count"):
        read_token_count(b'{"total_tokens": -1}')


# --- through the clients -------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("route", ROUTES)
async def test_every_call_carries_the_proxys_call_info(
    route: Route, mode: Mode, server: LoopbackServer
) -> None:
    """last_call and the stream's completion hold what the headers said, the cost from the proxy."""
    server.plan(Reply(headers=_headers()), Reply(headers=_headers()))
    client = make_client(route, mode, server.base_url, sleep=SleepLog())
    try:
        await complete(client, EVENTS, None, MODEL[route])
        assert client.last_call == call_info(PROXY_HEADERS)
        _, completion = await read_stream(client)  # answered whole: the cost header counts
    finally:
        await close(client)
    assert completion.call == call_info(PROXY_HEADERS)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("route", ROUTES)
async def test_a_plain_server_gives_an_empty_call_info(
    route: Route, mode: Mode, server: LoopbackServer
) -> None:
    """Without x-litellm headers every CallInfo field is None, and no model list is asked for."""
    server.plan(Reply())
    client = make_client(route, mode, server.base_url, sleep=SleepLog())
    try:
        await complete(client, EVENTS, None, MODEL[route])
    finally:
        await close(client)
    assert client.last_call == CallInfo()
    assert [r.method for r in server.requests] == ["POST"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("route", ROUTES)
async def test_an_error_after_a_response_carries_the_call_id(
    route: Route, mode: Mode, server: LoopbackServer
) -> None:
    """What an operator greps the proxy's logs for rides on the exception."""
    server.plan(Reply(500, error_body("boom", code="500"), headers=_headers()))
    client = make_client(route, mode, server.base_url, sleep=SleepLog())
    try:
        with pytest.raises(UpstreamUnavailable) as caught:
            await complete(client, EVENTS, None, MODEL[route])
    finally:
        await close(client)
    assert caught.value.call_id == PROXY_HEADERS["x-litellm-call-id"]
    assert client.last_call is None


def _sse(route: Route) -> bytes:
    if route == "openai_responses":
        path = RESPONSES.parent.parent / "responses" / "vercel_reasoning_encrypted_content.json"
        return sse_stream(route, json.loads(path.read_text()))
    name = "oai_text_plain" if route == "openai_chat" else "ant_text_plain"
    return sse_stream(route, json.loads((RESPONSES / f"{name}.json").read_text()))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("route", ROUTES)
async def test_a_streamed_cost_comes_from_the_models_prices(
    route: Route, mode: Mode, server: LoopbackServer
) -> None:
    """A proxy stream carries no cost: the model's prices (read once) times the streamed usage
    give it, marked as coming from the prices."""
    stream_headers = {k: v for k, v in PROXY_HEADERS.items() if "cost" not in k}
    server.plan(
        Reply(
            200,
            _sse(route),
            headers=tuple(stream_headers.items()),
            content_type="text/event-stream",
        ),
        Reply(200, _model_list(**{MODEL[route]: 100_000})),
    )
    client = make_client(route, mode, server.base_url, sleep=SleepLog())
    try:
        _, completion = await read_stream(client)
    finally:
        await close(client)
    usage = completion.usage
    expected = usage.input * Decimal("0.000001") + usage.output * Decimal("0.000002")
    assert completion.call is not None
    assert (completion.call.cost_usd, completion.call.cost_source) == (expected, "prices")
    assert completion.call.call_id == PROXY_HEADERS["x-litellm-call-id"]
    assert client.last_call == completion.call
    assert [(r.method, r.path) for r in server.requests][1] == ("GET", "/v1/model/info")


@pytest.mark.parametrize("mode", MODES)
async def test_model_info_is_read_once_and_none_for_an_unlisted_model(
    mode: Mode, server: LoopbackServer
) -> None:
    """One GET per client; a listed model has its info, an unlisted one None."""
    server.plan(Reply(200, _model_list(**{"gpt-4o-mini": 1000, "blank": None})))
    client = make_client("openai_chat", mode, server.base_url, sleep=SleepLog())
    try:
        infos = [client.model_info(m) for m in ("gpt-4o-mini", "blank", "missing")]
        if not is_sync(client):
            infos = [await info for info in infos]
    finally:
        await close(client)
    assert infos[0] is not None
    assert infos[0].max_input_tokens == 1000
    assert infos[1] == ModelInfo()
    assert infos[2] is None
    assert [(r.method, r.path) for r in server.requests] == [("GET", "/v1/model/info")]


async def _model_info(client: Any, model: str) -> ModelInfo | None:
    info = client.model_info(model)
    return info if is_sync(client) else await info  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("status", "raised"), [(401, AuthenticationFailed), (500, UpstreamUnavailable), (404, None)]
)
@pytest.mark.parametrize("mode", MODES)
async def test_model_info_failures_are_classified_like_any_call(
    status: int, raised: type[LLMError] | None, mode: Mode, server: LoopbackServer
) -> None:
    """A refused or failed model list raises as a call would; a server without one (404) lists nothing."""
    server.plan(Reply(status, error_body(f"no {TOKEN}", code=str(status))))
    client = make_client("openai_chat", mode, server.base_url, sleep=SleepLog())
    try:
        if raised is None:
            assert await _model_info(client, "gpt-4o-mini") is None
        else:
            with pytest.raises(raised) as caught:
                await _model_info(client, "gpt-4o-mini")
            assert type(caught.value) is raised
            assert TOKEN not in str(caught.value)
    finally:
        await close(client)


async def _headroom(client: Any, *args: Any, **kwargs: Any) -> Headroom:
    result = client.headroom(*args, **kwargs)
    return result if isinstance(result, Headroom) else await result


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("route", ROUTES)
async def test_headroom_counts_at_the_proxy_and_subtracts_the_output_ceiling(
    route: Route, mode: Mode, server: LoopbackServer
) -> None:
    """input from the counter, the window from the model list, the ceiling from the options."""
    server.plan(
        Reply(200, _model_list(**{MODEL[route]: 5000})), Reply(200, b'{"total_tokens": 1200}')
    )
    client = make_client(route, mode, server.base_url, sleep=SleepLog(), max_tokens=2000)
    try:
        room = await _headroom(
            client, MODEL[route], EVENTS, None, "sys", RequestOptions(max_output_tokens=300)
        )
    finally:
        await close(client)
    assert room == Headroom(
        input_tokens=1200, max_input_tokens=5000, max_output_tokens=300, remaining=3500
    )
    counted = server.requests[1]
    assert (counted.method, counted.path) == ("POST", "/utils/token_counter")
    assert counted.json()["model"] == MODEL[route]
    assert "Say hello." in json.dumps(counted.json()["messages"])


@pytest.mark.parametrize("mode", MODES)
async def test_without_a_counter_headroom_is_a_local_estimate(
    mode: Mode, server: LoopbackServer
) -> None:
    """A server with neither endpoint gives an estimate against an unknown window."""
    server.plan(Reply(404, b"{}"), Reply(404, b"{}"))
    client = make_client("openai_chat", mode, server.base_url, sleep=SleepLog())
    try:
        room = await _headroom(client, "gpt-4o-mini", EVENTS, None)
    finally:
        await close(client)
    assert (room.source, room.max_input_tokens, room.remaining, room.fits) == (
        "estimate",
        None,
        None,
        None,
    )
    assert room.input_tokens > 0


async def _send(client: Any, kind: str) -> None:
    if kind == "stream":
        await read_stream(client)
    else:
        await complete(client, EVENTS, None, MODEL[client.route])


@pytest.mark.parametrize("kind", ["complete", "stream"])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("route", ROUTES)
async def test_preflight_refuses_what_cannot_fit_and_sends_nothing(
    route: Route, mode: Mode, kind: str, server: LoopbackServer
) -> None:
    """With preflight on, a request whose input plus ceiling exceeds the window raises
    ContextWindowExceeded with both numbers, and the completion is never posted."""
    server.plan(
        Reply(200, _model_list(**{MODEL[route]: 1000})), Reply(200, b'{"total_tokens": 950}')
    )
    client = make_client(
        route, mode, server.base_url, sleep=SleepLog(), preflight=True, max_tokens=100
    )
    try:
        with pytest.raises(ContextWindowExceeded) as caught:
            await _send(client, kind)
    finally:
        await close(client)
    assert (caught.value.limit_tokens, caught.value.requested_tokens) == (1000, 1050)
    assert "nothing was sent" in str(caught.value)
    assert [r.path for r in server.requests] == ["/v1/model/info", "/utils/token_counter"]


@pytest.mark.parametrize("mode", MODES)
async def test_preflight_lets_a_fitting_request_through_and_skips_unknown_windows(
    mode: Mode, server: LoopbackServer
) -> None:
    """A request that fits is sent after one count; a model without a window is not counted."""
    server.plan(
        Reply(200, _model_list(**{"gpt-4o-mini": 100_000, "blank": None})),
        Reply(200, b'{"total_tokens": 10}'),
        Reply(),
        Reply(),
    )
    client = make_client("openai_chat", mode, server.base_url, sleep=SleepLog(), preflight=True)
    try:
        await complete(client, EVENTS, None, "gpt-4o-mini")
        await complete(client, EVENTS, None, "blank")
    finally:
        await close(client)
    assert [r.path for r in server.requests] == [
        "/v1/model/info",
        "/utils/token_counter",
        "/chat/completions",
        "/chat/completions",
    ]


def _router_pin(tmp_path: Path, server: LoopbackServer, **llm: Any) -> Any:
    path = write_config(
        tmp_path / "nisse.toml",
        {
            "llm": {"base_url": server.base_url, "token": TOKEN, **llm},
            "roles": {
                "executor": "gpt-4o-mini",
                "planner": "claude-sonnet-4-5",
                "delegate": "gpt-4o-mini",
                "consultant": "gpt-4o-mini",
            },
        },
    )
    return load_settings(path).pin()


def test_the_usage_callback_gets_the_role_and_the_call_through_a_router(
    tmp_path: Path, server: LoopbackServer, caplog: pytest.LogCaptureFixture
) -> None:
    """Through a router, a callback asking for them receives the role and the CallInfo, and the
    call's log record names both; a two-argument callback still works."""
    caplog.set_level(logging.INFO, logger="nisse_llm")
    seen: list[tuple[Usage, str, str | None, CallInfo | None]] = []
    plain: list[tuple[Usage, str]] = []

    def on_usage(usage: Usage, model: str, *, role: str | None, call: CallInfo | None) -> None:
        seen.append((usage, model, role, call))

    server.plan(Reply(headers=_headers()), Reply(headers=_headers()), Reply())
    pin = _router_pin(tmp_path, server)
    with RoleRouter.from_pin(pin, on_usage=on_usage) as router:
        router.complete("planner", [UserText(text="hi")], None)
        with router.stream("executor", [UserText(text="hi")], None) as stream:
            list(stream)
        client = router.client_for("executor")
    with RoleRouter.from_pin(pin, on_usage=lambda u, m: plain.append((u, m))) as router:
        router.complete("executor", [UserText(text="hi")], None)
    assert [(m, r) for _, m, r, _ in seen] == [
        ("claude-sonnet-4-5", "planner"),
        ("gpt-4o-mini", "executor"),
    ]
    assert all(call == call_info(PROXY_HEADERS) for *_, call in seen)
    assert client.last_call == call_info(PROXY_HEADERS)
    assert len(plain) == 1
    records = [r for r in caplog.records if r.name == "nisse_llm"]
    assert [(r.role, r.call_id) for r in records][:2] == [  # type: ignore[attr-defined]
        ("planner", PROXY_HEADERS["x-litellm-call-id"]),
        ("executor", PROXY_HEADERS["x-litellm-call-id"]),
    ]


async def test_async_router_model_info_and_headroom_by_role(
    tmp_path: Path, server: LoopbackServer
) -> None:
    """The async router answers model_info and headroom for a role's pinned model."""
    server.plan(
        Reply(200, _model_list(**{"claude-sonnet-4-5": 200_000})),
        Reply(200, b'{"total_tokens": 40}'),
    )
    pin = _router_pin(tmp_path, server, max_output_tokens=1000)
    async with AsyncRoleRouter.from_pin(pin) as router:
        info = await router.model_info("planner")
        room = await router.headroom("planner", [UserText(text="hi")], None)
    assert info is not None
    assert info.max_input_tokens == 200_000
    assert room.remaining == 200_000 - 40 - 1000


def test_preflight_follows_the_setting(tmp_path: Path, server: LoopbackServer) -> None:
    """llm.preflight reaches every client of a router; a keyword overrides it."""
    on = _router_pin(tmp_path, server, preflight=True)
    with RoleRouter.from_pin(on) as router:
        assert router.client_for("planner").preflight
    with RoleRouter.from_pin(on, preflight=False) as router:
        assert not router.client_for("executor").preflight


def test_router_headroom_uses_the_roles_profile_under_the_calls_options(
    tmp_path: Path, server: LoopbackServer
) -> None:
    """The ceiling headroom subtracts is the one the call would send: the call's options over
    the role's profile over the client's."""
    path = write_config(
        tmp_path / "profiled.toml",
        {
            "llm": {"base_url": server.base_url, "token": TOKEN},
            "roles": {
                "executor": {"model": "gpt-4o-mini", "max_output_tokens": 700},
                "planner": "claude-sonnet-4-5",
                "delegate": "gpt-4o-mini",
                "consultant": "gpt-4o-mini",
            },
        },
    )
    server.plan(
        Reply(200, _model_list(**{"gpt-4o-mini": 10_000})),
        Reply(200, b'{"total_tokens": 100}'),
        Reply(200, b'{"total_tokens": 100}'),
    )
    with RoleRouter.from_pin(load_settings(path).pin()) as router:
        profiled = router.headroom("executor", [UserText(text="hi")], None)
        overridden = router.headroom(
            "executor", [UserText(text="hi")], None, options=RequestOptions(max_output_tokens=50)
        )
    assert (profiled.max_output_tokens, profiled.remaining) == (700, 10_000 - 100 - 700)
    assert (overridden.max_output_tokens, overridden.remaining) == (50, 10_000 - 100 - 50)
