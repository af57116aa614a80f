"""One CLIENT span per model call, with the GenAI conventions' attributes, on both routes."""

from __future__ import annotations

import dataclasses

import pytest
from opentelemetry.trace import SpanKind, StatusCode

from nisse_llm import RequestOptions, UserText
from nisse_llm.testing import Script, Tokens, ToolUse, Turn, reply
from tests.corpus import READ_FILE
from tests.telemetry.conftest import Telemetry, attributes, traceparent_of
from tests.telemetry.helpers import (
    CALLERS,
    EVERY_ROUTE_CALLERS,
    MODELS,
    PROVIDERS,
    Caller,
    caller_id,
)

_COST_HEADERS = (
    ("x-litellm-call-id", "6f1c0c8e-0000-4000-8000-000000000001"),
    ("x-litellm-response-cost", "0.0125"),
)


@pytest.mark.parametrize("caller", CALLERS, ids=caller_id)
async def test_a_plain_call_is_one_client_span_with_every_attribute(
    otel: Telemetry, caller: Caller
) -> None:
    """A call is one CLIENT span named "chat {model}" carrying the request, response,
    usage and proxy facts, and nothing else."""
    turn = reply("It is the off-by-one in add().", usage=Tokens(1200, 40, cache_read=1000))
    script = Script().add(caller.route, dataclasses.replace(turn, headers=_COST_HEADERS))
    await caller.complete(script, [UserText(text="Why does test_add fail?")])

    span = otel.span()
    assert span.name == f"chat {caller.model}"
    assert span.kind is SpanKind.CLIENT
    assert span.status.status_code is StatusCode.UNSET
    seen = attributes(span)
    response_id = seen.pop("gen_ai.response.id")
    assert response_id.startswith("chatcmpl-" if caller.route == "openai_chat" else "msg_")
    expected = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": PROVIDERS[caller.route],
        "gen_ai.request.model": caller.model,
        "server.address": "proxy.test",
        "server.port": 4000,
        "gen_ai.request.max_tokens": 16384,
        "nisse_llm.route": caller.route,
        "gen_ai.response.model": caller.model,
        "gen_ai.response.finish_reasons": ("stop",),
        "gen_ai.usage.input_tokens": 1200,
        "gen_ai.usage.output_tokens": 40,
        "gen_ai.usage.cache_read.input_tokens": 1000,
        "gen_ai.usage.cache_creation.input_tokens": 0,
        "nisse_llm.attempts": 1,
        "http.response.status_code": 200,
        "nisse_llm.proxy.call_id": "6f1c0c8e-0000-4000-8000-000000000001",
        "nisse_llm.cost_usd": 0.0125,
        "nisse_llm.cost_source": "proxy",
    }
    if caller.route == "openai_chat":  # the chat route reports reasoning tokens apart
        expected["gen_ai.usage.reasoning.output_tokens"] = 0
    assert seen == expected
    # The request carried the span as its parent: the proxy's spans nest under it.
    assert script.requests[0].headers["traceparent"] == traceparent_of(span)


@pytest.mark.parametrize("caller", EVERY_ROUTE_CALLERS, ids=caller_id)
@pytest.mark.parametrize(
    ("turn", "expected"),
    [(reply("Done."), "stop"), (reply(ToolUse("read_file", {"path": "a.py"})), "tool_call")],
    ids=["text", "tool-call"],
)
async def test_every_route_reports_the_conventions_finish_reason(
    otel: Telemetry, caller: Caller, turn: Turn, expected: str
) -> None:
    """A reply's finish reason is the conventions' value on every route: the chat route's
    "tool_calls", Anthropic's "end_turn" and "tool_use", and a Responses reply's status
    "completed" are never reported as they came."""
    script = Script().add(caller.route, turn)
    await caller.complete(script, [UserText(text="Read a.py.")], tools=[READ_FILE])
    assert attributes(otel.span())["gen_ai.response.finish_reasons"] == (expected,)


@pytest.mark.parametrize("caller", CALLERS, ids=caller_id)
async def test_request_options_sent_are_span_attributes(otel: Telemetry, caller: Caller) -> None:
    """The ceiling and stop sequences a call sends are recorded (sampling only where sent)."""
    script = Script().add(caller.route, reply("ok"))
    options = RequestOptions(max_output_tokens=500, stop=["END"])
    model = caller.model
    if caller.route == "openai_chat":
        # Sampling goes only to models that take it: not OpenAI's reasoning models.
        options = options.model_copy(update={"temperature": 0.2, "top_p": 0.9})
        model = "gpt-4.1"
    await caller.complete(script, [UserText(text="hi")], options=options, model=model)

    seen = attributes(otel.span())
    assert seen["gen_ai.request.max_tokens"] == 500
    assert seen["gen_ai.request.stop_sequences"] == ("END",)
    if caller.route == "openai_chat":
        assert seen["gen_ai.request.temperature"] == 0.2
        assert seen["gen_ai.request.top_p"] == 0.9
        assert script.requests[0].json["temperature"] == 0.2
    else:
        assert "gen_ai.request.temperature" not in seen


