"""Through the real proxy: the agent's trace reaches the proxy's own spans and the provider.

LiteLLM 1.108.7 forwards a client's ``traceparent`` upstream only with its ``otel`` callback
on and ``forward_traceparent_to_llm_provider: true`` (``forward_client_headers_to_llm_api``
forwards ``x-`` headers alone: measured). The callback needs the OpenTelemetry SDK, which
LiteLLM does not install: ``make proxy`` puts it in ``.venv-proxy-otel`` (or
``NISSE_PROXY_OTEL_PATH``), on this proxy's PYTHONPATH only. Its console exporter prints
the proxy's spans, read back here.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nisse_llm import AnthropicPassthroughClient, LiteLLMClient, UserText
from nisse_llm.testing import ScriptedServer, reply
from nisse_llm.testing.proxy import LiteLLMProxy, ProxyModel
from tests.integration.conftest import litellm_bin  # noqa: F401 (the session fixture)
from tests.telemetry.conftest import Telemetry, traceparent_of
from tests.telemetry.helpers import MODELS, ROUTES

pytestmark = pytest.mark.proxy

SDK_ENV = "NISSE_PROXY_OTEL_PATH"
_CLIENTS = {"openai_chat": LiteLLMClient, "anthropic_messages": AnthropicPassthroughClient}
_PATHS = {"openai_chat": "/chat/completions", "anthropic_messages": "/v1/messages"}


def _sdk_path() -> Path:
    path = Path(os.environ.get(SDK_ENV) or Path(__file__).parents[2] / ".venv-proxy-otel")
    if not (path / "opentelemetry" / "sdk").is_dir():
        pytest.fail(
            f"the proxy's OpenTelemetry SDK is not at {path}: run `make proxy` (it installs it "
            f"beside the proxy), or point {SDK_ENV} at a folder holding opentelemetry-sdk at "
            "the proxy's opentelemetry-api version",
            pytrace=False,
        )
    return path


@pytest.fixture(scope="module")
def traced(litellm_bin: Path) -> Iterator[tuple[ScriptedServer, LiteLLMProxy]]:  # noqa: F811
    """A proxy with its otel callback printing spans, in front of its own scripted upstream."""
    with (
        ScriptedServer() as upstream,
        LiteLLMProxy(
            upstream.base_url,
            executable=litellm_bin,
            models=[
                ProxyModel(MODELS["openai_chat"], "openai"),
                ProxyModel(MODELS["anthropic_messages"], "anthropic"),
            ],
            settings={
                "litellm_settings": {
                    "callbacks": ["otel"],
                    "forward_traceparent_to_llm_provider": True,
                }
            },
            env={
                "PYTHONPATH": str(_sdk_path()),
                "OTEL_EXPORTER": "console",
                "OTEL_BSP_SCHEDULE_DELAY": "100",
            },
        ) as proxy,
    ):
        yield upstream, proxy


def _proxy_spans(
    proxy: LiteLLMProxy, trace_id: int, *, wanted: set[str]
) -> dict[str, dict[str, Any]]:
    """The spans of ``trace_id`` the proxy's console exporter printed, by name (waiting up
    to 10 s for the ``wanted`` ones: spans are exported in batches, a stream's late)."""
    decoder = json.JSONDecoder()
    deadline = time.monotonic() + 10
    while True:
        out = proxy.output(tail=2_000_000)
        spans, at = {}, out.find('{\n    "name"')
        while at >= 0:
            span, end = decoder.raw_decode(out, at)
            if int(span["context"]["trace_id"], 16) == trace_id:
                spans[span["name"]] = span
            at = out.find('{\n    "name"', end)
        if wanted <= set(spans) or time.monotonic() > deadline:
            return spans
        time.sleep(0.1)


@pytest.mark.parametrize("streamed", [False, True], ids=["complete", "stream"])
@pytest.mark.parametrize("route", ROUTES)
def test_the_agents_trace_reaches_the_proxys_spans_and_the_upstream(
    otel: Telemetry, traced: tuple[ScriptedServer, LiteLLMProxy], route: str, streamed: bool
) -> None:
    """The upstream receives the traceparent naming the call span (the agent's trace), and
    the proxy's own request spans are that call span's children."""
    upstream, proxy = traced
    upstream.script.reset()
    upstream.script.add(route, reply("traced"))
    model = MODELS[route]
    tracer = otel.tracer_provider.get_tracer("agent")
    with (
        tracer.start_as_current_span("invoke_agent coder") as agent,
        _CLIENTS[route](proxy.base_url, proxy.token) as client,
    ):
        if streamed:
            with client.stream([UserText(text="hi")], None, model) as stream:
                list(stream)
        else:
            client.complete([UserText(text="hi")], None, model)

    call = next(span for span in otel.spans() if span.name == f"chat {model}")
    call_context = call.get_span_context()
    assert call_context is not None
    assert call_context.trace_id == agent.get_span_context().trace_id
    (request,) = upstream.script.requests
    assert request.headers["traceparent"] == traceparent_of(call)

    server_name = f"POST {_PATHS[route]}"
    by_name = _proxy_spans(proxy, call_context.trace_id, wanted={server_name, "litellm_request"})
    server = by_name[server_name]
    assert server["kind"] == "SpanKind.SERVER"
    assert int(server["parent_id"], 16) == call_context.span_id
    assert int(by_name["litellm_request"]["parent_id"], 16) == call_context.span_id
