"""What the routes' request models share: their base, and the shapes two routes send alike.

A request model refuses unknown fields, so a typo cannot reach the wire; it is immutable,
and builds on first use. Anthropic's ``thinking`` and ``output_config.effort`` go out on
the chat route too, where LiteLLM forwards them to Anthropic models as sent, as it does a
text part's or a tool's ``cache_control``: each is one shape here, named by each route's
module. The chat and Responses APIs take the same reasoning effort levels and tool-choice
modes.
"""

from typing import Annotated, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "CacheControlShape",
    "EffortShape",
    "ReasoningEffort",
    "RequestModel",
    "ThinkingShape",
    "ToolChoiceMode",
]


class RequestModel(BaseModel):
    """A request body or a part of one: unknown fields refused, immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


class CacheControlShape(RequestModel):
    """Anthropic's prompt-cache breakpoint on the block (or tool) that carries it."""

    type: Literal["ephemeral"] = "ephemeral"
    ttl: Literal["5m", "1h"] | None = None


class ThinkingShape(RequestModel):
    """Anthropic's ``thinking``: ``adaptive`` (the model decides, at
    ``output_config.effort``), ``enabled`` with a token budget, or ``disabled``;
    ``display`` says how thinking comes back."""

    type: Literal["adaptive", "enabled", "disabled"]
    budget_tokens: Annotated[int, Field(ge=1024)] | None = None
    display: Literal["summarized", "omitted"] | None = None


class EffortShape(RequestModel):
    """Anthropic's ``output_config``: the effort of adaptive thinking."""

    effort: Literal["low", "medium", "high", "xhigh", "max"] | None = None


#: The effort levels of OpenAI's ``ReasoningEffort`` (which a model takes: `model_rules`).
ReasoningEffort: TypeAlias = Literal["none", "minimal", "low", "medium", "high", "xhigh", "max"]

#: OpenAI's ``tool_choice`` modes (a named function is each route's own shape).
ToolChoiceMode: TypeAlias = Literal["none", "auto", "required"]
