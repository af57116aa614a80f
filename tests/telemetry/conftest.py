"""An OpenTelemetry SDK with in-memory exporters, and nisse_llm instrumented against it."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import nisse_llm
from nisse_llm.telemetry import CAPTURE_CONTENT_ENV


@dataclass
class Telemetry:
    """What the instrumented code emitted: finished spans and metric points."""

    tracer_provider: TracerProvider
    spans_exporter: InMemorySpanExporter
    reader: InMemoryMetricReader

    def spans(self) -> list[ReadableSpan]:
        return list(self.spans_exporter.get_finished_spans())

    def span(self) -> ReadableSpan:
        """The one span emitted (fails on any other count)."""
        spans = self.spans()
        assert len(spans) == 1, [s.name for s in spans]
        return spans[0]

    def points(self, name: str) -> list[HistogramDataPoint]:
        """Every histogram point of the metric ``name`` (empty when it was never recorded)."""
        data = self.reader.get_metrics_data()
        found: list[HistogramDataPoint] = []
        for resource in data.resource_metrics if data is not None else ():
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    if metric.name == name:
                        found += [
                            p for p in metric.data.data_points if isinstance(p, HistogramDataPoint)
                        ]
        return found

    def metric_units(self) -> dict[str, str]:
        data = self.reader.get_metrics_data()
        return {
            metric.name: metric.unit
            for resource in data.resource_metrics
            for scope in resource.scope_metrics
            for metric in scope.metrics
        }


def _setup(capture_content: bool) -> Iterator[Telemetry]:
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    nisse_llm.instrument(tracer_provider, meter_provider, capture_content=capture_content)
    try:
        yield Telemetry(tracer_provider, exporter, reader)
    finally:
        nisse_llm.uninstrument()
        meter_provider.shutdown()
        tracer_provider.shutdown()


@pytest.fixture
def otel(monkeypatch: pytest.MonkeyPatch) -> Iterator[Telemetry]:
    """nisse_llm instrumented with content capture off (the default)."""
    monkeypatch.delenv(CAPTURE_CONTENT_ENV, raising=False)
    yield from _setup(capture_content=False)


@pytest.fixture
def otel_content(monkeypatch: pytest.MonkeyPatch) -> Iterator[Telemetry]:
    """nisse_llm instrumented with content capture on."""
    monkeypatch.delenv(CAPTURE_CONTENT_ENV, raising=False)
    yield from _setup(capture_content=True)


def traceparent_of(span: ReadableSpan) -> str:
    """The W3C traceparent naming ``span`` as the parent, with its flags."""
    context = span.get_span_context()
    assert context is not None
    return f"00-{context.trace_id:032x}-{context.span_id:016x}-{int(context.trace_flags):02x}"


def attributes(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})
