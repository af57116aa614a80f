"""Typed bodies of the Anthropic messages route (``POST {base}/v1/messages``).

Requests forbid unknown fields, so a typo cannot reach the wire. Their field order is
the wire order: ``model``, ``max_tokens`` and ``system`` come before ``messages`` and
everything else after it (the renderer's byte path splices ``messages`` in there).
Responses tolerate unknown fields, nulls and block types the SDK never asks for; the
parser decides what those mean.
"""

from typing import Annotated, Any, Literal, TypeAlias

from pydantic import ConfigDict, Field, NonNegativeInt
from typing_extensions import TypedDict

from nisse_llm.wire._request_base import (
    CacheControlShape,
    EffortShape,
    RequestModel,
    ThinkingShape,
)

# The reply bodies live apart (a client reading replies imports only them); exported here too.
from nisse_llm.wire.anthropic_messages_reply import *  # noqa: F403
from nisse_llm.wire.anthropic_messages_reply import __all__ as _replies

__all__ = [
    *_replies,
    "AnthropicBase64ImageSource",
    "AnthropicCacheControl",
    "AnthropicImageBlock",
    "AnthropicJSONOutputFormat",
    "AnthropicMessage",
    "AnthropicMessagesRequest",
    "AnthropicMetadata",
    "AnthropicOutputConfig",
    "AnthropicRedactedThinkingBlock",
    "AnthropicRequestBlock",
    "AnthropicTextBlock",
    "AnthropicThinkingBlock",
    "AnthropicThinkingConfig",
    "AnthropicTool",
    "AnthropicToolChoice",
    "AnthropicToolChoiceAny",
    "AnthropicToolChoiceAuto",
    "AnthropicToolChoiceNone",
    "AnthropicToolChoiceTool",
    "AnthropicToolResultBlock",
    "AnthropicToolResultContent",
    "AnthropicToolUseBlock",
    "AnthropicURLImageSource",
]


class AnthropicCacheControl(CacheControlShape):
    """A prompt-cache breakpoint on the block (or tool) that carries it."""


class AnthropicTextBlock(RequestModel):
    """Text in a message, a system prompt or a tool result (never empty: the API rejects it)."""

    type: Literal["text"] = "text"
    text: str
    cache_control: AnthropicCacheControl | None = None


class AnthropicBase64ImageSource(RequestModel):
    """An image's bytes, base64-encoded, with their media type."""

    type: Literal["base64"] = "base64"
    media_type: Literal["image/png", "image/jpeg", "image/gif", "image/webp"]
    data: str


class AnthropicURLImageSource(RequestModel):
    """An image the API fetches from a URL."""

    type: Literal["url"] = "url"
    url: str


class AnthropicImageBlock(RequestModel):
    """An image in a user message or inside a tool result's content."""

    type: Literal["image"] = "image"
    source: Annotated[
        AnthropicBase64ImageSource | AnthropicURLImageSource, Field(discriminator="type")
    ]
    cache_control: AnthropicCacheControl | None = None


AnthropicToolResultContent: TypeAlias = Annotated[
    AnthropicTextBlock | AnthropicImageBlock, Field(discriminator="type")
]


class AnthropicToolUseBlock(RequestModel):
    """A tool call the assistant made; ``id`` must match ``^[a-zA-Z0-9_-]+$``."""

    type: Literal["tool_use"] = "tool_use"
    id: str
    name: str
    input: dict[str, Any]
    cache_control: AnthropicCacheControl | None = None


class AnthropicToolResultBlock(RequestModel):
    """The answer to a ``tool_use``; must open the next user message."""

    type: Literal["tool_result"] = "tool_result"
    tool_use_id: str
    content: str | list[AnthropicToolResultContent] | None = None
    is_error: bool | None = None
    cache_control: AnthropicCacheControl | None = None


