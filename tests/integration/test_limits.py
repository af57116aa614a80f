"""Context overflows, call ids, costs, model limits and the pre-flight check through the real proxy."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import BaseModel

from nisse_llm.config.options import RequestOptions
from nisse_llm.config.settings import load_settings
from nisse_llm.errors import ContextWindowExceeded, LLMError
from nisse_llm.events.canonical import UserText
from nisse_llm.task.logstore import FileTaskStore
from nisse_llm.testing import Script, Tokens, failure, reply
from nisse_llm.testing.proxy import LiteLLMProxy
from nisse_llm.transport.clients import (
    AnthropicPassthroughClient,
    AsyncAnthropicPassthroughClient,
    AsyncLiteLLMClient,
    LiteLLMClient,
)
from nisse_llm.transport.routers import AsyncRoleRouter, RoleRouter
from nisse_llm.wire.models_info import ModelInfo
from tests.integration.helpers import COMBO_IDS, COMBOS, ClientRoute, Combo
from tests.transport.overflow_bodies import OVERFLOWS

pytestmark = pytest.mark.proxy

HELLO = [UserText(text="Say hello.")]
# The providers' own bodies; the proxy-shaped rows are what the proxy itself sends.
PROVIDER_BODIES = [name for name in OVERFLOWS if not name.startswith("proxy-")]
# Measured: TGI's ``{"error": "<text>"}`` (a string, not an object) from an openai/ entry's
# upstream reaches the client as "OpenAIException - Error code: 422" (LiteLLM's OpenAI client
# reads no message from it), so its words, and the overflow, are lost at the proxy.
WORDS_LOST_AT_THE_PROXY = {("tgi-inputs-plus-max-new-tokens", "gpt")}
UUID_LENGTH = 36


class HeaderRecorder(httpx.BaseTransport):
    """Forwards to the network and keeps every response's headers as the proxy sent them."""

    def __init__(self) -> None:
        self._inner = httpx.HTTPTransport()
        self.headers: list[httpx.Headers] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self._inner.handle_request(request)
        self.headers.append(response.headers)
        return response

    def close(self) -> None:
        self._inner.close()


_SYNC = {"chat": LiteLLMClient, "messages": AnthropicPassthroughClient}
_ASYNC = {"chat": AsyncLiteLLMClient, "messages": AsyncAnthropicPassthroughClient}


@contextmanager
def _client(
    proxy: LiteLLMProxy, route: ClientRoute, **options: Any
) -> Iterator[tuple[LiteLLMClient | AnthropicPassthroughClient, HeaderRecorder]]:
    recorder = HeaderRecorder()
    options.setdefault("max_tokens", 1024)
    with _SYNC[route](proxy.base_url, proxy.token, transport=recorder, **options) as client:
        yield client, recorder


async def _drain(client: AsyncLiteLLMClient | AsyncAnthropicPassthroughClient, model: str) -> None:
    async with client.stream(HELLO, None, model) as stream:
        async for _ in stream:
            pass


# --- context overflows -------------------------------------------------------------------


@pytest.mark.parametrize("combo", COMBOS, ids=COMBO_IDS)
@pytest.mark.parametrize("name", PROVIDER_BODIES)
def test_each_providers_overflow_reaches_the_agent_as_context_window_exceeded(
    proxy: LiteLLMProxy, script: Script, combo: Combo, name: str
) -> None:
    """The upstream refuses with a provider's real overflow body; through the proxy, on both
    routes to both kinds of entry, the agent gets ContextWindowExceeded with the counts the
    provider stated and the proxy's call id (except where the proxy drops the words)."""
    row = OVERFLOWS[name]
    script.add(combo.upstream, failure(row.status, row.body))
    with _client(proxy, combo.route) as (client, recorder), pytest.raises(LLMError) as caught:
        client.complete(HELLO, None, combo.model())
    exc = caught.value
    if (name, combo.family) in WORDS_LOST_AT_THE_PROXY:
        assert type(exc) is LLMError
        assert "Error code: 422" in str(exc)
        return
    assert type(exc) is ContextWindowExceeded
    assert (exc.limit_tokens, exc.requested_tokens) == (row.limit, row.requested)
    assert exc.call_id is not None
    assert exc.call_id == recorder.headers[-1]["x-litellm-call-id"]
    assert len(exc.call_id) == UUID_LENGTH
    assert len(script.requests) == 1


