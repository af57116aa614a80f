"""OpenAI chat-completions replies -> canonical events (the reply side of the chat route).

Parse rules: ``choices[0]`` is the answer (others are ignored); ``finish_reason``
``"length"`` raises `TruncatedResponse`; a non-empty ``refusal`` or ``finish_reason``
``"content_filter"`` raises `ModelRefusal`; provider call ids are replaced by minted ids;
LiteLLM's ``thinking_blocks`` (else ``reasoning_content``) become `Reasoning` events.
Anything else malformed is an `LLMError`.
"""

from __future__ import annotations

import reprlib
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from nisse_llm.errors import LLMError
from nisse_llm.events.canonical import (
    AssistantText,
    CanonicalEvent,
    Completion,
    Reasoning,
    Usage,
)
from nisse_llm.render._reply import FILTERED, completion, json_call, refused, truncated
from nisse_llm.wire.openai_chat_reply import (
    OpenAIChatResponse,
    OpenAIChatResponseMessage,
    OpenAIChatUsage,
)

__all__ = ["parse_chat_completion"]


def parse_chat_completion(
    body: bytes | str | Mapping[str, Any],
    *,
    requested_model: str,
    max_tokens: int | None = None,
) -> Completion:
    """A chat-completions reply body as canonical events, usage and stop reason (module rules)."""
    response = _map_response(body)
    if not response.choices:
        raise LLMError("malformed chat completion: it has no choices")
    choice = response.choices[0]
    message = choice.message
    produced_by = response.model or requested_model
    if choice.finish_reason == "length":
        raise truncated(produced_by, "max_tokens", max_tokens)
    if message.refusal or choice.finish_reason == "content_filter":
        raise refused(produced_by, message.refusal or FILTERED)
    events: list[CanonicalEvent] = []
    events.extend(_map_reasoning(message, requested_model, response.model))
    text = _map_text(message)
    if text:
        events.append(AssistantText(text=text, model=produced_by))
    events.extend(
        json_call(call.function.name, call.function.arguments) for call in message.tool_calls or ()
    )
    return completion(
        events,
        _map_usage(response.usage),
        choice.finish_reason,
        response.model,
        response.id,
        _reasoning_tokens(response.usage),
    )


def _reasoning_tokens(usage: OpenAIChatUsage | None) -> int | None:
    details = None if usage is None else usage.completion_tokens_details
    return None if details is None else details.reasoning_tokens


def _map_response(body: bytes | str | Mapping[str, Any]) -> OpenAIChatResponse:
    try:
        if isinstance(body, bytes | str):
            return OpenAIChatResponse.model_validate_json(body)
        if isinstance(body, Mapping):
            return OpenAIChatResponse.model_validate(dict(body))
    except ValueError as exc:  # ValidationError, or a str that cannot be encoded
        raise _map_bad_body(body, exc) from None
    raise LLMError(f"a chat completion must be bytes, str or a mapping, not {type(body).__name__}")


_BOUNDED_REPR = reprlib.Repr()
_BOUNDED_REPR.maxlevel = 4
_BOUNDED_REPR.maxstring = _BOUNDED_REPR.maxother = 200


def _map_bad_body(body: bytes | str | Mapping[str, Any], exc: ValueError) -> LLMError:
    from nisse_llm.wire.errors import OpenAIErrorBody  # loaded by the first unreadable reply

    try:
        error = (
            OpenAIErrorBody.model_validate(dict(body))
            if isinstance(body, Mapping)
            else OpenAIErrorBody.model_validate_json(body)
        )
    except ValueError:
        error = None
    if error is not None:
        detail = error.error
        kind = None if detail.type in (None, "None") else _said(detail.type)
        said = None if detail.message is None else _said(detail.message)[:500]
        return LLMError(
            f"the reply was an error, not a chat completion: {kind}: {said}",
            error_type=kind,
            server_message=said,
        )
    if isinstance(exc, ValidationError) and exc.errors():
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "body"
        return LLMError(f"malformed chat completion: {where}: {first['msg']}")
    return LLMError(f"malformed chat completion: {exc}")


def _said(value: object) -> str:
    # A decoded body may hold any JSON value here; str() of one nested thousands deep
    # recurses past the interpreter's limit, so non-strings get a bounded repr.
    return value if isinstance(value, str) else _BOUNDED_REPR.repr(value)


def _map_text(message: OpenAIChatResponseMessage) -> str:
    content = message.content
    if content is None or isinstance(content, str):
        return content or ""
    return "".join(part.text for part in content if part.text)


def _map_reasoning(
    message: OpenAIChatResponseMessage, requested_model: str, response_model: str | None
) -> list[Reasoning]:
    if message.thinking_blocks:
        return [
            Reasoning(model=requested_model, response_model=response_model, block=block)
            for block in message.thinking_blocks
        ]
    if message.reasoning_content:
        block = {"type": "reasoning_content", "reasoning_content": message.reasoning_content}
        return [Reasoning(model=requested_model, response_model=response_model, block=block)]
    return []


def _map_usage(usage: OpenAIChatUsage | None) -> Usage:
    if usage is None:
        return Usage()
    prompt = usage.prompt_tokens_details
    cache_read = (
        (prompt.cached_tokens if prompt else None)
        or usage.cache_read_input_tokens
        or usage.prompt_cache_hit_tokens
        or 0
    )
    cache_write = (
        usage.cache_creation_input_tokens
        or (prompt.cache_creation_tokens or prompt.cache_write_tokens if prompt else None)
        or 0
    )
    try:
        return Usage(
            input=usage.prompt_tokens or 0,
            output=usage.completion_tokens or 0,
            cache_read=cache_read,
            cache_write=cache_write,
        )
    except ValidationError:
        raise LLMError(f"malformed chat completion: negative token counts in {usage}") from None
