"""The error tree: every failure says what the caller must do about it.

::

    LLMError                 fail the turn: the request or the answer was wrong
    ├── ConfigError          fix the configuration; nothing was sent
    ├── ModelNotServed       the proxy serves no such model: fix the role's model or the proxy
    ├── RenderError          the canonical log is corrupt; nothing was sent
    ├── ContextWindowExceeded  the log outgrew the model's window: keep the work, shorten
    │                          the log (compact, drop old tool output), call again
    ├── TruncatedResponse    the model hit the output ceiling; raise it or retry the turn
    ├── ModelRefusal         the model declined (refusal or content filter); a failed turn
    ├── OutputValidationError  the answer did not fit the requested type; a failed turn
    └── UpstreamUnavailable  keep the work and resume later: not the work's fault
        ├── BudgetExhausted  keep the work; resume after the operator restores the budget
        └── StreamInterrupted  a streamed reply broke mid-way; what arrived rides along

A caller's own mistake (an unknown role, a prompt passed where a log belongs) is not a
failed model call: it raises `UnknownRoleError` (a `ValueError`) or a plain `TypeError`,
outside this tree, so an agent's ``except LLMError`` never hides a bug in the agent.

Status, the server's error type and message, the proxy's call id, and any wait the server
asked for ride on the exception so the caller's resume logic can act on them without
parsing text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

# What a broken stream delivered is defined apart and loaded with the first stream error
# (or the first use of its name here), so the error tree itself defines no dataclasses.
if TYPE_CHECKING:
    from nisse_llm._partial import PartialReply, PartialToolCall

__all__ = [
    "BudgetExhausted",
    "ConfigError",
    "ContextWindowExceeded",
    "LLMError",
    "ModelNotServed",
    "ModelRefusal",
    "OutputValidationError",
    "PartialReply",
    "PartialToolCall",
    "RenderError",
    "StreamInterrupted",
    "TruncatedResponse",
    "UnknownRoleError",
    "UpstreamUnavailable",
]


class UnknownRoleError(ValueError):
    """A caller asked for a role that does not exist: a bug in the caller, not a failed call."""

    def __init__(self, role: object, roles: tuple[str, ...]) -> None:
        super().__init__(f"unknown role {role!r}; the roles are {', '.join(roles)}")
        #: The role asked for, and the roles that exist.
        self.role = role
        self.roles = roles


class LLMError(RuntimeError):
    """The request or its answer was wrong: fail the turn and clean up."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        error_type: str | None = None,
        server_message: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        #: HTTP status of the response that caused this, when there was one.
        self.status = status
        #: The server's own error type (``error.type`` in either body shape), if parsed.
        self.error_type = error_type
        #: The server's own error message, truncated and redacted, if parsed.
        self.server_message = server_message
        #: The proxy's id for the call (``x-litellm-call-id``) when a response arrived with
        #: one: what an operator searches the proxy's logs and spend records for.
        self.call_id: str | None = None

    def __str__(self) -> str:
        return self.message


class ConfigError(LLMError):
    """The configuration is incomplete or invalid: fix it; nothing was sent."""

    def __init__(self, message: str, *, problems: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        #: One line per offending key, each naming the TOML key, env variable and source.
        self.problems = problems


class ModelNotServed(LLMError):
    """The proxy serves no model by this name: fix the configuration (the role's model, or
    the proxy's model list); retrying cannot help."""

    def __init__(
        self,
        message: str,
        *,
        model: str,
        role: str | None = None,
        status: int | None = None,
        error_type: str | None = None,
        server_message: str | None = None,
    ) -> None:
        super().__init__(
            message, status=status, error_type=error_type, server_message=server_message
        )
        #: The model name the proxy refused.
        self.model = model
        #: The router role the call was made for (None for a direct client call).
        self.role = role


class RenderError(LLMError):
    """The canonical log cannot be rendered (for example a result without its call)."""


class ContextWindowExceeded(LLMError):
    """The request does not fit the model's context window: keep the work, shorten the log
    (compact it, drop old tool output) and call again; never retried as it is."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        error_type: str | None = None,
        server_message: str | None = None,
        limit_tokens: int | None = None,
        requested_tokens: int | None = None,
    ) -> None:
        super().__init__(
            message, status=status, error_type=error_type, server_message=server_message
        )
        #: The window's size in tokens, when the refusal (or the pre-flight check) stated it.
        self.limit_tokens = limit_tokens
        #: The tokens the request needed, when stated (input, plus the output ceiling where
        #: the provider counts it against the window).
        self.requested_tokens = requested_tokens


class TruncatedResponse(LLMError):
    """The model was cut off at the output ceiling: a failed turn, never a partial success."""


class ModelRefusal(LLMError):
    """The model declined to answer (a refusal or a content filter): a failed turn."""


class UpstreamUnavailable(LLMError):
    """The proxy or provider failed for reasons unrelated to the request: keep the work."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        error_type: str | None = None,
        server_message: str | None = None,
        retry_after_s: float | None = None,
    ) -> None:
        super().__init__(
            message, status=status, error_type=error_type, server_message=server_message
        )
        #: The wait the server asked for, when it asked (also when it was beyond the cap).
        self.retry_after_s = retry_after_s


class BudgetExhausted(UpstreamUnavailable):
    """A spend limit at the proxy is gone: keep the work, never retry, tell the operator."""


class StreamInterrupted(UpstreamUnavailable):
    """The stream broke before its final event (or sent an error): keep the work, resume later."""

    def __init__(
        self,
        message: str,
        *,
        partial: PartialReply,
        error_type: str | None = None,
        server_message: str | None = None,
    ) -> None:
        super().__init__(message, error_type=error_type, server_message=server_message)
        #: Everything that arrived before the break, for diagnosis (never a result to act on).
        self.partial = partial


class OutputValidationError(LLMError):
    """The model's answer did not validate into the requested type: a failed turn.

    ``raw`` is what the model answered (the answer tool's arguments as JSON, or its text
    when it called no answer tool); ``errors`` is pydantic's ``errors()`` list for it;
    ``attempts`` counts the calls made, repairs included; ``events`` is the whole exchange
    (every call answered, so it can be appended to the log) and ``usage`` its summed usage.
    """

    def __init__(
        self,
        message: str,
        *,
        raw: str,
        errors: list[dict[str, Any]],
        attempts: int = 1,
        events: list[Any] | None = None,
        usage: Any = None,
    ) -> None:
        super().__init__(message)
        #: The answer as the model gave it.
        self.raw = raw
        #: pydantic's error list (``loc``, ``msg``, ``type``, ``input``...) for ``raw``.
        self.errors = errors
        #: How many calls were made, the first and every repair.
        self.attempts = attempts
        #: The canonical events of every attempt, with their tool calls answered.
        self.events: list[Any] = [] if events is None else events
        #: The `Usage` of every attempt, summed (``None`` when no call completed).
        self.usage = usage


def __getattr__(name: str) -> Any:
    if name in ("PartialReply", "PartialToolCall"):
        from nisse_llm import _partial

        return getattr(_partial, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
