"""OpenAI Responses replies -> canonical events (the reply side of the Responses route).

Parse rules: output items are read in order. A ``reasoning`` item becomes a `Reasoning`
event holding the item exactly as received (its JSON object: id, ``encrypted_content``,
summary), tagged with the model the request named; an assistant ``message`` becomes an
`AssistantText` (its ``output_text`` parts joined); a ``function_call`` becomes a
`ToolCall` under a minted id (the provider's ``call_id`` is dropped). Other item types
(server tools) are skipped. A ``refusal`` part, or ``status: "incomplete"`` for
``content_filter``, raises `ModelRefusal`; ``incomplete`` for ``max_output_tokens`` raises
`TruncatedResponse`; ``status: "failed"`` raises `ContextWindowExceeded` for an overflow
(``context_length_exceeded``), else `LLMError` with the error's code and message.
Function-call arguments that are not a JSON object, and anything else malformed, are an
`LLMError`. Usage reads ``input_tokens_details.cached_tokens`` (and
``cache_write_tokens``) and ``output_tokens_details.reasoning_tokens``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pydantic_core
from pydantic import ValidationError

from nisse_llm.errors import ContextWindowExceeded, LLMError
from nisse_llm.events.canonical import (
    AssistantText,
    CanonicalEvent,
    Completion,
    Reasoning,
    Usage,
)
from nisse_llm.render._reply import FILTERED, completion, json_call, refused, truncated
from nisse_llm.wire.openai_responses_reply import (
    OpenAIResponsesFunctionCallItem,
    OpenAIResponsesMessageItem,
    OpenAIResponsesReasoningItem,
    OpenAIResponsesResponse,
    OpenAIResponsesUsage,
)

__all__ = ["parse_responses_reply", "read_responses_reply"]


def _decode(body: bytes | str | Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(body, Mapping):
        return dict(body)
    if not isinstance(body, bytes | str):
        raise LLMError(
            f"a Responses reply must be bytes, str or a mapping, not {type(body).__name__}"
        )
    try:
        raw = pydantic_core.from_json(body, allow_inf_nan=False)
    except (ValueError, TypeError) as exc:
        raise LLMError(f"malformed Responses reply: not JSON: {exc}") from None
    if not isinstance(raw, dict):
        raise LLMError(f"malformed Responses reply: a JSON {type(raw).__name__}, not an object")
    return raw


def read_responses_reply(
    body: bytes | str | Mapping[str, Any],
) -> tuple[OpenAIResponsesResponse, list[Any]]:
    """The typed reply and its raw output items (the reasoning items kept as received).

    A well-formed reply is validated straight from its bytes, and decoded a second time
    only when it holds a reasoning item (kept as received); anything else takes the
    checked path, which says what is wrong."""
    if isinstance(body, bytes | str):
        try:
            response = OpenAIResponsesResponse.model_validate_json(body)
        except ValidationError:
            pass
        else:
            if any(type(item) is OpenAIResponsesReasoningItem for item in response.output):
                return response, _decode(body)["output"]
            return response, []
    raw = _decode(body)
    if "output" not in raw and isinstance(raw.get("error"), dict):
        error = raw["error"]
        kind, said = error.get("type") or error.get("code"), error.get("message")
        raise LLMError(
            f"the reply was an error, not a response: {str(kind)[:200]}: {str(said)[:500]}",
            error_type=None if kind is None else str(kind)[:200],
            server_message=None if said is None else str(said)[:500],
        )
    try:
        response = OpenAIResponsesResponse.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0] if exc.errors() else None
        where = ".".join(str(part) for part in first["loc"]) if first else "body"
        what = first["msg"] if first else str(exc)
        raise LLMError(f"malformed Responses reply: {where or 'body'}: {what}") from None
    output = raw["output"]
    return response, output if isinstance(output, list) else []


def parse_responses_reply(
    body: bytes | str | Mapping[str, Any],
    *,
    requested_model: str,
    max_tokens: int | None = None,
) -> Completion:
    """A Responses reply body as canonical events, usage and stop reason (module rules)."""
    response, raw_items = read_responses_reply(body)
    return completion_from(
        response, raw_items, requested_model=requested_model, max_tokens=max_tokens
    )


def completion_from(
    response: OpenAIResponsesResponse,
    raw_items: list[Any],
    *,
    requested_model: str,
    max_tokens: int | None = None,
) -> Completion:
    """The completion a typed reply stands for (module rules); ``raw_items`` are its output
    items as received, read for its reasoning items only."""
    produced_by = response.model or requested_model
    _raise_for_status(response, produced_by, max_tokens)
    events: list[CanonicalEvent] = []
    calls = 0
    for index, item in enumerate(response.output):
        if isinstance(item, OpenAIResponsesReasoningItem):
            block = dict(raw_items[index])
            events.append(
                Reasoning(model=requested_model, response_model=response.model, block=block)
            )
        elif isinstance(item, OpenAIResponsesMessageItem):
            text = _message_text(item, produced_by)
            if text:
                events.append(AssistantText(text=text, model=produced_by))
        elif isinstance(item, OpenAIResponsesFunctionCallItem):
            events.append(json_call(item.name, item.arguments))
            calls += 1
    usage = response.usage
    details = None if usage is None else usage.output_tokens_details
    return completion(
        events,
        _map_usage(usage),
        "tool_calls" if calls else (response.status or "completed"),
        response.model,
        response.id,
        None if details is None else details.reasoning_tokens,
    )


def _raise_for_status(
    response: OpenAIResponsesResponse, produced_by: str, max_tokens: int | None
) -> None:
    status = response.status
    if status == "incomplete":
        reason = response.incomplete_details.reason if response.incomplete_details else None
        if reason == "content_filter":
            raise refused(produced_by, FILTERED)
        if reason == "max_output_tokens":
            raise truncated(produced_by, "max_output_tokens", max_tokens)
        raise LLMError(f"{produced_by} stopped before its answer was complete: {reason}")
    if status == "failed":
        error = response.error
        code = None if error is None else error.code
        said = (None if error is None else error.message) or "no reason given"
        from nisse_llm.wire._overflow import read_overflow

        overflow = read_overflow(said, error_type=None, code=code)
        if overflow is not None:
            raise ContextWindowExceeded(
                f"{produced_by} refused the request: it does not fit the context window: {said[:500]}",
                error_type=code,
                server_message=said[:500],
                limit_tokens=overflow.limit_tokens,
                requested_tokens=overflow.requested_tokens,
            )
        raise LLMError(
            f"{produced_by} failed the response: {code}: {said[:500]}",
            error_type=code,
            server_message=said[:500],
        )


def _message_text(item: OpenAIResponsesMessageItem, produced_by: str) -> str:
    texts: list[str] = []
    for part in item.content or ():
        if part.type == "refusal":
            raise refused(produced_by, part.refusal or "the model refused")
        if part.text:
            texts.append(part.text)
    return "".join(texts)


def _map_usage(usage: OpenAIResponsesUsage | None) -> Usage:
    if usage is None:
        return Usage()
    details = usage.input_tokens_details
    return Usage(
        input=usage.input_tokens or 0,
        output=usage.output_tokens or 0,
        cache_read=(details.cached_tokens if details else None) or 0,
        cache_write=(details.cache_write_tokens if details else None) or 0,
    )
