"""The proxy's routes: one descriptor per route beside its own name, and the table every
dispatch reads (`nisse_llm.routes.table`)."""

from __future__ import annotations

from nisse_llm.routes.descriptor import RouteDescriptor, load
from nisse_llm.routes.table import ROUTE_TABLE, ROUTES, Route, RouteTable

__all__ = ["ROUTES", "ROUTE_TABLE", "Route", "RouteDescriptor", "RouteTable", "load"]