@pytest.mark.parametrize("combo", COMBOS, ids=COMBO_IDS)
@pytest.mark.parametrize("name", ["openai-messages-resulted-in", "anthropic-prompt-too-long"])
async def test_an_overflow_before_the_first_byte_of_a_stream(
    proxy: LiteLLMProxy, script: Script, combo: Combo, name: str
) -> None:
    """A streamed call refused for its size raises ContextWindowExceeded on entering, async too."""
    row = OVERFLOWS[name]
    script.add(combo.upstream, failure(row.status, row.body))
    async with _ASYNC[combo.route](proxy.base_url, proxy.token, max_tokens=1024) as client:
        with pytest.raises(ContextWindowExceeded) as caught:
            await _drain(client, combo.model())
    assert (caught.value.limit_tokens, caught.value.requested_tokens) == (
        row.limit,
        row.requested,
    )
    assert caught.value.call_id is not None


# --- cost and call id --------------------------------------------------------------------------

# The usage each priced model's upstream reports, and what the proxy's price map makes of it.
PRICED_USAGE = {
    "gpt": (Tokens(input=1000, output=500), Decimal("0.003")),
    "claude": (
        Tokens(input=1000, output=500, cache_read=200, cache_write=100),
        Decimal("0.010035"),
    ),
}


@pytest.mark.parametrize("combo", COMBOS, ids=COMBO_IDS)
def test_a_priced_call_returns_the_cost_and_call_id_the_proxy_sent(
    proxy: LiteLLMProxy, script: Script, combo: Combo
) -> None:
    """last_call holds the proxy's call id, cost, key spend, model group and retries, and the
    streamed twin of the same call costs the same, computed from the model's prices."""
    tokens, expected = PRICED_USAGE[combo.family]
    model = combo.model("priced")
    script.add(combo.upstream, reply("Hello!", usage=tokens), reply("Hello!", usage=tokens))
    with _client(proxy, combo.route) as (client, recorder):
        client.complete(HELLO, None, model)
        sent = recorder.headers[-1]
        whole = client.last_call
        with client.stream(HELLO, None, model) as stream:
            list(stream)
        streamed = stream.completion.call
    assert whole is not None
    assert whole.call_id == sent["x-litellm-call-id"]
    assert whole.cost_usd == Decimal(sent["x-litellm-response-cost"]) == expected
    assert (whole.cost_source, whole.model_group) == ("proxy", model)
    assert whole.model_id == sent["x-litellm-model-id"]
    assert whole.key_spend_usd is not None
    assert (whole.attempted_retries, whole.attempted_fallbacks) == (0, 0)
    assert whole.proxy_duration_ms is not None
    assert streamed is not None
    assert streamed.cost_source == "prices"
    assert streamed.cost_usd is not None
    assert abs(streamed.cost_usd - whole.cost_usd) < Decimal("1e-9")
    assert streamed.call_id not in (None, whole.call_id)
    assert client.last_call == streamed


# 100 input and 7 output tokens: the proxy's price map multiplies in floats and prints the
# noise (measured on 1.108.7), which the client drops.
NOISY_COST = {
    "gpt": ("0.00010650000000000001", "0.0001065"),
    "claude": ("0.00040500000000000003", "0.000405"),
}


