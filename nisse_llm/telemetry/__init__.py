"""Traces and metrics in the OpenTelemetry GenAI conventions: `instrument` and `uninstrument`.

Needs the ``otel`` extra (``opentelemetry-api``); the application brings the SDK and its
exporters. Until `instrument` is called nothing of OpenTelemetry is imported.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from nisse_llm import _telemetry

if TYPE_CHECKING:
    from opentelemetry.metrics import MeterProvider
    from opentelemetry.trace import TracerProvider

__all__ = ["CAPTURE_CONTENT_ENV", "instrument", "uninstrument"]

#: The conventions' switch for recording message content (``true`` turns it on).
CAPTURE_CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"


def instrument(
    tracer_provider: TracerProvider | None = None,
    meter_provider: MeterProvider | None = None,
    capture_content: bool = False,
) -> None:
    """Emit a span and metrics for every model call and tool run from now on, process-wide.

    ``tracer_provider`` / ``meter_provider`` default to OpenTelemetry's global ones.
    Message content (inputs, outputs, system prompt, tool definitions and tool arguments
    and results) is recorded only with ``capture_content=True`` or
    ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``; never a proxy token, never
    an image's bytes. Calling it again replaces the previous set-up.
    """
    try:
        from nisse_llm.telemetry._otel import OpenTelemetryTracer
    except ImportError as exc:  # pragma: no cover - depends on what is installed
        raise ImportError(
            "nisse_llm.instrument() needs OpenTelemetry: pip install 'nisse-llm[otel]'"
        ) from exc
    from nisse_llm._version import __version__

    capture = capture_content or os.environ.get(CAPTURE_CONTENT_ENV, "").strip().lower() == "true"
    _telemetry.tracer = OpenTelemetryTracer(
        tracer_provider, meter_provider, capture_content=capture, version=__version__
    )


def uninstrument() -> None:
    """Stop emitting telemetry: calls begun afterwards cost nothing again."""
    _telemetry.tracer = None
