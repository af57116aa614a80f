"""Prompt-cache policy: which requests carry Anthropic ``cache_control`` breakpoints (pure).

A model is an Anthropic model when it takes the messages passthrough by the policy's
prefixes (`nisse_llm.routing.has_native_adapter`: ``claude-``, ``anthropic/`` unless
configured otherwise), or when its name is a LiteLLM route to Anthropic: ``anthropic/...``,
or ``bedrock/...``, ``vertex_ai/...``, ``openrouter/anthropic/...`` naming a ``claude``
model. LiteLLM forwards ``cache_control`` to those providers; other models get nothing.

The TTL ``"5m"`` is the API's default, so it is left out of the marker (the smaller body
is also the one older gateways accept); ``"1h"`` is sent as ``"ttl": "1h"``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from nisse_llm.routing import DEFAULT_PASSTHROUGH_PREFIXES, has_native_adapter

__all__ = ["MAX_BREAKPOINTS", "PromptCache", "active", "is_anthropic_model"]

#: "A maximum of 4 blocks with cache_control may be provided" (the API's 400 past it).
MAX_BREAKPOINTS = 4

_LITELLM_CLAUDE_ROUTES = ("bedrock/", "vertex_ai/", "openrouter/anthropic/")


def is_anthropic_model(
    model: str, prefixes: tuple[str, ...] = DEFAULT_PASSTHROUGH_PREFIXES
) -> bool:
    """Whether ``model`` is served by Anthropic, so cache breakpoints pay off (module rule)."""
    if has_native_adapter(model, prefixes) or model.startswith("anthropic/"):
        return True
    return model.startswith(_LITELLM_CLAUDE_ROUTES) and "claude" in model.lower()


@dataclass(frozen=True, slots=True)
class PromptCache:
    """Whether to mark cache breakpoints, their lifetime, and the passthrough prefixes."""

    enabled: bool = True
    ttl: Literal["5m", "1h"] | None = None
    prefixes: tuple[str, ...] = DEFAULT_PASSTHROUGH_PREFIXES

    def applies(self, model: str) -> bool:
        """Whether a request to ``model`` carries breakpoints under this policy."""
        return self.enabled and is_anthropic_model(model, self.prefixes)

    @property
    def marker_ttl(self) -> Literal["1h"] | None:
        """The ``ttl`` the marker carries: none for the API's default of 5 minutes."""
        return "1h" if self.ttl == "1h" else None

    @property
    def control_json(self) -> bytes:
        """The marker's JSON, as the wire models dump it (``exclude_none``)."""
        return b'{"type":"ephemeral","ttl":"1h"}' if self.ttl == "1h" else b'{"type":"ephemeral"}'


def active(cache: PromptCache | None, model: str) -> PromptCache | None:
    """``cache`` when it applies to ``model``, else ``None`` (no markers at all)."""
    return cache if cache is not None and cache.applies(model) else None