@pytest.mark.parametrize("family", sorted(NOISY_COST))
def test_the_cost_headers_float_noise_stays_out_of_the_call_and_the_task_file(
    proxy: LiteLLMProxy, script: Script, family: str, tmp_path: Path
) -> None:
    """The proxy's "0.00010650000000000001" is the call's cost 0.0001065, and the task file
    records that, not the float's noise."""
    header, cost = NOISY_COST[family]
    model = f"{family}-priced"
    upstream = "openai_chat" if family == "gpt" else "anthropic_messages"
    script.add(upstream, reply("Hello!", usage=Tokens(100, 7)))
    roles = dict.fromkeys(("executor", "planner", "delegate", "consultant"), model)
    pin = load_settings(llm={"base_url": proxy.base_url, "token": proxy.token}, roles=roles).pin()
    path = tmp_path / "task.jsonl"
    recorder = HeaderRecorder()
    with RoleRouter.from_pin(pin, store=FileTaskStore(path).begin(pin), transport=recorder) as llm:
        llm.complete("executor", HELLO, None)
        call = llm.client_for("executor").last_call
    assert recorder.headers[-1]["x-litellm-response-cost"] == header
    assert call is not None
    assert str(call.cost_usd) == cost
    (record,) = FileTaskStore(path).read().calls
    assert record.llm_call.call is not None
    assert str(record.llm_call.call.cost_usd) == cost
    assert header not in path.read_text()
    assert f'"cost_usd":"{cost}"' in path.read_text()


# --- model info ---------------------------------------------------------------------------------


@pytest.mark.parametrize("route", ["chat", "messages"])
def test_model_info_gives_the_limits_of_a_priced_entry_and_none_for_an_unpriced_one(
    proxy: LiteLLMProxy, script: Script, route: ClientRoute
) -> None:
    """Limits and prices come from the proxy's price map; a model it does not know has every
    field None; a model it does not list is None; the upstream is never asked."""
    with _client(proxy, route) as (client, recorder):
        gpt = client.model_info("gpt-priced")
        claude = client.model_info("claude-priced")
        unpriced = client.model_info("gpt-scripted")
        tiny = client.model_info("claude-tiny")
        missing = client.model_info("no-such-model")
    assert gpt is not None
    assert (gpt.max_input_tokens, gpt.max_output_tokens) == (272_000, 128_000)
    assert (gpt.input_cost_per_token, gpt.output_cost_per_token) == (
        Decimal("7.5e-07"),
        Decimal("4.5e-06"),
    )
    assert gpt.supports_vision is True
    assert claude is not None
    assert (claude.max_input_tokens, claude.max_output_tokens) == (1_000_000, 128_000)
    assert claude.cache_write_cost_per_token == Decimal("3.75e-06")
    assert claude.supports_reasoning is True
    assert unpriced == ModelInfo()
    assert tiny == ModelInfo(max_input_tokens=300, max_output_tokens=100)
    assert missing is None
    assert len(recorder.headers) == 1  # one GET for all five
    assert script.requests == []


async def test_the_async_client_reads_the_same_model_info(proxy: LiteLLMProxy) -> None:
    """The async twin answers as the sync client does."""
    async with AsyncLiteLLMClient(proxy.base_url, proxy.token) as client:
        info = await client.model_info("claude-priced")
    assert info is not None
    assert info.max_input_tokens == 1_000_000


# --- token counter, headroom, pre-flight -------------------------------------------------------


