"""The OpenTelemetry tracer `nisse_llm.instrument()` installs: spans and metrics per call and tool.

Names, units and bucket boundaries are the GenAI semantic conventions' (schema 1.42.0,
status Development); nisse_llm's own attributes sit under ``nisse_llm.``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from opentelemetry import metrics, propagate, trace
from opentelemetry.trace import SpanKind, Status, StatusCode

from nisse_llm.config._egress import watched_tokens
from nisse_llm.config.option_rules import is_anthropic_model
from nisse_llm.errors import LLMError
from nisse_llm.events.canonical import (
    Completion,
    HasToolSpecs,
    LogLike,
    ToolCall,
    ToolResult,
    ToolsLike,
    ToolSpec,
    Usage,
)
from nisse_llm.telemetry import _content
from nisse_llm.transport._classify import redact

if TYPE_CHECKING:
    from opentelemetry.metrics import Histogram, Meter, MeterProvider
    from opentelemetry.trace import Span, TracerProvider

    from nisse_llm.render.call import CallParams
    from nisse_llm.transport.core import Call

__all__ = ["DURATION_BUCKETS", "TOKEN_BUCKETS", "OpenTelemetryTracer"]

#: The conventions' advice for ``gen_ai.client.operation.duration`` and both chunk timings (s).
DURATION_BUCKETS = (
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
)  # fmt: skip
#: The conventions' advice for ``gen_ai.client.token.usage`` (tokens).
TOKEN_BUCKETS = (
    1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864,
)  # fmt: skip

_OPERATION = "chat"
_TOOL_OPERATION = "execute_tool"
_AGENT_OPERATION = "invoke_agent"


def _provider(call: Call) -> str:
    """``anthropic`` or ``openai``: who serves the model behind the proxy, by the route and
    the model rules the renderers use."""
    anthropic = call.core.route.family == "anthropic" or is_anthropic_model(call.model)
    return "anthropic" if anthropic else "openai"


def _histogram(
    meter: Meter,
    name: str,
    unit: str,
    description: str,
    buckets: tuple[float, ...] = DURATION_BUCKETS,
) -> Histogram:
    """A histogram with the conventions' bucket advice (``buckets``: durations unless told)."""
    return meter.create_histogram(
        name, unit=unit, description=description, explicit_bucket_boundaries_advisory=buckets
    )


class OpenTelemetryTracer:
    """Spans from a tracer provider, histograms from a meter provider (globals when None)."""

    def __init__(
        self,
        tracer_provider: TracerProvider | None,
        meter_provider: MeterProvider | None,
        *,
        capture_content: bool,
        version: str,
    ) -> None:
        self.tracer = trace.get_tracer("nisse_llm", version, tracer_provider)
        meter = metrics.get_meter("nisse_llm", version, meter_provider)
        self.capture_content = capture_content
        self.duration = _histogram(
            meter, "gen_ai.client.operation.duration", "s", "GenAI operation duration."
        )
        self.tokens = _histogram(
            meter,
            "gen_ai.client.token.usage",
            "{token}",
            "Number of input and output tokens used.",
            TOKEN_BUCKETS,
        )
        self.first_chunk = _histogram(
            meter,
            "gen_ai.client.operation.time_to_first_chunk",
            "s",
            "Time to receive the first chunk of a streamed reply.",
        )
        self.per_chunk = _histogram(
            meter,
            "gen_ai.client.operation.time_per_output_chunk",
            "s",
            "Time per output chunk after the first, of a streamed reply.",
        )

    def call(self, call: Call, params: CallParams) -> _CallSpan:
        return _CallSpan(self, call, params)

    def context_headers(self) -> dict[str, str]:
        headers: dict[str, str] = {}
        propagate.inject(headers)
        return headers

    @contextmanager
    def tool(
        self, call: ToolCall, spec: ToolSpec | None, *, server: str | None = None
    ) -> Iterator[_ToolSpan]:
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": _TOOL_OPERATION,
            "gen_ai.tool.name": call.tool,
            "gen_ai.tool.call.id": call.call_id,
            "gen_ai.tool.type": "function" if server is None else "extension",
        }
        if server is not None:  # the MCP semantic conventions' method, and which server
            attributes["mcp.method.name"] = "tools/call"
            attributes["nisse_llm.mcp.server"] = server
        if spec is not None and spec.description:
            attributes["gen_ai.tool.description"] = spec.description
        if self.capture_content:
            attributes["gen_ai.tool.call.arguments"] = _redacted(_content.to_text(call.arguments))
        # An exception here is a tool's own (propagate_errors=True).
        with self._internal(f"{_TOOL_OPERATION} {call.tool}", attributes) as span:
            yield _ToolSpan(span, self.capture_content)

    @contextmanager
    def agent(self, name: str, conversation_id: str | None) -> Iterator[_AgentSpan]:
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": _AGENT_OPERATION,
            "gen_ai.agent.name": name,
        }
        if conversation_id is not None:
            attributes["gen_ai.conversation.id"] = conversation_id
        # An exception here is a limit reached, a failed call or a cancellation.
        with self._internal(f"{_AGENT_OPERATION} {name}", attributes) as span:
            yield _AgentSpan(span)

    @contextmanager
    def _internal(self, name: str, attributes: dict[str, Any]) -> Iterator[Span]:
        """A current in-process span that records an exception leaving it, by its class
        as ``error.type`` (the tool and agent spans)."""
        with self.tracer.start_as_current_span(
            name,
            kind=SpanKind.INTERNAL,
            attributes=attributes,
            record_exception=True,
            set_status_on_exception=True,
        ) as span:
            try:
                yield span
            except BaseException as exc:
                span.set_attribute("error.type", type(exc).__name__)
                raise


