"""Clients for every proxy route, sync and async, and choosing one by model.

Every client is the same exchange (`nisse_llm.transport.core`) over a different route:
`LiteLLMClient` posts chat completions, `AnthropicPassthroughClient` posts Anthropic
messages; the async twins differ only in awaiting the send and the sleep, and are the
one source of the sync code (`nisse_llm.transport._async.clients`, from which
``tests/gen_sync.py`` generates `nisse_llm.transport._sync.clients`). ``stream()``
is ``complete()`` read as server-sent events: a `ReplyStream` (or `AsyncReplyStream`)
yields typed deltas, then holds the very events ``complete()`` would have returned.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TypeVar

from nisse_llm.config.routing import DEFAULT_PASSTHROUGH_PREFIXES, Route, has_native_adapter
from nisse_llm.log.canonical import Usage
from nisse_llm.transport._async.clients import AsyncReplyStream, AsyncRouteClient
from nisse_llm.transport._client_base import CHAT_ROUTE, MESSAGES_ROUTE, ROUTE_SPECS
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

    ROUTE = CHAT_ROUTE


class AnthropicPassthroughClient(SyncRouteClient):
    """The Anthropic messages passthrough: ``POST {base}/v1/messages``."""

    ROUTE = MESSAGES_ROUTE


class AsyncLiteLLMClient(AsyncRouteClient):
    """`LiteLLMClient` for asyncio: ``await complete(...)``, ``aclose()``, ``async with``."""

    ROUTE = CHAT_ROUTE


class AsyncAnthropicPassthroughClient(AsyncRouteClient):
    """`AnthropicPassthroughClient` for asyncio."""

    ROUTE = MESSAGES_ROUTE


C = TypeVar("C")


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


#: Route -> client class, for the routers (the Responses route's loads on first need).
SYNC_CLIENTS: Mapping[Route, type[SyncRouteClient]] = {
    "openai_chat": LiteLLMClient,
    "anthropic_messages": AnthropicPassthroughClient,
}
ASYNC_CLIENTS: Mapping[Route, type[AsyncRouteClient]] = {
    "openai_chat": AsyncLiteLLMClient,
    "anthropic_messages": AsyncAnthropicPassthroughClient,
}