@pytest.mark.parametrize("caller", CALLERS, ids=caller_id)
async def test_a_retried_call_is_one_span_counting_attempts_and_wait(
    otel: Telemetry, caller: Caller
) -> None:
    """A 429 retried once stays one span: two attempts, the wait taken, each request
    carrying the same traceparent."""
    from nisse_llm.testing import openai_failure

    script = Script().add(
        caller.route, openai_failure(429, "slow down", headers={"retry-after": "2"}), reply("ok")
    )
    await caller.complete(script, [UserText(text="hi")])

    span = otel.span()
    seen = attributes(span)
    assert seen["nisse_llm.attempts"] == 2
    assert seen["nisse_llm.waited_s"] == 2.0
    assert [r.headers["traceparent"] for r in script.requests] == [traceparent_of(span)] * 2


@pytest.mark.parametrize("caller", CALLERS, ids=caller_id)
async def test_a_streamed_call_records_stream_and_time_to_first_chunk(
    otel: Telemetry, caller: Caller
) -> None:
    """A stream's span says so and carries the time to its first chunk, within its duration."""
    script = Script().add(caller.route, reply("Streaming, then done.", usage=Tokens(300, 20)))
    completion = await caller.stream(script, [UserText(text="hi")])

    span = otel.span()
    seen = attributes(span)
    assert span.name == f"chat {caller.model}"
    assert seen["gen_ai.request.stream"] is True
    assert script.requests[0].json["stream"] is True
    assert script.requests[0].headers["accept"] == "text/event-stream"
    assert script.requests[0].headers["traceparent"] == traceparent_of(span)
    first = seen["gen_ai.response.time_to_first_chunk"]
    assert span.end_time is not None
    assert span.start_time is not None
    # The span's times are wall-clock, the chunk timing monotonic: allow the two clocks' skew
    # over a millisecond-long call (seen: 1.07 ms to the first chunk in a 1.04 ms span).
    assert 0 < first <= (span.end_time - span.start_time) / 1e9 + 1e-3
    assert seen["gen_ai.usage.input_tokens"] == completion.usage.input == 300
    assert seen["gen_ai.usage.output_tokens"] == 20
    assert seen["gen_ai.response.id"] == completion.response_id


async def test_a_stream_left_early_ends_its_span_as_closed(otel: Telemetry) -> None:
    """A stream the caller leaves before its end ends its span, unerrored, marked closed."""
    from nisse_llm import LiteLLMClient
    from nisse_llm.testing import ScriptedTransport

    script = Script().chat(reply("a long answer " * 20))
    with (
        LiteLLMClient("http://proxy.test:4000", "sk-x", transport=ScriptedTransport(script)) as c,
        c.stream([UserText(text="hi")], None, MODELS["openai_chat"]) as stream,
    ):
        next(iter(stream))
    span = otel.span()
    assert attributes(span)["nisse_llm.outcome"] == "closed"
    assert span.status.status_code is StatusCode.UNSET
    assert otel.points("gen_ai.client.operation.duration") == []


async def test_the_span_is_a_child_of_the_callers_current_span(otel: Telemetry) -> None:
    """A call made inside an agent's span is that span's child, in the same trace."""
    caller = Caller("anthropic_messages", asynchronous=False)
    tracer = otel.tracer_provider.get_tracer("agent")
    with tracer.start_as_current_span("invoke_agent coder") as agent:
        await caller.complete(Script().messages(reply("ok")), [UserText(text="hi")])
    call_span, agent_span = otel.spans()
    assert call_span.parent is not None
    assert call_span.parent.span_id == agent.get_span_context().span_id
    assert call_span.context.trace_id == agent_span.context.trace_id


async def test_uninstrument_stops_spans_and_trace_headers(otel: Telemetry) -> None:
    """After uninstrument() a call emits nothing and sends no trace context."""
    import nisse_llm

    nisse_llm.uninstrument()
    script = Script().chat(reply("ok"))
    await Caller("openai_chat", asynchronous=False).complete(script, [UserText(text="hi")])
    assert otel.spans() == []
    assert "traceparent" not in script.requests[0].headers


@pytest.mark.parametrize("route", ["openai_chat", "anthropic_messages"])
async def test_a_call_cancelled_while_waiting_ends_its_span(otel: Telemetry, route: str) -> None:
    """An async call cancelled while it waits on the proxy ends its span in error
    (``error.type`` CancelledError) instead of leaving it open."""
    import asyncio

    from nisse_llm.testing import slow

    script = Script().add(route, slow(reply("late"), 5))
    task = asyncio.create_task(
        Caller(route, asynchronous=True).complete(script, [UserText(text="hi")])
    )
    while not script.requests:
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    span = otel.span()
    assert span.status.status_code is StatusCode.ERROR
    assert attributes(span)["error.type"] == "CancelledError"
    (point,) = otel.points("gen_ai.client.operation.duration")
    assert (point.attributes or {})["error.type"] == "CancelledError"


@pytest.mark.parametrize("caller", CALLERS, ids=caller_id)
async def test_side_requests_carry_the_current_trace(otel: Telemetry, caller: Caller) -> None:
    """A pre-flight check's model-list request carries the caller's trace context; the
    call itself names its own span."""
    script = Script().add(caller.route, reply("ok"))
    tracer = otel.tracer_provider.get_tracer("agent")
    with tracer.start_as_current_span("invoke_agent coder"):
        await caller.complete(script, [UserText(text="hi")], client_options={"preflight": True})
    info, sent = script.requests  # the scripted upstream has no model list: 404, not checked
    assert info.path == "/v1/model/info"
    call, agent = otel.spans()
    assert info.headers["traceparent"] == traceparent_of(agent)
    assert sent.headers["traceparent"] == traceparent_of(call)
