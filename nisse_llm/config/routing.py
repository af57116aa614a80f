"""Which proxy route a model string takes, and which route names a role may choose (pure,
no I/O): shared by config (for the pin) and the clients."""

from __future__ import annotations

from collections.abc import Iterable

from nisse_llm import defaults
from nisse_llm.config.model_rules import placed_rules
from nisse_llm.routes.table import ROUTE_TABLE, ROUTES, Route

__all__ = [
    "DEFAULT_PASSTHROUGH_PREFIXES",
    "ROUTES",
    "Route",
    "has_native_adapter",
    "known_route",
    "route_for",
]


# Spec A13: delegations take the vendor-native route where one exists, because a
# normalising middlebox is lossy exactly where long-running work lives.
DEFAULT_PASSTHROUGH_PREFIXES: tuple[str, ...] = defaults.PASSTHROUGH_PREFIXES


def has_native_adapter(model: str, prefixes: Iterable[str] = DEFAULT_PASSTHROUGH_PREFIXES) -> bool:
    """True when the model has a vendor-native route (the Anthropic messages passthrough)."""
    return model.startswith(tuple(prefixes))


def known_route(name: str) -> Route:
    """``name`` when the route table holds a route of that name (a route a program
    registered counts as much as the package's own), else `ValueError` naming the known routes."""
    if name not in ROUTE_TABLE:
        known = ", ".join(ROUTE_TABLE.names())
        raise ValueError(f"no route {name!r} is registered; the routes are {known}")
    return name


def route_for(model: str, prefixes: Iterable[str] = DEFAULT_PASSTHROUGH_PREFIXES) -> Route:
    """The route a model's requests take, by the route table: the route chosen by prefix
    (the messages passthrough) where native, a route chosen by rule row where the model's
    row names it (Responses, for OpenAI's current reasoning models), else the default."""
    native = ROUTE_TABLE.chosen_by("prefixes")
    if native and has_native_adapter(model, prefixes):
        return native[0].name
    row = placed_rules(model)
    if row is not None and any(
        route.name == row.route and route.family in (None, row.family)
        for route in ROUTE_TABLE.chosen_by("rules_row")
    ):
        return row.route
    return ROUTE_TABLE.default.name
