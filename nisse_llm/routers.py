"""Role routers: the pin resolves a role to its model, the model to its route's client.

`RoleRouter` (and `AsyncRoleRouter`) holds one client per route the pin's roles use, each
with its own connection pool, and layers the role's profile under each call's options.
With a task file (``store=``) it records every call as it ends.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic, Self, TypeVar

from nisse_llm._headroom import AsyncRouterLimits, RouterLimits
from nisse_llm._transport import (
    Call,
    CallObserver,
    router_role,
)
from nisse_llm.canonical import CanonicalEvent, LogLike, ToolLike, Usage
from nisse_llm.options import RequestOptions
from nisse_llm.routing import Route

if TYPE_CHECKING:
    from pydantic import BaseModel

    from nisse_llm.config import Pin
    from nisse_llm.logstore import LogStore
    from nisse_llm.options import RequestOptions
    from nisse_llm.typed import TypedReply

    M = TypeVar("M", bound=BaseModel)
from nisse_llm.clients import (
    _ASYNC_CLIENTS,
    _SYNC_CLIENTS,
    AsyncReplyStream,
    ReplyStream,
    _AsyncClient,
    _ClientBase,
    _SyncClient,
)

__all__ = ["AsyncRoleRouter", "RoleRouter"]


class _Kinds(dict[Route, Any]):
    """Route -> client class for the routers; the Responses route's class is imported on
    first need, so a program that never takes that route loads none of it."""

    def __init__(self, classes: Mapping[Route, Any], responses: str) -> None:
        super().__init__(classes)
        self._responses = responses

    def __missing__(self, route: Route) -> Any:
        if route != "openai_responses":
            raise KeyError(route)
        from nisse_llm import responses_client

        self[route] = cls = getattr(responses_client, self._responses)
        return cls


_SYNC_KINDS: Mapping[Route, type[_SyncClient]] = _Kinds(_SYNC_CLIENTS, "OpenAIResponsesClient")
_ASYNC_KINDS: Mapping[Route, type[_AsyncClient]] = _Kinds(
    _ASYNC_CLIENTS, "AsyncOpenAIResponsesClient"
)

K = TypeVar("K", bound=_ClientBase)


@contextmanager
def _acting(role: str) -> Iterator[None]:
    """Mark the calls made inside as made for ``role`` (read when each call begins)."""
    acting = router_role.set(role)
    try:
        yield
    finally:
        router_role.reset(acting)


def _recorder(store: LogStore) -> CallObserver:
    """An observer that appends each call's record to ``store`` as the call ends."""
    from nisse_llm.taskrecord import CallRecord

    def record(call: Call, usage: Usage | None, outcome: str) -> None:
        store.append_call(
            CallRecord(
                role=call.role,
                model=call.model,
                route=call.core.route.name,
                usage=usage or Usage(),
                call=call.info,
                outcome=outcome,
            )
        )

    return record


class _RouterBase(Generic[K]):
    """Role -> model by the pin alone, model -> route by the pin's prefixes, one client per route."""

    def __init__(
        self, pin: Pin, clients: Mapping[Route, K], *, store: LogStore | None = None
    ) -> None:
        self._pin = pin
        self._clients = dict(clients)
        self._store = store
        if store is not None:
            store.begin(pin)  # a new file gets the header; another task's file is refused
            observer = _recorder(store)
            for client in self._clients.values():
                client._core.on_call = observer
                client._core.conversation_id = store.task_id

    @property
    def store(self) -> LogStore | None:
        """The task file every call's record is appended to (None: calls are not recorded)."""
        return self._store

    @staticmethod
    def _clients_for(
        pin: Pin, kinds: Mapping[Route, type[K]], options: Mapping[str, Any]
    ) -> dict[Route, K]:
        routes = {pin.route(role) for role in pin.roles.pinned()}
        return {route: kinds[route].from_pin(pin, **options) for route in sorted(routes)}

    @property
    def pin(self) -> Pin:
        """The pin this router completes by."""
        return self._pin

    def _resolve(self, role: str) -> tuple[str, K]:
        model = self._pin.model_for(role)
        return model, self._clients[self._pin.route(role)]

    def _call(
        self, role: str, options: RequestOptions | None
    ) -> tuple[str, K, RequestOptions | None]:
        """``role``'s model, client and options: the call's over the role's profile (the
        client's ``max_tokens`` is the last layer, applied where the body is rendered)."""
        model, client = self._resolve(role)
        profile = self._pin.options_for(role)
        return model, client, profile if options is None else options.over(profile)

    def client_for(self, role: str) -> K:
        """The client ``role``'s calls go through (`LLMError` for an unknown role)."""
        return self._resolve(role)[1]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._pin.roles.pinned()!r})"


