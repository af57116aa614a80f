"""Where telemetry plugs in: `tracer` is None until `nisse_llm.instrument()` sets it.

Speed: an agent that never instruments pays one module-level None check when a call
begins and one attribute check per call end and per streamed chunk; nothing of
OpenTelemetry is imported. The implementation lives in `nisse_llm.telemetry`.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    from nisse_llm.errors import LLMError
    from nisse_llm.events.canonical import (
        Completion,
        ToolCall,
        ToolResult,
        ToolSpec,
        Usage,
    )

__all__ = ["AgentTrace", "CallTrace", "ToolTrace", "Tracer", "tracer"]

#: The call a trace follows: the transport's `Call` (a type parameter, so this bottom
#: module need not name a module above it).
Call = TypeVar("Call", contravariant=True)
#: What the call asks: the render layer's `CallParams` (a type parameter, likewise).
Params = TypeVar("Params", contravariant=True)


class CallTrace(Protocol[Call]):
    """One model call's span, from `ClientState.begin` to the call's end."""

    #: Trace-context headers (``traceparent``, ``tracestate``) for the call's requests.
    headers: dict[str, str]

    def chunk(self) -> None:
        """A read of a streamed reply completed at least one delta."""

    def succeeded(self, call: Call, completion: Completion) -> None:
        """The reply was parsed: record it and end the span."""

    def failed(self, call: Call, error: LLMError) -> None:
        """The call raises ``error``: record it and end the span."""

    def closed(self, call: Call) -> None:
        """The caller left a stream before its end: end the span."""

    def interrupted(self, call: Call, kind: str) -> None:
        """The exchange was cancelled or interrupted (``kind``: the exception's class)."""


class ToolTrace(Protocol):
    """One tool execution's span (current while the tool runs)."""

    def ended(self, result: ToolResult, error_type: str | None) -> None:
        """The tool answered ``result``; ``error_type`` names what failed, if anything."""


class AgentTrace(Protocol):
    """One run of a task's loop (current while it runs: its calls' and tools' spans are
    its children)."""

    def ended(self, steps: int, usage: Usage) -> None:
        """The run made ``steps`` model calls, which used ``usage`` in all."""


class Tracer(Protocol[Call, Params]):
    """What `nisse_llm.instrument()` installs."""

    def call(self, call: Call, params: Params) -> CallTrace[Call]:
        """Start the span of a model call asking ``params`` (its request is not rendered
        yet)."""

    def tool(
        self, call: ToolCall, spec: ToolSpec | None, *, server: str | None = None
    ) -> AbstractContextManager[ToolTrace]:
        """A span around one tool execution, current inside the ``with`` (``server``: the
        MCP server answering the call, if one does)."""

    def context_headers(self) -> dict[str, str]:
        """Trace-context headers naming the current span (for requests beside a call)."""

    def agent(self, name: str, conversation_id: str | None) -> AbstractContextManager[AgentTrace]:
        """A span around one run of a task's loop, current inside the ``with``; an
        exception leaving it is the span's error."""


#: The installed tracer, or None (the default: no telemetry, no cost).
tracer: Tracer[Any, Any] | None = None
