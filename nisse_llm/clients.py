"""Clients for the proxy's two routes, sync and async, and routing by model and by role.

Every client is the same exchange (`nisse_llm._transport`) over a different route:
`LiteLLMClient` posts chat completions, `AnthropicPassthroughClient` posts Anthropic
messages; the async twins differ only in awaiting the send and the sleep.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, Self, TypeVar

import httpx
from pydantic import SecretStr

from nisse_llm._classify import RateLimitPolicy
from nisse_llm._transport import Core, RouteSpec, UsageCallback, shared_ssl_context
from nisse_llm.canonical import CanonicalEvent, LogLike, ToolLike, Usage
from nisse_llm.errors import LLMError
from nisse_llm.render import Renderer
from nisse_llm.routing import DEFAULT_PASSTHROUGH_PREFIXES, Route, has_native_adapter, route_for

__all__ = [
    "AnthropicPassthroughClient",
    "AsyncAnthropicPassthroughClient",
    "AsyncLiteLLMClient",
    "AsyncRoleRouter",
    "LiteLLMClient",
    "RoleRouter",
    "Usage",
    "UsageCallback",
    "has_native_adapter",
    "select_client",
]


def _chat_renderer() -> Renderer:
    from nisse_llm.render.openai_chat import OpenAIChatRenderer

    return OpenAIChatRenderer()


def _messages_renderer() -> Renderer:
    from nisse_llm.render.anthropic_messages import AnthropicMessagesRenderer

    return AnthropicMessagesRenderer()


CHAT_ROUTE = RouteSpec(
    name="openai_chat",
    path="/chat/completions",
    default_timeout_s=120.0,
    renderer=_chat_renderer,
    auth_headers=lambda token: {"authorization": f"Bearer {token}"},
)
# LiteLLM authenticates /v1/messages by x-api-key alone, and Authorization wins when
# both are sent; sending both keeps either proxy configuration working.
MESSAGES_ROUTE = RouteSpec(
    name="anthropic_messages",
    path="/v1/messages",
    default_timeout_s=300.0,
    renderer=_messages_renderer,
    auth_headers=lambda token: {
        "authorization": f"Bearer {token}",
        "x-api-key": token,
        "anthropic-version": "2023-06-01",
    },
)
ROUTE_SPECS: Mapping[Route, RouteSpec] = {
    CHAT_ROUTE.name: CHAT_ROUTE,
    MESSAGES_ROUTE.name: MESSAGES_ROUTE,
}


class _PinLike(Protocol):
    """What the clients read from a pinned configuration."""

    @property
    def base_url(self) -> str: ...
    @property
    def token(self) -> SecretStr: ...
    @property
    def max_output_tokens(self) -> int: ...
    @property
    def passthrough_prefixes(self) -> tuple[str, ...]: ...
    @property
    def rate_limit_retries(self) -> int: ...
    @property
    def rate_limit_wait_s(self) -> float: ...
    @property
    def rate_limit_wait_cap_s(self) -> float: ...
    def timeout_for(self, route: Route) -> float: ...
    def model_for(self, role: str) -> str: ...
    def role_models(self) -> dict[str, str]: ...


class _SettingsLike(Protocol):
    def pin(self) -> Any: ...


def _pin_options(pin: _PinLike, route: RouteSpec) -> dict[str, Any]:
    return {
        "timeout_s": pin.timeout_for(route.name),
        "max_tokens": pin.max_output_tokens,
        "rate_limit_retries": pin.rate_limit_retries,
        "rate_limit_wait_s": pin.rate_limit_wait_s,
        "rate_limit_wait_cap_s": pin.rate_limit_wait_cap_s,
    }


class _ClientBase:
    """What sync and async clients share: the core, its repr, its usage, pin constructors."""

    ROUTE: ClassVar[RouteSpec]
    _core: Core

    def _setup(
        self,
        base_url: str,
        token: str | SecretStr,
        *,
        timeout_s: float | None,
        max_tokens: int | None,
        rate_limit_retries: int,
        rate_limit_wait_s: float,
        rate_limit_wait_cap_s: float,
        on_usage: UsageCallback | None,
    ) -> Core:
        self._core = Core(
            self.ROUTE,
            base_url,
            token,
            timeout_s=timeout_s,
            max_tokens=max_tokens,
            policy=RateLimitPolicy(
                retries=rate_limit_retries,
                wait_s=rate_limit_wait_s,
                wait_cap_s=rate_limit_wait_cap_s,
            ),
            on_usage=on_usage,
        )
        return self._core

    @property
    def last_usage(self) -> Usage | None:
        """Usage of the most recent successful call (under concurrency: any caller's)."""
        return self._core.last_usage

    @property
    def route(self) -> Route:
        """The proxy route this client posts to."""
        return self.ROUTE.name

    def __repr__(self) -> str:
        return self._core.describe(type(self))

    @classmethod
    def from_pin(cls, pin: _PinLike, **options: Any) -> Self:
        """A client configured by a pin; ``options`` (transport, sleep, on_usage...) win."""
        merged = {**_pin_options(pin, cls.ROUTE), **options}
        return cls(pin.base_url, pin.token, **merged)

    @classmethod
    def from_settings(cls, settings: _SettingsLike, **options: Any) -> Self:
        """A client configured by settings (pinned on the spot)."""
        return cls.from_pin(settings.pin(), **options)

    if TYPE_CHECKING:

        def __init__(self, base_url: str, token: str | SecretStr, **options: Any) -> None: ...


class _SyncClient(_ClientBase):
    def __init__(
        self,
        base_url: str,
        token: str | SecretStr,
        *,
        timeout_s: float | None = None,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], object] = time.sleep,
        max_tokens: int | None = None,
        rate_limit_retries: int = 1,
        rate_limit_wait_s: float = 20.0,
        rate_limit_wait_cap_s: float = 60.0,
        on_usage: UsageCallback | None = None,
    ) -> None:
        core = self._setup(
            base_url,
            token,
            timeout_s=timeout_s,
            max_tokens=max_tokens,
            rate_limit_retries=rate_limit_retries,
            rate_limit_wait_s=rate_limit_wait_s,
            rate_limit_wait_cap_s=rate_limit_wait_cap_s,
            on_usage=on_usage,
        )
        self._sleep = sleep
        self._http = httpx.Client(
            headers=core.headers,
            timeout=core.timeout_s,
            transport=transport,
            verify=shared_ssl_context(),
        )

    def complete(
        self,
        events: LogLike,
        tools: Iterable[ToolLike] | None,
        model: str,
        system: str | None = None,
    ) -> list[CanonicalEvent]:
        """Send the log to ``model`` and return the reply's canonical events."""
        core = self._core
        call = core.begin(events, tools, model, system)
        while True:
            with call.sending():
                response = self._http.post(core.url, content=call.body)
            wait = call.received(response)
            if wait is None:
                return call.finish(response)
            self._sleep(wait)
            call.slept(wait)

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class _AsyncClient(_ClientBase):
    def __init__(
        self,
        base_url: str,
        token: str | SecretStr,
        *,
        timeout_s: float | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
        max_tokens: int | None = None,
        rate_limit_retries: int = 1,
        rate_limit_wait_s: float = 20.0,
        rate_limit_wait_cap_s: float = 60.0,
        on_usage: UsageCallback | None = None,
    ) -> None:
        core = self._setup(
            base_url,
            token,
            timeout_s=timeout_s,
            max_tokens=max_tokens,
            rate_limit_retries=rate_limit_retries,
            rate_limit_wait_s=rate_limit_wait_s,
            rate_limit_wait_cap_s=rate_limit_wait_cap_s,
            on_usage=on_usage,
        )
        self._sleep = sleep
        self._http = httpx.AsyncClient(
            headers=core.headers,
            timeout=core.timeout_s,
            transport=transport,
            verify=shared_ssl_context(),
        )

    async def complete(
        self,
        events: LogLike,
        tools: Iterable[ToolLike] | None,
        model: str,
        system: str | None = None,
    ) -> list[CanonicalEvent]:
        """Send the log to ``model`` and return the reply's canonical events."""
        core = self._core
        call = core.begin(events, tools, model, system)
        while True:
            with call.sending():
                response = await self._http.post(core.url, content=call.body)
            wait = call.received(response)
            if wait is None:
                return call.finish(response)
            await self._sleep(wait)
            call.slept(wait)

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