# Thinking blocks carry no cache_control: the API's own param types leave it out
# (thinking cannot be marked as a cache breakpoint; it is cached with its turn).
class AnthropicThinkingBlock(RequestModel):
    """A thinking block replayed verbatim; the signature proves it came from the model."""

    type: Literal["thinking"] = "thinking"
    thinking: str
    signature: str


class AnthropicRedactedThinkingBlock(RequestModel):
    """An encrypted thinking block replayed verbatim."""

    type: Literal["redacted_thinking"] = "redacted_thinking"
    data: str


AnthropicRequestBlock: TypeAlias = Annotated[
    AnthropicTextBlock
    | AnthropicImageBlock
    | AnthropicToolUseBlock
    | AnthropicToolResultBlock
    | AnthropicThinkingBlock
    | AnthropicRedactedThinkingBlock,
    Field(discriminator="type"),
]


class AnthropicMessage(RequestModel):
    """One turn: ``user`` or ``assistant``, its content a string or a list of blocks."""

    role: Literal["user", "assistant"]
    content: str | list[AnthropicRequestBlock]


class AnthropicTool(RequestModel):
    """A client tool: a name, a description and a JSON Schema (``type: object``) for its input."""

    name: str
    description: str | None = None
    input_schema: dict[str, Any]
    #: Arguments guaranteed to match ``input_schema`` (models with structured outputs).
    strict: bool | None = None
    cache_control: AnthropicCacheControl | None = None


class AnthropicToolChoiceAuto(RequestModel):
    """The model decides whether to call a tool (the API default)."""

    type: Literal["auto"] = "auto"
    disable_parallel_tool_use: bool | None = None


class AnthropicToolChoiceAny(RequestModel):
    """The model must call some tool."""

    type: Literal["any"] = "any"
    disable_parallel_tool_use: bool | None = None


class AnthropicToolChoiceTool(RequestModel):
    """The model must call the named tool."""

    type: Literal["tool"] = "tool"
    name: str
    disable_parallel_tool_use: bool | None = None


class AnthropicToolChoiceNone(RequestModel):
    """The model may not call any tool."""

    type: Literal["none"] = "none"


AnthropicToolChoice: TypeAlias = Annotated[
    AnthropicToolChoiceAuto
    | AnthropicToolChoiceAny
    | AnthropicToolChoiceTool
    | AnthropicToolChoiceNone,
    Field(discriminator="type"),
]


class AnthropicMetadata(RequestModel):
    """Request metadata: an opaque end-user id for abuse detection."""

    user_id: str | None = None


class AnthropicThinkingConfig(ThinkingShape):
    """Thinking: ``adaptive`` (the model decides, at ``output_config.effort``), ``enabled``
    with a token budget, or ``disabled``; ``display`` says how thinking comes back."""


class AnthropicJSONOutputFormat(TypedDict):
    """``output_config.format``: a JSON Schema the answer follows (structured outputs); a
    typed dict, since ``schema`` is a name pydantic models reserve."""

    __pydantic_config__ = ConfigDict(extra="forbid")  # type: ignore[misc]

    type: Literal["json_schema"]
    schema: dict[str, Any]


class AnthropicOutputConfig(EffortShape):
    """``output_config``: the effort of adaptive thinking, and a structured answer's format."""

    format: AnthropicJSONOutputFormat | None = None


class AnthropicMessagesRequest(RequestModel):
    """A messages request body. Field order is wire order (see the module docstring).

    No ``temperature``, ``top_p`` or ``top_k``: API version 2026-10-21 removed them (a request
    that sends any of them is a 400), as did the official SDK 2.x request types.
    """

    model: str
    max_tokens: NonNegativeInt
    system: str | list[AnthropicTextBlock] | None = None
    messages: list[AnthropicMessage]
    tools: list[AnthropicTool] | None = None
    tool_choice: AnthropicToolChoice | None = None
    thinking: AnthropicThinkingConfig | None = None
    output_config: AnthropicOutputConfig | None = None
    metadata: AnthropicMetadata | None = None
    stop_sequences: list[str] | None = None
    stream: bool | None = None
