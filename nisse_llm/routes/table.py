"""The route table: every proxy route's descriptor, registered once, read by every dispatch
(routing, rendering, streaming, clients, telemetry, the testing kit, the CLI)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Literal, TypeAlias

from nisse_llm.routes.anthropic_messages import ANTHROPIC_MESSAGES
from nisse_llm.routes.descriptor import RouteDescriptor
from nisse_llm.routes.openai_chat import OPENAI_CHAT
from nisse_llm.routes.openai_responses import OPENAI_RESPONSES

__all__ = ["ROUTES", "ROUTE_TABLE", "Route", "RouteTable"]

#: A route's name: any route the table holds (the package's three, and any a program
#: registers), which is what a role profile's ``route`` may say.
Route: TypeAlias = str


class RouteTable:
    """Route name -> descriptor; a new route is one `register` call."""

    def __init__(self, *routes: RouteDescriptor) -> None:
        self._routes: dict[str, RouteDescriptor] = {}
        for route in routes:
            self.register(route)

    def register(self, route: RouteDescriptor) -> RouteDescriptor:
        """Add ``route``; `ValueError` if another route has its name or its path."""
        for known in self._routes.values():
            if known.name == route.name or known.path == route.path:
                raise ValueError(f"route {route.name!r} ({route.path}) clashes with {known}")
        if route.chosen_by == "default" and any(
            r.chosen_by == "default" for r in self._routes.values()
        ):
            raise ValueError(f"route {route.name!r}: the table already has a default route")
        self._routes[route.name] = route
        return route

    def unregister(self, name: str) -> None:
        """Take the route named ``name`` out of the table (a test's toy route)."""
        del self._routes[name]

    def __getitem__(self, name: str) -> RouteDescriptor:
        try:
            return self._routes[name]
        except KeyError:
            raise KeyError(f"no route {name!r}; the routes are {', '.join(self._routes)}") from None

    def __contains__(self, name: object) -> bool:
        return name in self._routes

    def __iter__(self) -> Iterator[RouteDescriptor]:
        return iter(tuple(self._routes.values()))

    def names(self) -> tuple[str, ...]:
        """Every route's name, in the order they were registered."""
        return tuple(self._routes)

    @property
    def default(self) -> RouteDescriptor:
        """The route of every model no other route claims."""
        return next(r for r in self._routes.values() if r.chosen_by == "default")

    def chosen_by(self, how: Literal["prefixes", "rules_row"]) -> tuple[RouteDescriptor, ...]:
        """The routes that claim models ``how``."""
        return tuple(r for r in self._routes.values() if r.chosen_by == how)

    def for_path(self, path: str) -> RouteDescriptor | None:
        """The route a request path speaks (the longest matching end), or None."""
        matching = [r for r in self._routes.values() if r.serves_path(path)]
        return max(matching, key=lambda r: len(r.served_at or r.path), default=None)


ROUTE_TABLE = RouteTable(OPENAI_CHAT, ANTHROPIC_MESSAGES, OPENAI_RESPONSES)
#: The package's own routes' names (the table may hold more: `RouteTable.names`).
ROUTES: tuple[Route, ...] = ROUTE_TABLE.names()