class LiteLLMClient(_SyncClient):
    """The chat-completions route: ``POST {base}/chat/completions``."""

    ROUTE = CHAT_ROUTE


class AnthropicPassthroughClient(_SyncClient):
    """The Anthropic messages passthrough: ``POST {base}/v1/messages``."""

    ROUTE = MESSAGES_ROUTE


class AsyncLiteLLMClient(_AsyncClient):
    """`LiteLLMClient` for asyncio: ``await complete(...)``, ``aclose()``, ``async with``."""

    ROUTE = CHAT_ROUTE


class AsyncAnthropicPassthroughClient(_AsyncClient):
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


_SYNC_CLIENTS: Mapping[Route, type[_SyncClient]] = {
    "openai_chat": LiteLLMClient,
    "anthropic_messages": AnthropicPassthroughClient,
}
_ASYNC_CLIENTS: Mapping[Route, type[_AsyncClient]] = {
    "openai_chat": AsyncLiteLLMClient,
    "anthropic_messages": AsyncAnthropicPassthroughClient,
}

K = TypeVar("K", bound=_ClientBase)


class _RouterBase(Generic[K]):
    """Role -> model (from the pin alone) -> route -> one client per route."""

    def __init__(self, models: Mapping[str, str], clients: Mapping[str, K]) -> None:
        self._models = dict(models)
        self._clients = dict(clients)

    @classmethod
    def _build(
        cls, pin: _PinLike, kinds: Mapping[Route, type[K]], options: Mapping[str, Any]
    ) -> tuple[dict[str, str], dict[str, K]]:
        models = pin.role_models()
        prefixes = pin.passthrough_prefixes
        wanted = {role: route_for(model, prefixes) for role, model in models.items()}
        by_route = {
            route: kinds[route].from_pin(pin, **options) for route in sorted(set(wanted.values()))
        }
        return models, {role: by_route[route] for role, route in wanted.items()}

    def model_for(self, role: str) -> str:
        """The pinned model for ``role`` (`LLMError` for an unknown role)."""
        if role not in self._models:
            raise LLMError(f"unknown role: {role!r}; known roles: {', '.join(self._models)}")
        return self._models[role]

    def route_for(self, role: str) -> Route:
        """The route ``role``'s calls take."""
        return self._client(role).route

    def _client(self, role: str) -> K:
        self.model_for(role)
        return self._clients[role]

    def _distinct(self) -> list[K]:
        return list({id(c): c for c in self._clients.values()}.values())

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._models!r})"


