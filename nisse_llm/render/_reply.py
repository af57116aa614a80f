"""What the three reply parsers share: the completion they build, and the OpenAI routes'
calls, refusals and truncations (pure).

Each route's parser reads its own body; the steps here are the ones that read alike on
every route (or on both OpenAI routes), so the routes say the same thing the same way.
"""

from __future__ import annotations

from typing import Any

import pydantic_core
from pydantic import ValidationError

from nisse_llm.errors import LLMError, ModelRefusal, TruncatedResponse
from nisse_llm.events.canonical import CanonicalEvent, Completion, ToolCall, Usage, mint_call_id

__all__ = ["FILTERED", "completion", "json_call", "refused", "truncated"]

#: What a refusal says when the provider's content filter, not the model, stopped the answer.
FILTERED = "the provider's content filter stopped the answer"

#: Longest reply id kept (real ones are under 80 characters).
_ID_LIMIT = 256


def completion(
    events: list[CanonicalEvent],
    usage: Usage,
    stop_reason: str | None,
    response_model: str | None,
    response_id: str | None,
    reasoning_tokens: int | None = None,
) -> Completion:
    """The parsed reply, its id clipped to `_ID_LIMIT`. Every part is validated already
    (events and usage are models, the rest wire strings): constructed as is, a first reply
    does not build the model of the whole log's union."""
    return Completion.model_construct(
        events=events,
        usage=usage,
        stop_reason=stop_reason,
        response_model=response_model,
        response_id=response_id[:_ID_LIMIT] if response_id else None,
        reasoning_tokens=reasoning_tokens,
    )


def json_call(name: str, raw: str | dict[str, Any] | None) -> ToolCall:
    """A call whose arguments came as a JSON string (or already decoded) on an OpenAI
    route, under a minted id: the provider's id is dropped (the log owns identity)."""
    if isinstance(raw, dict):
        arguments: object = raw
    elif not raw:
        arguments = {}
    else:
        try:
            arguments = pydantic_core.from_json(raw, allow_inf_nan=False)
        except (ValueError, TypeError) as exc:  # TypeError: a str with a lone surrogate
            raise LLMError(f"tool call {name!r} had non-JSON arguments: {raw[:200]!r}") from exc
    if not isinstance(arguments, dict):
        raise LLMError(
            f"tool call {name!r} arguments were {type(arguments).__name__}, expected an object"
        )
    try:
        return ToolCall(call_id=mint_call_id(), tool=name, arguments=arguments)
    except ValidationError:
        raise LLMError(
            f"tool call {name[:80]!r} names no valid tool (names match ^[a-zA-Z0-9_-]{{1,64}}$)"
        ) from None


def refused(produced_by: str, reason: str) -> ModelRefusal:
    """The model (or its provider's filter) declined to answer, saying ``reason``."""
    return ModelRefusal(f"{produced_by} refused: {reason}", server_message=reason)


def truncated(produced_by: str, ceiling: str, max_tokens: int | None) -> TruncatedResponse:
    """The answer hit its output ceiling; ``ceiling`` names the route's field for it."""
    asked = f" ({ceiling}={max_tokens})" if max_tokens is not None else ""
    return TruncatedResponse(
        f"{produced_by} hit its output ceiling{asked} mid-answer; raise {ceiling} or retry the turn"
    )
