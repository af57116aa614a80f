"""Typed reply bodies of the Anthropic messages route (``POST {base}/v1/messages``).

A module of their own so a client that only reads replies builds only these; the
request models and this module's names are all exported by
`nisse_llm.wire.anthropic_messages`. They tolerate unknown fields, nulls and block types
the SDK never asks for; the parser decides what those mean.
"""

from typing import Annotated, Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Discriminator, Tag

from nisse_llm.wire._bounds import ServerName, TokenCount
from nisse_llm.wire._reply_base import type_or_other

__all__ = [
    "AnthropicMessagesResponse",
    "AnthropicResponseBlock",
    "AnthropicResponseOtherBlock",
    "AnthropicResponseRedactedThinkingBlock",
    "AnthropicResponseTextBlock",
    "AnthropicResponseThinkingBlock",
    "AnthropicResponseToolUseBlock",
    "AnthropicUsage",
]


class _Response(BaseModel):
    model_config = ConfigDict(extra="allow", defer_build=True)


class AnthropicResponseTextBlock(_Response):
    """Text the model wrote (``citations`` and the like tolerated)."""

    type: Literal["text"]
    text: str | None = None


class AnthropicResponseToolUseBlock(_Response):
    """A client tool call; ``input`` is checked by the parser (it must be an object)."""

    type: Literal["tool_use"]
    id: str | None = None
    name: str
    input: Any = None


class AnthropicResponseThinkingBlock(_Response):
    """A thinking block with its signature, kept verbatim for replay."""

    type: Literal["thinking"]
    thinking: str
    signature: str | None = None


class AnthropicResponseRedactedThinkingBlock(_Response):
    """An encrypted thinking block, kept verbatim for replay."""

    type: Literal["redacted_thinking"]
    data: str


class AnthropicResponseOtherBlock(_Response):
    """Any other block type (server tools, their results, future kinds): kept, not read."""

    type: str


AnthropicResponseBlock: TypeAlias = Annotated[
    Annotated[AnthropicResponseTextBlock, Tag("text")]
    | Annotated[AnthropicResponseToolUseBlock, Tag("tool_use")]
    | Annotated[AnthropicResponseThinkingBlock, Tag("thinking")]
    | Annotated[AnthropicResponseRedactedThinkingBlock, Tag("redacted_thinking")]
    | Annotated[AnthropicResponseOtherBlock, Tag("other")],
    Discriminator(type_or_other("text", "tool_use", "thinking", "redacted_thinking")),
]


class AnthropicUsage(_Response):
    """Token counts; ``input_tokens`` excludes the cached (read or written) prompt tokens."""

    input_tokens: TokenCount | None = None
    output_tokens: TokenCount | None = None
    cache_creation_input_tokens: TokenCount | None = None
    cache_read_input_tokens: TokenCount | None = None


class AnthropicMessagesResponse(_Response):
    """A messages response body; everything but the content may be missing or null."""

    id: str | None = None
    type: str | None = None
    role: str | None = None
    model: ServerName | None = None
    content: list[AnthropicResponseBlock] | None = None
    stop_reason: str | None = None
    stop_sequence: str | None = None
    usage: AnthropicUsage | None = None
