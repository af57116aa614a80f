"""Error bodies as the proxy sends them, in both shapes, and one tolerant reader.

Chat route and auth failures: ``{"error": {"message", "type", "param", "code"}}``.
Messages route: ``{"type": "error", "error": {"type", "message"}, "request_id"}``.
LiteLLM may send ``type``/``param`` as the string ``"None"`` and ``code`` as a string.
"""

from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

__all__ = ["AnthropicErrorBody", "ErrorDetail", "ErrorInfo", "OpenAIErrorBody", "read_error"]


class _Body(BaseModel):
    model_config = ConfigDict(extra="allow", defer_build=True)


class ErrorDetail(_Body):
    """The inner ``error`` object of either shape (unknown fields tolerated)."""

    message: Any = None
    type: Any = None
    param: Any = None
    code: Any = None


class OpenAIErrorBody(_Body):
    """``{"error": {...}}``: the chat route's and LiteLLM's own error shape."""

    error: ErrorDetail


class AnthropicErrorBody(_Body):
    """``{"type": "error", "error": {...}}``: the messages route's error shape."""

    type: str
    error: ErrorDetail
    request_id: str | None = None


class ErrorInfo(BaseModel):
    """What an error body said, normalised: ``None`` where the body did not say."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    type: str | None = None
    message: str | None = None
    code: str | None = None


# What is kept of a server's error fields: real types and codes are a few words, and the
# classifier quotes only the head of a message.
_TYPE_LIMIT = 120
_MESSAGE_LIMIT = 4000


def _text(value: Any, limit: int) -> str | None:
    if value is None or value == "None":
        return None
    text = value if isinstance(value, str) else str(value)
    return text[:limit]


def read_error(body: bytes) -> ErrorInfo | None:
    """The error type, message and code of a JSON error body, or ``None`` if it is not one."""
    try:
        parsed = OpenAIErrorBody.model_validate_json(body)
    except ValidationError:
        return None
    detail = parsed.error
    return ErrorInfo(
        type=_text(detail.type, _TYPE_LIMIT),
        message=_text(detail.message, _MESSAGE_LIMIT),
        code=_text(detail.code, _TYPE_LIMIT),
    )
