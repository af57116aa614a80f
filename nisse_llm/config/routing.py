"""Which proxy route a model string takes: pure, shared by config (for the pin) and clients."""

from __future__ import annotations

from collections.abc import Iterable
from typing import cast

from nisse_llm.config.model_rules import placed_rules
from nisse_llm.config.routes import (
    DEFAULT_PASSTHROUGH_PREFIXES,
    ROUTES,
    Route,
    has_native_adapter,
)
from nisse_llm.routes.table import ROUTE_TABLE

__all__ = [
    "DEFAULT_PASSTHROUGH_PREFIXES",
    "ROUTES",
    "Route",
    "has_native_adapter",
    "route_for",
]


def route_for(model: str, prefixes: Iterable[str] = DEFAULT_PASSTHROUGH_PREFIXES) -> Route:
    """The route a model's requests take, by the route table: the route chosen by prefix
    (the messages passthrough) where native, a route chosen by rule row where the model's
    row names it (Responses, for OpenAI's current reasoning models), else the default."""
    native = ROUTE_TABLE.chosen_by("prefixes")
    if native and has_native_adapter(model, prefixes):
        return cast(Route, native[0].name)
    row = placed_rules(model)
    if row is not None and any(
        route.name == row.route and route.family in (None, row.family)
        for route in ROUTE_TABLE.chosen_by("rules_row")
    ):
        return cast(Route, row.route)
    return cast(Route, ROUTE_TABLE.default.name)
