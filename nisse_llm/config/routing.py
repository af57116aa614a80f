"""Which proxy route a model string takes: pure, shared by config (for the pin) and clients."""

from __future__ import annotations

from collections.abc import Iterable

from nisse_llm.config.model_rules import placed_rules
from nisse_llm.config.routes import (
    DEFAULT_PASSTHROUGH_PREFIXES,
    ROUTES,
    Route,
    has_native_adapter,
)

__all__ = [
    "DEFAULT_PASSTHROUGH_PREFIXES",
    "ROUTES",
    "Route",
    "has_native_adapter",
    "route_for",
]


def route_for(model: str, prefixes: Iterable[str] = DEFAULT_PASSTHROUGH_PREFIXES) -> Route:
    """The route a model's requests take: the messages passthrough where native, the
    Responses route where the model's rule row says so (OpenAI's current reasoning models,
    `nisse_llm.config.model_rules`), else chat."""
    if has_native_adapter(model, prefixes):
        return "anthropic_messages"
    row = placed_rules(model)
    if row is not None and row.family == "openai" and row.route == "openai_responses":
        return "openai_responses"
    return "openai_chat"