class RoleRouter(RouterLimits, _RouterBase[_SyncClient]):
    """Complete by role through a pin's mapping; one connection pool per route used."""

    @classmethod
    def from_pin(cls, pin: Pin, *, store: LogStore | None = None, **options: Any) -> Self:
        """A router over ``pin``; ``options`` (transport, sleep, on_usage...) go to each client.

        With ``store``, every call's record (role, model, route, usage, cost, outcome) is
        appended to that task file as the call ends, success or failure; the store is
        begun with ``pin`` first (`TaskPinMismatch` if it holds another task).
        """
        return cls(pin, cls._clients_for(pin, _SYNC_KINDS, options), store=store)

    def complete(
        self,
        role: str,
        events: LogLike,
        tools: Iterable[ToolLike] | None,
        system: str | None = None,
        *,
        options: RequestOptions | None = None,
        cache: bool | None = None,
    ) -> list[CanonicalEvent]:
        """Send the log to ``role``'s pinned model down that model's route; ``options``
        override the role's profile field by field, ``cache`` the prompt-cache setting."""
        model, client, merged = self._call(role, options)
        with _acting(role):
            return client.complete(events, tools, model, system, cache=cache, options=merged)

    def complete_as(
        self,
        output_type: type[M],
        role: str,
        events: LogLike,
        tools: Iterable[ToolLike] | None,
        system: str | None = None,
        *,
        options: RequestOptions | None = None,
        repair_attempts: int = 0,
        cache: bool | None = None,
    ) -> TypedReply[M]:
        """An answer from ``role``'s pinned model validated into ``output_type``; ``options``
        override the role's profile (whose ``reasoning`` decides how the answer is asked)."""
        model, client, merged = self._call(role, options)
        with _acting(role):
            return client.complete_as(
                output_type,
                events,
                tools,
                model,
                system,
                options=merged,
                repair_attempts=repair_attempts,
                cache=cache,
            )

    def stream(
        self,
        role: str,
        events: LogLike,
        tools: Iterable[ToolLike] | None,
        system: str | None = None,
        *,
        options: RequestOptions | None = None,
        cache: bool | None = None,
    ) -> ReplyStream:
        """Stream the reply of ``role``'s pinned model (see `LiteLLMClient.stream`)."""
        model, client, merged = self._call(role, options)
        with _acting(role):
            return client.stream(events, tools, model, system, cache=cache, options=merged)

    def close(self) -> None:
        """Close every client's pool."""
        for client in self._clients.values():
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


class AsyncRoleRouter(AsyncRouterLimits, _RouterBase[_AsyncClient]):
    """`RoleRouter` for asyncio."""

    @classmethod
    def from_pin(cls, pin: Pin, *, store: LogStore | None = None, **options: Any) -> Self:
        """A router over ``pin``; ``options`` (transport, sleep, on_usage...) go to each client.

        With ``store``, every call's record (role, model, route, usage, cost, outcome) is
        appended to that task file as the call ends, success or failure; the store is
        begun with ``pin`` first (`TaskPinMismatch` if it holds another task).
        """
        return cls(pin, cls._clients_for(pin, _ASYNC_KINDS, options), store=store)

    async def complete(
        self,
        role: str,
        events: LogLike,
        tools: Iterable[ToolLike] | None,
        system: str | None = None,
        *,
        options: RequestOptions | None = None,
        cache: bool | None = None,
    ) -> list[CanonicalEvent]:
        """Send the log to ``role``'s pinned model down that model's route; ``options``
        override the role's profile field by field, ``cache`` the prompt-cache setting."""
        model, client, merged = self._call(role, options)
        with _acting(role):
            return await client.complete(events, tools, model, system, cache=cache, options=merged)

    async def complete_as(
        self,
        output_type: type[M],
        role: str,
        events: LogLike,
        tools: Iterable[ToolLike] | None,
        system: str | None = None,
        *,
        options: RequestOptions | None = None,
        repair_attempts: int = 0,
        cache: bool | None = None,
    ) -> TypedReply[M]:
        """An answer from ``role``'s pinned model validated into ``output_type``; ``options``
        override the role's profile (whose ``reasoning`` decides how the answer is asked)."""
        model, client, merged = self._call(role, options)
        with _acting(role):
            return await client.complete_as(
                output_type,
                events,
                tools,
                model,
                system,
                options=merged,
                repair_attempts=repair_attempts,
                cache=cache,
            )

    def stream(
        self,
        role: str,
        events: LogLike,
        tools: Iterable[ToolLike] | None,
        system: str | None = None,
        *,
        options: RequestOptions | None = None,
        cache: bool | None = None,
    ) -> AsyncReplyStream:
        """Stream the reply of ``role``'s pinned model (see `AsyncLiteLLMClient.stream`)."""
        model, client, merged = self._call(role, options)
        with _acting(role):
            return client.stream(events, tools, model, system, cache=cache, options=merged)

    async def aclose(self) -> None:
        """Close every client's pool."""
        for client in self._clients.values():
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