@pytest.mark.parametrize("combo", COMBOS, ids=COMBO_IDS)
def test_headroom_counts_at_the_proxy_without_calling_the_upstream(
    proxy: LiteLLMProxy, script: Script, combo: Combo
) -> None:
    """The proxy's token counter answers for a rendered request of either route; headroom is
    the window less the count and the output ceiling; nothing reaches the upstream."""
    log = [UserText(text="Summarise the design of the transport module. " * 20)]
    with _client(proxy, combo.route) as (client, _):
        room = client.headroom(
            combo.model("priced"), log, None, "Be brief.", RequestOptions(max_output_tokens=2000)
        )
        small = client.headroom(combo.model("priced"), HELLO, None)
    window = 272_000 if combo.family == "gpt" else 1_000_000
    assert room.source == "proxy"
    assert small.input_tokens < 40 < room.input_tokens < 400
    assert (room.max_input_tokens, room.max_output_tokens) == (window, 2000)
    assert room.remaining == window - room.input_tokens - 2000
    assert script.requests == []


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("combo", COMBOS, ids=COMBO_IDS)
async def test_preflight_refuses_an_oversized_log_before_the_upstream_sees_it(
    proxy: LiteLLMProxy, script: Script, combo: Combo, mode: str
) -> None:
    """With preflight on, a log beyond a 300-token window raises ContextWindowExceeded and the
    upstream receives nothing; a log that fits is sent and answered."""
    big = [UserText(text="Read every file and report. " * 80)]
    model = combo.model("tiny")
    script.add(combo.upstream, reply("Done."))
    options: dict[str, Any] = {"max_tokens": 50, "preflight": True}
    if mode == "sync":
        with _client(proxy, combo.route, **options) as (client, _):
            with pytest.raises(ContextWindowExceeded) as caught:
                client.complete(big, None, model)
            assert script.requests == []
            client.complete(HELLO, None, model)
    else:
        async with _ASYNC[combo.route](proxy.base_url, proxy.token, **options) as aclient:
            with pytest.raises(ContextWindowExceeded) as caught:
                await aclient.complete(big, None, model)
            assert script.requests == []
            await aclient.complete(HELLO, None, model)
    assert caught.value.limit_tokens == 300
    assert caught.value.requested_tokens is not None
    assert caught.value.requested_tokens > 300
    assert len(script.requests) == 1  # only the call that fits


@pytest.mark.parametrize("route", ["chat", "messages"])
def test_preflight_refuses_a_stream_before_the_upstream_sees_it(
    proxy: LiteLLMProxy, script: Script, route: ClientRoute
) -> None:
    """A stream too big for its window is refused on entering, nothing sent upstream."""
    big = [UserText(text="Read every file and report. " * 80)]
    with _client(proxy, route, preflight=True, max_tokens=50) as (client, _):
        stream = client.stream(big, None, "gpt-tiny")
        with pytest.raises(ContextWindowExceeded):
            stream.__enter__()
    assert script.requests == []


class _Answer(BaseModel):
    """Any typed answer."""

    done: bool


_BIG = [UserText(text="Read every file and report. " * 80)]


async def _every_way_in(proxy: LiteLLMProxy, route: ClientRoute, entry: str, kind: str) -> None:
    """Send ``_BIG`` to the tiny model by ``entry`` (complete_as or stream) through ``kind``
    (a client or a router, sync or async), each with pre-flight on."""
    model = "gpt-tiny" if route == "chat" else "claude-tiny"
    if kind.startswith("router"):
        pin = load_settings(
            llm={
                "base_url": proxy.base_url,
                "token": proxy.token,
                "preflight": True,
                "max_output_tokens": 50,
            },
            roles={"executor": model, "planner": model, "delegate": model, "consultant": model},
        ).pin()
        if kind == "router":
            with RoleRouter.from_pin(pin) as router:
                if entry == "complete_as":
                    router.complete_as(_Answer, "executor", _BIG, None)
                else:
                    with router.stream("executor", _BIG, None) as stream:
                        list(stream)
        else:
            async with AsyncRoleRouter.from_pin(pin) as arouter:
                if entry == "complete_as":
                    await arouter.complete_as(_Answer, "executor", _BIG, None)
                else:
                    async with arouter.stream("executor", _BIG, None) as astream:
                        [delta async for delta in astream]
        return
    if kind == "client":
        with _client(proxy, route, preflight=True, max_tokens=50) as (client, _):
            if entry == "complete_as":
                client.complete_as(_Answer, _BIG, None, model)
            else:
                with client.stream(_BIG, None, model) as stream:
                    list(stream)
        return
    async with _ASYNC[route](proxy.base_url, proxy.token, preflight=True, max_tokens=50) as aclient:
        if entry == "complete_as":
            await aclient.complete_as(_Answer, _BIG, None, model)
        else:
            async with aclient.stream(_BIG, None, model) as astream:
                [delta async for delta in astream]


