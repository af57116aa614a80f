"""What the routes' reply models share: their base, the token details both OpenAI routes
read, and the discriminator that reads a block or an item by its ``type``.

A reply model ignores the fields it does not know and accepts an explicit ``null``
wherever a field is optional; it is immutable, and builds on first use. The chat and
Responses APIs break their usage down alike: the input's tokens read from and written to
the prompt cache, the output's tokens spent reasoning.
"""

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict

from nisse_llm.wire._bounds import TokenCount

__all__ = ["CacheTokensShape", "ReasoningTokensShape", "ReplyModel", "type_or_other"]


class ReplyModel(BaseModel):
    """A reply body or a part of one: unknown fields ignored, immutable."""

    model_config = ConfigDict(extra="ignore", frozen=True, defer_build=True)


class CacheTokensShape(ReplyModel):
    """The input tokens read from (``cached_tokens``) and written to the prompt cache."""

    cached_tokens: TokenCount | None = None
    cache_write_tokens: TokenCount | None = None


class ReasoningTokensShape(ReplyModel):
    """The output tokens spent reasoning."""

    reasoning_tokens: TokenCount | None = None


def type_or_other(*known: str) -> Callable[[Any], str]:
    """A discriminator of blocks or items: a value's ``type`` where it is one of ``known``,
    else ``"other"`` (a missing, unknown or malformed type)."""
    types = frozenset(known)

    def tag(value: Any) -> str:
        kind = value.get("type") if isinstance(value, dict) else getattr(value, "type", None)
        return kind if isinstance(kind, str) and kind in types else "other"

    return tag
