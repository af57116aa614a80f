"""Typed reply bodies of the OpenAI Responses route (``POST {base}/v1/responses``).

A module of their own so a client that only reads replies builds only these; the request
models and this module's names are all exported by `nisse_llm.wire.openai_responses`.
They ignore fields they do not know and accept an explicit ``null`` wherever a field is
optional (the API adds output item types and usage details over time; the proxy adds its
own fields). An output item is read by its ``type``: ``message``, ``function_call`` and
``reasoning`` are typed; any other type is kept as an `OpenAIResponsesOtherItem`.
"""

from typing import Annotated, Literal, TypeAlias

from pydantic import Discriminator, Tag

from nisse_llm.wire._bounds import ServerName, TokenCount
from nisse_llm.wire._reply_base import (
    CacheTokensShape,
    ReasoningTokensShape,
    ReplyModel,
    type_or_other,
)

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


class OpenAIResponsesOutputPart(ReplyModel):
    """One content part of an output message: ``output_text`` (``text``) or ``refusal``
    (``refusal``); other part types are kept by their type alone."""

    type: str
    text: str | None = None
    refusal: str | None = None


class OpenAIResponsesMessageItem(ReplyModel):
    """An assistant output message."""

    type: Literal["message"]
    id: str | None = None
    role: str | None = None
    status: str | None = None
    content: list[OpenAIResponsesOutputPart] | None = None


class OpenAIResponsesFunctionCallItem(ReplyModel):
    """A function call; ``call_id`` (and the item's ``id``) are the provider's and are
    dropped on parsing. ``arguments`` should be a JSON object encoded as a string."""

    type: Literal["function_call"]
    id: str | None = None
    call_id: str | None = None
    name: str
    arguments: str | None = None
    status: str | None = None


class OpenAIResponsesReasoningText(ReplyModel):
    """A summary part (``summary_text``) or a reasoning text part of a reasoning item."""

    type: str | None = None
    text: str | None = None


class OpenAIResponsesReasoningItem(ReplyModel):
    """A reasoning item: its summary, and with ``include: ["reasoning.encrypted_content"]``
    the encrypted reasoning to send back on the next turn. Parsing keeps the item as it
    arrived (its raw JSON object), not this model's dump."""

    type: Literal["reasoning"]
    id: str | None = None
    summary: list[OpenAIResponsesReasoningText] | None = None
    content: list[OpenAIResponsesReasoningText] | None = None
    encrypted_content: str | None = None
    status: str | None = None


class OpenAIResponsesOtherItem(ReplyModel):
    """An output item of a type this library does not read (a server tool's call...)."""

    type: str


OpenAIResponsesOutputItem: TypeAlias = Annotated[
    Annotated[OpenAIResponsesMessageItem, Tag("message")]
    | Annotated[OpenAIResponsesFunctionCallItem, Tag("function_call")]
    | Annotated[OpenAIResponsesReasoningItem, Tag("reasoning")]
    | Annotated[OpenAIResponsesOtherItem, Tag("other")],
    Discriminator(type_or_other("message", "function_call", "reasoning")),
]


class OpenAIResponsesInputTokensDetails(CacheTokensShape):
    """Breakdown of input tokens; ``cached_tokens`` were read from the prompt cache."""


class OpenAIResponsesOutputTokensDetails(ReasoningTokensShape):
    """Breakdown of output tokens."""


class OpenAIResponsesUsage(ReplyModel):
    """Token usage; ``input_tokens`` counts every input token, cached or not."""

    input_tokens: TokenCount | None = None
    output_tokens: TokenCount | None = None
    total_tokens: TokenCount | None = None
    input_tokens_details: OpenAIResponsesInputTokensDetails | None = None
    output_tokens_details: OpenAIResponsesOutputTokensDetails | None = None


class OpenAIResponsesIncompleteDetails(ReplyModel):
    """Why a response stopped early: ``max_output_tokens`` or ``content_filter``."""

    reason: str | None = None


class OpenAIResponsesError(ReplyModel):
    """The error of a ``failed`` response."""

    code: str | None = None
    message: str | None = None


class OpenAIResponsesResponse(ReplyModel):
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