@pytest.mark.parametrize("kind", ["client", "async client", "router", "async router"])
@pytest.mark.parametrize("entry", ["complete_as", "stream"])
@pytest.mark.parametrize("route", ["chat", "messages"])
async def test_every_way_in_honours_the_preflight_as_complete_does(
    proxy: LiteLLMProxy, script: Script, route: ClientRoute, entry: str, kind: str
) -> None:
    """complete_as and stream check the window before sending, on every client and router,
    sync and async: the oversized log raises ContextWindowExceeded and reaches no upstream."""
    with pytest.raises(ContextWindowExceeded) as caught:
        await _every_way_in(proxy, route, entry, kind)
    assert caught.value.limit_tokens == 300
    assert script.requests == []


def _corpus() -> list[tuple[str, list[UserText]]]:
    from pathlib import Path

    fixtures = Path(__file__).resolve().parent.parent / "fixtures" / "conformance" / "responses"
    code = (Path(__file__).resolve().parents[2] / "nisse_llm" / "transport" / "core.py").read_text()
    texts = {
        "prose": "The agent keeps its log and sends it whole each turn. " * 60,
        "python": code[:6000],
        "json": "".join(p.read_text() for p in sorted(fixtures.glob("ant_*.json"))[:6]),
        "cjk": "上下文窗口已满，请压缩历史记录后重试。" * 80,
        "hex": bytes(range(256)).hex() * 6,
        "numbers": " ".join(str(n * 7919 % 100_003) for n in range(800)),
    }
    return [(name, [UserText(text=text)]) for name, text in texts.items()]


@pytest.mark.parametrize("combo", COMBOS, ids=COMBO_IDS)
def test_the_local_estimate_never_undercounts_the_proxys_count_by_more_than_measured(
    proxy: LiteLLMProxy, combo: Combo
) -> None:
    """The offline approximation against the proxy's counter on prose, code,
    JSON, CJK, hex and numbers: never more than 5 % below it (measured worst 2 %: docs/guides/cost.md)."""
    from nisse_llm.wire.models_info import estimate_input_tokens

    ratios: dict[str, float] = {}
    with _client(proxy, combo.route) as (client, _):
        for name, log in _corpus():
            counted = client.headroom(combo.model("priced"), log, None).input_tokens
            rendered = b"".join(
                client._core.renderer.render_parts(log, None, combo.model("priced"), None)
            )
            ratios[name] = estimate_input_tokens(rendered) / counted
    print(f"estimate/proxy {combo.id}: " + json.dumps({k: round(v, 2) for k, v in ratios.items()}))
    assert min(ratios.values()) >= 0.95, ratios


def test_the_new_endpoints_and_headers_never_carry_the_token(
    proxy: LiteLLMProxy, script: Script
) -> None:
    """The model list, the token counter's answer and a call's x-litellm headers, as the proxy
    sends them, hold no trace of the caller's token (what CallInfo and ModelInfo are read from)."""
    script.chat(reply("Hello!"))
    auth = {"authorization": f"Bearer {proxy.token}"}
    with httpx.Client(base_url=proxy.base_url, headers=auth, timeout=30) as http:
        answers = [
            http.get("/v1/model/info"),
            http.post(
                "/utils/token_counter",
                json={"model": "gpt-priced", "messages": [{"role": "user", "content": "hi"}]},
            ),
            http.post(
                "/chat/completions",
                json={"model": "gpt-priced", "messages": [{"role": "user", "content": "hi"}]},
            ),
        ]
    for answer in answers:
        assert answer.status_code == 200, answer.text
        assert proxy.token not in answer.text
        assert all(proxy.token not in value for value in answer.headers.values())
    assert "x-litellm-call-id" in answers[2].headers
