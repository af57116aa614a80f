"""Anthropic messages replies -> canonical events (the reply side of the messages route).

Parse rules: provider ids are dropped and calls get minted ids; ``max_tokens`` and
``model_context_window_exceeded`` raise `TruncatedResponse`, ``refusal`` raises
`ModelRefusal`; block types the SDK never asks for (server tools and their results) and
``pause_turn`` (only server tools pause) raise `LLMError` naming them, as does a call
whose input is not an object; any malformed body raises `LLMError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from nisse_llm.errors import LLMError, ModelRefusal, TruncatedResponse
from nisse_llm.events.canonical import (
    AssistantText,
    CanonicalEvent,
    Completion,
    Reasoning,
    ToolCall,
    Usage,
    mint_call_id,
)
from nisse_llm.render._reply import completion
from nisse_llm.wire.anthropic_messages_reply import (
    AnthropicMessagesResponse,
    AnthropicResponseOtherBlock,
    AnthropicResponseRedactedThinkingBlock,
    AnthropicResponseTextBlock,
    AnthropicResponseThinkingBlock,
    AnthropicResponseToolUseBlock,
)

__all__ = ["parse_message"]

_TRUNCATION_STOPS = frozenset({"max_tokens", "model_context_window_exceeded"})
_SNIPPET = 300


def parse_message(
    body: bytes | str | Mapping[str, Any],
    *,
    requested_model: str,
    max_tokens: int | None = None,
) -> Completion:
    """Canonical events, usage and stop reason of a 200 messages reply; `LLMError` if not one."""
    response = _validate(body)
    if response.type is not None and response.type != "message":
        raise _not_a_message(response)
    produced_by = response.model or requested_model
    stop = response.stop_reason
    if stop == "refusal":
        raise _refusal(response, requested_model)
    if stop in _TRUNCATION_STOPS:
        raise TruncatedResponse(_truncation_message(stop, requested_model, max_tokens))
    if response.content is None:
        raise LLMError("malformed messages response: no content list")
    events: list[CanonicalEvent] = []
    for block in response.content:
        event = _map_response_block(block, requested_model, response.model, produced_by)
        if event is not None:
            events.append(event)
    if stop == "pause_turn":
        raise LLMError(
            "messages response stopped with pause_turn (a paused server-tool turn); "
            "nisse_llm declares no server tools and cannot resume it"
        )
    return completion(events, _map_usage(response), stop, response.model, response.id)


def _validate(body: bytes | str | Mapping[str, Any]) -> AnthropicMessagesResponse:
    try:
        if isinstance(body, bytes | str):
            return AnthropicMessagesResponse.model_validate_json(body)
        return AnthropicMessagesResponse.model_validate(body)
    except (ValidationError, ValueError) as exc:
        raise LLMError(f"malformed messages response: {_first_problem(exc)}") from exc


def _first_problem(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        errors = exc.errors(include_url=False, include_input=False)
        if errors:
            where = ".".join(str(part) for part in errors[0]["loc"]) or "body"
            return f"{where}: {errors[0]['msg']} ({exc.error_count()} problem(s))"
    return str(exc)[:_SNIPPET]


def _map_response_block(
    block: Any, requested_model: str, response_model: str | None, produced_by: str
) -> CanonicalEvent | None:
    if isinstance(block, AnthropicResponseTextBlock):
        return AssistantText(text=block.text, model=produced_by) if block.text else None
    if isinstance(block, AnthropicResponseToolUseBlock):
        return _map_tool_use(block)
    if isinstance(block, AnthropicResponseThinkingBlock | AnthropicResponseRedactedThinkingBlock):
        return Reasoning(
            model=requested_model,
            response_model=response_model,
            block=block.model_dump(exclude_unset=True),
        )
    if isinstance(block, AnthropicResponseOtherBlock):
        raise LLMError(
            f"messages response holds a {block.type!r} block, which nisse_llm never asks for "
            "(it declares client tools only)"
        )
    raise LLMError(f"messages response holds an unreadable block: {type(block).__name__}")


def _map_tool_use(block: AnthropicResponseToolUseBlock) -> ToolCall:
    if not isinstance(block.input, dict):
        raise LLMError(
            f"the model called {block.name!r} with input that is not a JSON object: "
            f"{str(block.input)[:_SNIPPET]}"
        )
    try:
        # Provider ids are dropped at the boundary; the log owns identity (spec A10).
        return ToolCall(call_id=mint_call_id(), tool=block.name, arguments=block.input)
    except ValidationError as exc:
        raise LLMError(
            f"the model's call of {block.name[:80]!r} is not a valid tool call: "
            f"{_first_problem(exc)}"
        ) from exc


def _map_usage(response: AnthropicMessagesResponse) -> Usage:
    usage = response.usage
    if usage is None:
        return Usage()
    cache_read = usage.cache_read_input_tokens or 0
    cache_write = usage.cache_creation_input_tokens or 0
    return Usage(
        input=(usage.input_tokens or 0) + cache_read + cache_write,
        output=usage.output_tokens or 0,
        cache_read=cache_read,
        cache_write=cache_write,
    )


def _refusal(response: AnthropicMessagesResponse, requested_model: str) -> ModelRefusal:
    said = " ".join(
        block.text
        for block in response.content or ()
        if isinstance(block, AnthropicResponseTextBlock) and block.text
    )
    details = (response.model_extra or {}).get("stop_details")
    explanation = details.get("explanation") if isinstance(details, dict) else None
    message = f"{requested_model} refused to answer (stop_reason refusal)"
    if isinstance(explanation, str) and explanation:
        message += f": {explanation[:_SNIPPET]}"
    if said:
        message += f"; it said: {said[:_SNIPPET]!r}"
    return ModelRefusal(message, error_type="refusal")


def _not_a_message(response: AnthropicMessagesResponse) -> LLMError:
    """An error body (or anything else) where a message belongs, with what it said."""
    detail = (response.model_extra or {}).get("error")
    error_type = message = None
    if isinstance(detail, dict):
        error_type = detail.get("type") if isinstance(detail.get("type"), str) else None
        message = detail.get("message") if isinstance(detail.get("message"), str) else None
    text = f"messages response has type {response.type!r}, not 'message'"
    if error_type or message:
        text += f": {error_type or 'error'}: {(message or '')[:_SNIPPET]}"
    return LLMError(text, error_type=error_type, server_message=message and message[:_SNIPPET])


def _truncation_message(stop: str, model: str, max_tokens: int | None) -> str:
    if stop == "model_context_window_exceeded":
        return (
            f"{model} ran out of context window mid-answer (stop_reason {stop}); "
            "shorten the log before retrying"
        )
    ceiling = f"the output ceiling of {max_tokens} tokens" if max_tokens else "its output ceiling"
    return f"{model} hit {ceiling} mid-answer (stop_reason {stop}); raise llm.max_output_tokens"
