"""The proxy routes by name, and which models have a vendor-native one (pure, no I/O)."""

from __future__ import annotations

from collections.abc import Iterable

from nisse_llm import defaults
from nisse_llm.routes.table import ROUTES, Route

__all__ = ["DEFAULT_PASSTHROUGH_PREFIXES", "ROUTES", "Route", "has_native_adapter"]


# Spec A13: delegations take the vendor-native route where one exists, because a
# normalising middlebox is lossy exactly where long-running work lives.
DEFAULT_PASSTHROUGH_PREFIXES: tuple[str, ...] = defaults.PASSTHROUGH_PREFIXES


def has_native_adapter(model: str, prefixes: Iterable[str] = DEFAULT_PASSTHROUGH_PREFIXES) -> bool:
    """True when the model has a vendor-native route (the Anthropic messages passthrough)."""
    return model.startswith(tuple(prefixes))
