"""Clients for every proxy route, sync and async, and choosing one by model.

Every client is the same exchange (`nisse_llm.transport.core`) over a different route of
the route table (`nisse_llm.routes`): `LiteLLMClient` posts chat completions,
`AnthropicPassthroughClient` posts Anthropic messages (`OpenAIResponsesClient`, in
`nisse_llm.transport.responses_client`, the Responses API); the async twins differ only in awaiting the send and the sleep, and are the
one source of the sync code (`nisse_llm.transport._async.clients`, from which
``scripts/gen_sync.py`` generates `nisse_llm.transport._sync.clients`). ``stream()``
is ``complete()`` read as server-sent events: a `ReplyStream` (or `AsyncReplyStream`)
yields typed deltas, then holds the very events ``complete()`` would have returned.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import TypeVar

from nisse_llm.config.routing import DEFAULT_PASSTHROUGH_PREFIXES, has_native_adapter
from nisse_llm.events.canonical import Usage
from nisse_llm.routes import ROUTE_TABLE, RouteDescriptor
from nisse_llm.routes.anthropic_messages import ANTHROPIC_MESSAGES
from nisse_llm.routes.openai_chat import OPENAI_CHAT
from nisse_llm.transport._async.clients import AsyncReplyStream, AsyncRouteClient
from nisse_llm.transport._sync.clients import ReplyStream, SyncRouteClient
from nisse_llm.transport.core import UsageCallback

__all__ = [
    "ASYNC_CLIENTS",
    "CHAT_ROUTE",
    "MESSAGES_ROUTE",
    "ROUTE_SPECS",
    "SYNC_CLIENTS",
    "AnthropicPassthroughClient",
    "AsyncAnthropicPassthroughClient",
    "AsyncLiteLLMClient",
    "AsyncReplyStream",
    "AsyncRouteClient",
    "LiteLLMClient",
    "ReplyStream",
    "SyncRouteClient",
    "Usage",
    "UsageCallback",
    "has_native_adapter",
    "select_client",
]


class LiteLLMClient(SyncRouteClient):
    """The chat-completions route: ``POST {base}/chat/completions``."""

    ROUTE = OPENAI_CHAT


class AnthropicPassthroughClient(SyncRouteClient):
    """The Anthropic messages passthrough: ``POST {base}/v1/messages``."""

    ROUTE = ANTHROPIC_MESSAGES


class AsyncLiteLLMClient(AsyncRouteClient):
    """`LiteLLMClient` for asyncio: ``await complete(...)``, ``aclose()``, ``async with``."""

    ROUTE = OPENAI_CHAT


class AsyncAnthropicPassthroughClient(AsyncRouteClient):
    """`AnthropicPassthroughClient` for asyncio."""

    ROUTE = ANTHROPIC_MESSAGES


C = TypeVar("C")
K = TypeVar("K")


def select_client(
    model: str,
    normalized: C,
    passthrough: C,
    *,
    prefixes: Iterable[str] = DEFAULT_PASSTHROUGH_PREFIXES,
) -> C:
    """The passthrough client for a model with a vendor-native route, else the normalized one.

    Chosen by the model, not by where the caller sits (spec A13).
    """
    return passthrough if has_native_adapter(model, prefixes) else normalized


class _ClientClasses(Mapping[str, type[K]]):
    """Route name -> its client class, read from the route table on each lookup (a route's
    classes load on first need, so a program that never takes a route loads none of it)."""

    def __init__(self, *, asynchronous: bool) -> None:
        self._asynchronous = asynchronous

    def __getitem__(self, route: str) -> type[K]:
        cls: type[K] = ROUTE_TABLE[route].client_class(asynchronous=self._asynchronous)
        return cls

    def __iter__(self) -> Iterator[str]:
        return iter(ROUTE_TABLE.names())

    def __len__(self) -> int:
        return len(ROUTE_TABLE.names())


#: Route name -> client class, every route of the table (sync, then async).
SYNC_CLIENTS: Mapping[str, type[SyncRouteClient]] = _ClientClasses(asynchronous=False)
ASYNC_CLIENTS: Mapping[str, type[AsyncRouteClient]] = _ClientClasses(asynchronous=True)
#: The routes' descriptors, under their former names here.
CHAT_ROUTE = OPENAI_CHAT
MESSAGES_ROUTE = ANTHROPIC_MESSAGES
ROUTE_SPECS: Mapping[str, RouteDescriptor] = {route.name: route for route in ROUTE_TABLE}