class RoleRouter(_RouterBase[_SyncClient]):
    """Complete by role through a pin's mapping; one connection pool per route used."""

    @classmethod
    def from_pin(cls, pin: _PinLike, **options: Any) -> Self:
        """A router over ``pin``; ``options`` (transport, sleep, on_usage...) go to each client."""
        return cls(*cls._build(pin, _SYNC_CLIENTS, options))

    def complete(
        self,
        role: str,
        events: LogLike,
        tools: Iterable[ToolLike] | None,
        system: str | None = None,
    ) -> list[CanonicalEvent]:
        """Send the log to ``role``'s pinned model down that model's route."""
        return self._client(role).complete(events, tools, self._models[role], system)

    def close(self) -> None:
        """Close every client's pool."""
        for client in self._distinct():
            client.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class AsyncRoleRouter(_RouterBase[_AsyncClient]):
    """`RoleRouter` for asyncio."""

    @classmethod
    def from_pin(cls, pin: _PinLike, **options: Any) -> Self:
        """A router over ``pin``; ``options`` (transport, sleep, on_usage...) go to each client."""
        return cls(*cls._build(pin, _ASYNC_CLIENTS, options))

    async def complete(
        self,
        role: str,
        events: LogLike,
        tools: Iterable[ToolLike] | None,
        system: str | None = None,
    ) -> list[CanonicalEvent]:
        """Send the log to ``role``'s pinned model down that model's route."""
        return await self._client(role).complete(events, tools, self._models[role], system)

    async def aclose(self) -> None:
        """Close every client's pool."""
        for client in self._distinct():
            await client.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
