"""Which proxy route a model string takes: pure, shared by config (for the pin) and clients."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal, TypeAlias

__all__ = [
    "DEFAULT_PASSTHROUGH_PREFIXES",
    "ROUTES",
    "Route",
    "has_native_adapter",
    "route_for",
]

Route: TypeAlias = Literal["openai_chat", "anthropic_messages", "openai_responses"]
ROUTES: tuple[Route, ...] = ("openai_chat", "anthropic_messages", "openai_responses")

# Spec A13: delegations take the vendor-native route where one exists, because a
# normalising middlebox is lossy exactly where long-running work lives.
DEFAULT_PASSTHROUGH_PREFIXES: tuple[str, ...] = ("claude-", "anthropic/")


def has_native_adapter(model: str, prefixes: Iterable[str] = DEFAULT_PASSTHROUGH_PREFIXES) -> bool:
    """True when the model has a vendor-native route (the Anthropic messages passthrough)."""
    return model.startswith(tuple(prefixes))


def route_for(model: str, prefixes: Iterable[str] = DEFAULT_PASSTHROUGH_PREFIXES) -> Route:
    """The route a model's requests take: the messages passthrough where native, the
    Responses route where the model's rule row says so (OpenAI's current reasoning models,
    `nisse_llm.config.model_rules`), else chat."""
    if has_native_adapter(model, prefixes):
        return "anthropic_messages"
    from nisse_llm.config.model_rules import placed_rules

    row = placed_rules(model)
    if row is not None and row.family == "openai" and row.route == "openai_responses":
        return "openai_responses"
    return "openai_chat"
