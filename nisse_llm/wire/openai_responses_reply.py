"""Typed reply bodies of the OpenAI Responses route (``POST {base}/v1/responses``).

A module of their own so a client that only reads replies builds only these; the request
models and this module's names are all exported by `nisse_llm.wire.openai_responses`.
They ignore fields they do not know and accept an explicit ``null`` wherever a field is
optional (the API adds output item types and usage details over time; the proxy adds its
own fields). An output item is read by its ``type``: ``message``, ``function_call`` and
``reasoning`` are typed; any other type is kept as an `OpenAIResponsesOtherItem`.
"""

from typing import Annotated, Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Discriminator, Tag

from nisse_llm.wire._bounds import ServerName, TokenCount

__all__ = [
    "OpenAIResponsesError",
    "OpenAIResponsesFunctionCallItem",
    "OpenAIResponsesIncompleteDetails",
    "OpenAIResponsesInputTokensDetails",
    "OpenAIResponsesMessageItem",
    "OpenAIResponsesOtherItem",
    "OpenAIResponsesOutputItem",
    "OpenAIResponsesOutputPart",
    "OpenAIResponsesOutputTokensDetails",
    "OpenAIResponsesReasoningItem",
    "OpenAIResponsesReasoningText",
    "OpenAIResponsesResponse",
    "OpenAIResponsesUsage",
]


class _Response(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True, defer_build=True)


class OpenAIResponsesOutputPart(_Response):
    """One content part of an output message: ``output_text`` (``text``) or ``refusal``
    (``refusal``); other part types are kept by their type alone."""

    type: str
    text: str | None = None
    refusal: str | None = None


class OpenAIResponsesMessageItem(_Response):
    """An assistant output message."""

    type: Literal["message"]
    id: str | None = None
    role: str | None = None
    status: str | None = None
    content: list[OpenAIResponsesOutputPart] | None = None


class OpenAIResponsesFunctionCallItem(_Response):
    """A function call; ``call_id`` (and the item's ``id``) are the provider's and are
    dropped on parsing. ``arguments`` should be a JSON object encoded as a string."""

    type: Literal["function_call"]
    id: str | None = None
    call_id: str | None = None
    name: str
    arguments: str | None = None
    status: str | None = None


class OpenAIResponsesReasoningText(_Response):
    """A summary part (``summary_text``) or a reasoning text part of a reasoning item."""

    type: str | None = None
    text: str | None = None


class OpenAIResponsesReasoningItem(_Response):
    """A reasoning item: its summary, and with ``include: ["reasoning.encrypted_content"]``
    the encrypted reasoning to send back on the next turn. Parsing keeps the item as it
    arrived (its raw JSON object), not this model's dump."""

    type: Literal["reasoning"]
    id: str | None = None
    summary: list[OpenAIResponsesReasoningText] | None = None
    content: list[OpenAIResponsesReasoningText] | None = None
    encrypted_content: str | None = None
    status: str | None = None


class OpenAIResponsesOtherItem(_Response):
    """An output item of a type this library does not read (a server tool's call...)."""

    type: str


def _item_kind(value: Any) -> str:
    kind = value.get("type") if isinstance(value, dict) else getattr(value, "type", None)
    return kind if kind in ("message", "function_call", "reasoning") else "other"


OpenAIResponsesOutputItem: TypeAlias = Annotated[
    Annotated[OpenAIResponsesMessageItem, Tag("message")]
    | Annotated[OpenAIResponsesFunctionCallItem, Tag("function_call")]
    | Annotated[OpenAIResponsesReasoningItem, Tag("reasoning")]
    | Annotated[OpenAIResponsesOtherItem, Tag("other")],
    Discriminator(_item_kind),
]


class OpenAIResponsesInputTokensDetails(_Response):
    """Breakdown of input tokens; ``cached_tokens`` were read from the prompt cache."""

    cached_tokens: TokenCount | None = None
    cache_write_tokens: TokenCount | None = None


class OpenAIResponsesOutputTokensDetails(_Response):
    """Breakdown of output tokens."""

    reasoning_tokens: TokenCount | None = None


class OpenAIResponsesUsage(_Response):
    """Token usage; ``input_tokens`` counts every input token, cached or not."""

    input_tokens: TokenCount | None = None
    output_tokens: TokenCount | None = None
    total_tokens: TokenCount | None = None
    input_tokens_details: OpenAIResponsesInputTokensDetails | None = None
    output_tokens_details: OpenAIResponsesOutputTokensDetails | None = None


class OpenAIResponsesIncompleteDetails(_Response):
    """Why a response stopped early: ``max_output_tokens`` or ``content_filter``."""

    reason: str | None = None


class OpenAIResponsesError(_Response):
    """The error of a ``failed`` response."""

    code: str | None = None
    message: str | None = None


class OpenAIResponsesResponse(_Response):
    """``POST /v1/responses`` response body (non-streaming), also the ``response`` of the
    stream's ``response.completed`` / ``response.incomplete`` / ``response.failed``."""

    id: str | None = None
    object: str | None = None
    created_at: float | None = None
    model: ServerName | None = None
    status: str | None = None
    output: list[OpenAIResponsesOutputItem]
    incomplete_details: OpenAIResponsesIncompleteDetails | None = None
    error: OpenAIResponsesError | None = None
    usage: OpenAIResponsesUsage | None = None
