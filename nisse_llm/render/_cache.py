"""Prompt-cache policy: which requests carry Anthropic ``cache_control`` breakpoints (pure).

A model is an Anthropic model when its name says so (`is_anthropic_model`: ``claude-...``,
``anthropic/...``, or a LiteLLM route to Anthropic naming a ``claude`` model), or when it
takes the messages passthrough by one of the operator's extra prefixes, which the caller
passes in (renderers read no configuration).
LiteLLM forwards ``cache_control`` to those providers; other models get nothing.

The TTL ``"5m"`` is the API's default, so it is left out of the marker (the smaller body
is also the one older gateways accept); ``"1h"`` is sent as ``"ttl": "1h"``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from nisse_llm.routes.anthropic_messages import is_anthropic_model

__all__ = ["MAX_BREAKPOINTS", "PromptCache", "active", "is_anthropic_model"]

#: "A maximum of 4 blocks with cache_control may be provided" (the API's 400 past it).
MAX_BREAKPOINTS = 4


@dataclass(frozen=True, slots=True)
class PromptCache:
    """Whether to mark cache breakpoints, their lifetime, and the operator's passthrough prefixes."""

    enabled: bool = True
    ttl: Literal["5m", "1h"] | None = None
    prefixes: tuple[str, ...] = ()

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
