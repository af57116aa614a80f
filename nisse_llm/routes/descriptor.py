"""What one proxy route is: its descriptor, read by every layer that dispatches by route.

A descriptor names the route's parts in the layers above this one (renderer, stream
accumulator, clients, the testing kit's replies) by ``"module:name"``, loaded on first
use: the table sits at the bottom, so config can route by it, and a program loads only
the routes it takes.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from nisse_llm import defaults

__all__ = ["RouteDescriptor", "load"]


@functools.cache
def load(ref: str) -> Any:
    """The object ``"package.module:name"`` names (its module imported on first use)."""
    module, _, name = ref.partition(":")
    return getattr(importlib.import_module(module), name)


@dataclass(frozen=True, slots=True)
class RouteDescriptor:
    """One proxy route, everything a dispatch needs to know of it."""

    #: The route's name, as pinned and recorded (``roles.<role>.route``).
    name: str
    #: The endpoint under the proxy's base URL.
    path: str
    #: The headers that carry the proxy token on this route.
    auth_headers: Callable[[str], dict[str, str]]
    #: Spliced before a rendered body's closing brace to ask for a stream.
    stream_fields: bytes
    #: The renderer class (built with no arguments; its ``parse`` reads the replies).
    renderer: str
    #: The stream accumulator class (built with ``requested_model=`` and ``parse=``).
    accumulator: str
    #: The sync and the async client class.
    clients: tuple[str, str]
    #: The testing kit's `RouteKit`: how a scripted upstream answers on the route.
    kit: str
    #: Which models take the route by default: those with a passthrough prefix, those whose
    #: rule row names it, or every model no other route claims (one route of the table).
    chosen_by: Literal["prefixes", "rules_row", "default"] = "rules_row"
    #: Delegations run long turns here: the read timeout is the passthrough's, not chat's.
    long_turns: bool = False
    #: The vendor serving every model on the route (None: the model's own).
    family: Literal["anthropic", "openai"] | None = None
    #: The most stop sequences a request may carry (None: the model's rules decide).
    max_stop_sequences: int | None = None
    #: The typed request model whose JSON Schema the CLI writes (``""``: none).
    request_model: str = ""
    #: The path's end a scripted upstream answers on (default: the whole ``path``).
    served_at: str = ""
    #: The package's modules written for this route alone (they may spell its name).
    modules: tuple[str, ...] = ()
    #: What decides a call's rules on the route (`decide`): config's option rules.
    decider: str = "nisse_llm.config.option_rules:decide"

    @property
    def default_timeout_s(self) -> float:
        """The read timeout of a client on this route when none is given."""
        return defaults.PASSTHROUGH_TIMEOUT_S if self.long_turns else defaults.CHAT_TIMEOUT_S

    def new_renderer(self) -> Any:
        """A fresh renderer for the route."""
        return load(self.renderer)()

    def decide(
        self, model: str, options: Any, *, max_tokens: int | None, prefixes: tuple[str, ...] = ()
    ) -> Any:
        """The rules of a call to ``model`` with ``options`` (a `RequestOptions` or None) on
        this route, decided once and cached (a `nisse_llm.config.call_rules.CallRules`):
        what the transport hands its renderer, and what a standalone render asks here."""
        return load(self.decider)(self.name, model, options, max_tokens, prefixes)

    def client_class(self, *, asynchronous: bool) -> Any:
        """The route's client class, sync or async."""
        return load(self.clients[1] if asynchronous else self.clients[0])

    def serves_path(self, path: str) -> bool:
        """Whether a request path (its query and trailing slash ignored) is this route's."""
        bare = path.split("?", 1)[0].rstrip("/")
        return bare.endswith(self.served_at or self.path)
