"""The proxy routes by name, and which models have a vendor-native one (pure, no I/O)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal, TypeAlias

from nisse_llm import defaults

__all__ = ["DEFAULT_PASSTHROUGH_PREFIXES", "ROUTES", "Route", "has_native_adapter"]

Route: TypeAlias = Literal["openai_chat", "anthropic_messages", "openai_responses"]
ROUTES: tuple[Route, ...] = ("openai_chat", "anthropic_messages", "openai_responses")

# Spec A13: delegations take the vendor-native route where one exists, because a
# normalising middlebox is lossy exactly where long-running work lives.
DEFAULT_PASSTHROUGH_PREFIXES: tuple[str, ...] = defaults.PASSTHROUGH_PREFIXES


def has_native_adapter(model: str, prefixes: Iterable[str] = DEFAULT_PASSTHROUGH_PREFIXES) -> bool:
    """True when the model has a vendor-native route (the Anthropic messages passthrough)."""
    return model.startswith(tuple(prefixes))