class _AgentSpan:
    __slots__ = ("_span",)

    def __init__(self, span: Span) -> None:
        self._span = span

    def ended(self, steps: int, usage: Usage) -> None:
        self._span.set_attributes(
            {
                "gen_ai.usage.input_tokens": usage.input,
                "gen_ai.usage.output_tokens": usage.output,
                "gen_ai.usage.cache_read.input_tokens": usage.cache_read,
                "gen_ai.usage.cache_creation.input_tokens": usage.cache_write,
                "nisse_llm.steps": steps,
            }
        )


class _ToolSpan:
    __slots__ = ("_capture", "_span")

    def __init__(self, span: Span, capture: bool) -> None:
        self._span = span
        self._capture = capture

    def ended(self, result: ToolResult, error_type: str | None) -> None:
        span = self._span
        if error_type is not None:
            span.set_attribute("error.type", error_type)
            span.set_status(Status(StatusCode.ERROR, error_type))
        elif self._capture:
            span.set_attribute("gen_ai.tool.call.result", _redacted(result.output))


class _CallSpan:
    """One call's span and metric attributes, from its start to its one end."""

    __slots__ = (
        "_chunks",
        "_common",
        "_ended",
        "_last_chunk",
        "_span",
        "_started",
        "_t",
        "headers",
    )

    def __init__(self, tracer: OpenTelemetryTracer, call: Call, params: CallParams) -> None:
        self._t = tracer
        options = params.options
        core = call.core
        endpoint = core.endpoint
        # What samplers may read: set when the span starts.
        common: dict[str, Any] = {
            "gen_ai.operation.name": _OPERATION,
            "gen_ai.provider.name": _provider(call),
            "gen_ai.request.model": call.model,
            "server.address": endpoint.host,
            "server.port": endpoint.port or (443 if endpoint.scheme == "https" else 80),
        }
        self._common = common
        attributes = dict(common)
        max_tokens = core.max_tokens
        if options is not None:
            max_tokens = options.max_output_tokens or max_tokens
            if options.temperature is not None:
                attributes["gen_ai.request.temperature"] = options.temperature
            if options.top_p is not None:
                attributes["gen_ai.request.top_p"] = options.top_p
            if options.stop:
                attributes["gen_ai.request.stop_sequences"] = list(options.stop)
        attributes["gen_ai.request.max_tokens"] = max_tokens
        if call.streamed:
            attributes["gen_ai.request.stream"] = True
        if core.conversation_id is not None:
            attributes["gen_ai.conversation.id"] = core.conversation_id
        attributes["nisse_llm.route"] = core.route.name
        if call.role is not None:
            attributes["nisse_llm.role"] = call.role
        if tracer.capture_content:
            attributes.update(_captured_request(params.events, params.tools, params.system))
        self._started = time.perf_counter()
        self._span = tracer.tracer.start_span(
            f"{_OPERATION} {call.model}", kind=SpanKind.CLIENT, attributes=attributes
        )
        self.headers: dict[str, str] = {}
        propagate.inject(self.headers, context=trace.set_span_in_context(self._span))
        self._chunks: list[float] = []
        self._last_chunk = 0.0
        self._ended = False

    def chunk(self) -> None:
        now = time.perf_counter()
        if not self._chunks:
            self._chunks.append(now - self._started)
        else:
            self._chunks.append(now - self._last_chunk)
        self._last_chunk = now

    def succeeded(self, call: Call, completion: Completion) -> None:
        if self._ended:
            return
        span = self._span
        usage = completion.usage
        attributes: dict[str, Any] = {
            "gen_ai.usage.input_tokens": usage.input,
            "gen_ai.usage.output_tokens": usage.output,
            "gen_ai.usage.cache_read.input_tokens": usage.cache_read,
            "gen_ai.usage.cache_creation.input_tokens": usage.cache_write,
            "gen_ai.response.finish_reasons": [_content.finish_reason(completion.stop_reason)],
        }
        if completion.reasoning_tokens is not None:
            attributes["gen_ai.usage.reasoning.output_tokens"] = completion.reasoning_tokens
        if completion.response_id is not None:
            attributes["gen_ai.response.id"] = completion.response_id
        if completion.response_model is not None:
            attributes["gen_ai.response.model"] = completion.response_model
        if self._t.capture_content:
            attributes["gen_ai.output.messages"] = _redacted(_content.output_messages(completion))
        span.set_attributes(attributes)
        measured = dict(self._common)
        if completion.response_model is not None:
            measured["gen_ai.response.model"] = completion.response_model
        tokens = self._t.tokens
        tokens.record(usage.input, {**measured, "gen_ai.token.type": "input"})
        tokens.record(usage.output, {**measured, "gen_ai.token.type": "output"})
        self._end(call, measured)

    def failed(self, call: Call, error: LLMError) -> None:
        if self._ended:
            return
        kind = type(error).__name__
        self._span.set_attribute("error.type", kind)
        self._span.set_status(Status(StatusCode.ERROR, error.message[:500]))
        self._end(call, {**self._common, "error.type": kind}, call_id=error.call_id)

    def interrupted(self, call: Call, kind: str) -> None:
        if self._ended:
            return
        self._span.set_attribute("error.type", kind)
        self._span.set_status(Status(StatusCode.ERROR, f"interrupted: {kind}"))
        self._end(call, {**self._common, "error.type": kind})

    def closed(self, call: Call) -> None:
        if self._ended:
            return
        self._span.set_attribute("nisse_llm.outcome", "closed")
        self._end(call, None)

    def _end(
        self, call: Call, measured: dict[str, Any] | None, *, call_id: str | None = None
    ) -> None:
        """Record the exchange's own facts and the timings, then end the span once."""
        self._ended = True
        span = self._span
        info = call.info
        facts: dict[str, Any] = {"nisse_llm.attempts": call.attempts}
        if call.waited_s:
            facts["nisse_llm.waited_s"] = call.waited_s
        if call.status is not None:
            facts["http.response.status_code"] = call.status
        call_id = call_id or (None if info is None else info.call_id)
        if call_id is not None:
            facts["nisse_llm.proxy.call_id"] = call_id
        if info is not None and info.cost_usd is not None:
            facts["nisse_llm.cost_usd"] = float(info.cost_usd)
            facts["nisse_llm.cost_source"] = info.cost_source or "proxy"
        chunks = self._chunks
        if chunks:
            span.set_attribute("gen_ai.response.time_to_first_chunk", chunks[0])
        span.set_attributes(facts)
        if measured is not None:
            self._t.duration.record(time.perf_counter() - self._started, measured)
            timed = {k: v for k, v in measured.items() if k != "error.type"}
            if chunks:
                self._t.first_chunk.record(chunks[0], timed)
            for gap in chunks[1:]:
                self._t.per_chunk.record(gap, timed)
        span.end()


def _redacted(text: str) -> str:
    """``text`` without any proxy token a client holds (a log may quote one by accident)."""
    for token in watched_tokens():
        text = redact(text, token)
    return text


def _captured_request(events: LogLike, tools: ToolsLike, system: str | None) -> dict[str, str]:
    """The request's content attributes, tokens redacted. Only lists and tuples are read
    (an iterator is the renderer's to consume), and a log the renderer will refuse gives
    none: its error is the call's."""
    captured: dict[str, str] = {}
    try:
        if isinstance(events, list | tuple):
            captured["gen_ai.input.messages"] = _content.input_messages(events)
        if (isinstance(tools, list | tuple) and tools) or isinstance(tools, HasToolSpecs):
            captured["gen_ai.tool.definitions"] = _content.tool_definitions(tools)
    except (TypeError, ValueError):
        return {}
    if system:
        captured["gen_ai.system_instructions"] = _content.system_instructions(system)
    return {key: _redacted(value) for key, value in captured.items()}
