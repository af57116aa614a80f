"""Typed reply bodies of the OpenAI chat-completions route (``POST {base}/chat/completions``).

A module of their own so a client that only reads replies builds only these; the
request models and this module's names are all exported by `nisse_llm.wire.openai_chat`.
They ignore fields they do not know and accept an explicit ``null`` wherever a field is
optional (LiteLLM sends ``"tool_calls": null``; gateways add ``x_groq``,
``reasoning_details``, ``extra_content`` and more).
"""

from typing import Any

from nisse_llm.wire._bounds import ServerName, TokenCount
from nisse_llm.wire._reply_base import CacheTokensShape, ReasoningTokensShape, ReplyModel

__all__ = [
    "OpenAIChatChoice",
    "OpenAIChatCompletionTokensDetails",
    "OpenAIChatContentPart",
    "OpenAIChatPromptTokensDetails",
    "OpenAIChatResponse",
    "OpenAIChatResponseFunction",
    "OpenAIChatResponseMessage",
    "OpenAIChatResponseToolCall",
    "OpenAIChatUsage",
]


class OpenAIChatResponseFunction(ReplyModel):
    """The function a returned tool call names.

    ``arguments`` should be a JSON string; some compatible servers send the object itself.
    """

    name: str
    arguments: str | dict[str, Any] | None = None


class OpenAIChatResponseToolCall(ReplyModel):
    """A tool call as returned; its ``id`` is the provider's and is dropped on parsing."""

    id: str | None = None
    type: str | None = None
    function: OpenAIChatResponseFunction


class OpenAIChatContentPart(ReplyModel):
    """One part of a list-shaped ``content`` (some compatible servers send one)."""

    type: str | None = None
    text: str | None = None


class OpenAIChatResponseMessage(ReplyModel):
    """The assistant message of one choice, with LiteLLM's reasoning fields."""

    role: str | None = None
    content: str | list[OpenAIChatContentPart] | None = None
    refusal: str | None = None
    tool_calls: list[OpenAIChatResponseToolCall] | None = None
    #: LiteLLM: a reasoning model's thinking as plain text.
    reasoning_content: str | None = None
    #: LiteLLM: Anthropic thinking / redacted_thinking blocks, verbatim.
    thinking_blocks: list[dict[str, Any]] | None = None


class OpenAIChatChoice(ReplyModel):
    """One choice of a completion."""

    index: int | None = None
    message: OpenAIChatResponseMessage
    finish_reason: str | None = None


class OpenAIChatPromptTokensDetails(CacheTokensShape):
    """Breakdown of prompt tokens; ``cached_tokens`` were read from the prompt cache."""

    #: LiteLLM's name for ``cache_write_tokens`` (OpenAI's and OpenRouter's).
    cache_creation_tokens: TokenCount | None = None
    audio_tokens: TokenCount | None = None


class OpenAIChatCompletionTokensDetails(ReasoningTokensShape):
    """Breakdown of completion tokens."""

    audio_tokens: TokenCount | None = None
    accepted_prediction_tokens: TokenCount | None = None
    rejected_prediction_tokens: TokenCount | None = None


class OpenAIChatUsage(ReplyModel):
    """Token usage; ``prompt_tokens`` counts every prompt token, cached or not."""

    prompt_tokens: TokenCount | None = None
    completion_tokens: TokenCount | None = None
    total_tokens: TokenCount | None = None
    prompt_tokens_details: OpenAIChatPromptTokensDetails | None = None
    completion_tokens_details: OpenAIChatCompletionTokensDetails | None = None
    #: LiteLLM, translating an Anthropic reply: tokens written to / read from the cache.
    cache_creation_input_tokens: TokenCount | None = None
    cache_read_input_tokens: TokenCount | None = None
    #: DeepSeek's name for cache reads.
    prompt_cache_hit_tokens: TokenCount | None = None


class OpenAIChatResponse(ReplyModel):
    """``POST /chat/completions`` response body (non-streaming)."""

    id: str | None = None
    object: str | None = None
    created: int | None = None
    model: ServerName | None = None
    choices: list[OpenAIChatChoice]
    usage: OpenAIChatUsage | None = None
    system_fingerprint: str | None = None
