"""Role routers: the pin resolves a role to its model, the model to its route's client.

`RoleRouter` (and `AsyncRoleRouter`) holds one client per route the pin's roles use, each
with its own connection pool, and layers the role's profile under each call's options.
With a task file (``store=``) it records every call as it starts and as it ends. With a
`CompactionPolicy` (``compaction=``) it compacts a call's log near the model's window.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic, Literal, Self, TypeVar

from nisse_llm.config._bounds import check_client_numbers
from nisse_llm.config.options import RequestOptions
from nisse_llm.config.routing import Route
from nisse_llm.errors import ContextWindowExceeded
from nisse_llm.log.canonical import (
    CallInfo,
    CanonicalEvent,
    LogLike,
    ToolLike,
    ToolsLike,
    ToolSpec,
    Usage,
    as_events,
    as_tool_specs,
)
from nisse_llm.transport._headroom import AsyncRouterLimits, RouterLimits, _render
from nisse_llm.transport.core import (
    Call,
    CallObserver,
    router_role,
)

if TYPE_CHECKING:
    from pydantic import BaseModel

    from nisse_llm.config.options import RequestOptions
    from nisse_llm.config.settings import Pin
    from nisse_llm.render.typed import TypedReply
    from nisse_llm.task.logstore import LogStore
    from nisse_llm.task.summaries import CompactionPolicy

    M = TypeVar("M", bound=BaseModel)
from nisse_llm.transport.clients import (
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
        from nisse_llm.transport import responses_client

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


#: How the router compacted the log of the call being made (read by the call's record).
_compacted_as: ContextVar[str | None] = ContextVar("nisse_llm_compacted_as", default=None)


@contextmanager
def _compacting(how: str | None) -> Iterator[None]:
    token = _compacted_as.set(how)
    try:
        yield
    finally:
        _compacted_as.reset(token)


def _recorder(store: LogStore) -> tuple[Callable[[Call], None], CallObserver]:
    """Observers that append a start record to ``store`` before each request leaves and
    the call's record, naming its start, as the call ends."""
    from nisse_llm.task.records import CallRecord

    starts: dict[int, int] = {}  # id(call) -> its start record's number, while it runs

    def compacted() -> Literal["threshold", "overflow"] | None:
        how = _compacted_as.get()
        return "threshold" if how == "threshold" else "overflow" if how else None

    def start(call: Call) -> None:
        record = CallRecord(
            role=call.role,
            model=call.model,
            route=call.core.route.name,
            outcome="started",
            compacted=compacted(),
        )
        starts[id(call)] = store.append_call(record).seq

    def record(call: Call, usage: Usage | None, outcome: str) -> None:
        store.append_call(
            CallRecord(
                role=call.role,
                model=call.model,
                route=call.core.route.name,
                usage=usage or Usage(),
                call=call.info,
                outcome=outcome,
                start=starts.pop(id(call), None),
                compacted=compacted(),
            )
        )

    return start, record


class _RouterBase(Generic[K]):
    """Role -> model by the pin alone, model -> route by the pin's prefixes, one client per route."""

    def __init__(
        self,
        pin: Pin,
        clients: Mapping[Route, K],
        *,
        store: LogStore | None = None,
        compaction: CompactionPolicy | None = None,
    ) -> None:
        self._pin = pin
        self._clients = dict(clients)
        self._store = store
        self._compaction = compaction
        if compaction is not None and compaction.summarize_role is not None:
            self._resolve(compaction.summarize_role)  # an unknown role fails now, not mid-task
        #: The last log compacted (as given) and what it became, for the next call.
        self._compacted: tuple[list[CanonicalEvent], list[CanonicalEvent]] | None = None
        self._last_usage: Usage | None = None
        self._last_call: CallInfo | None = None
        start, recorder = _recorder(store) if store is not None else (None, None)
        if store is not None:
            store.begin(pin)  # a new file gets the header; another task's file is refused

        def observe(call: Call, usage: Usage | None, outcome: str) -> None:
            if outcome == "ok":
                self._last_usage = usage
                self._last_call = call.core.last_call
            if recorder is not None:
                recorder(call, usage, outcome)

        for client in self._clients.values():
            client._core.on_call = observe
            if store is not None:
                client._core.on_start = start
                client._core.conversation_id = store.task_id

    @property
    def compaction(self) -> CompactionPolicy | None:
        """The policy by which calls' logs are compacted (None: never)."""
        return self._compaction

    @property
    def compacted_log(self) -> list[CanonicalEvent] | None:
        """The log the last compaction made (what later calls send in place of the log it
        replaced), or None before any."""
        return None if self._compacted is None else list(self._compacted[1])

    def _substituted(self, log: list[CanonicalEvent]) -> list[CanonicalEvent]:
        """``log`` with the log compacted earlier replaced by its compaction, when the
        caller's log still starts with it (a caller keeping the full log)."""
        if self._compacted is None:
            return log
        before, after = self._compacted
        if len(log) >= len(before) and all(
            a is b or a == b for a, b in zip(before, log, strict=False)
        ):
            return after + log[len(before) :]
        return log

    def _keep(self, before: list[CanonicalEvent], after: list[CanonicalEvent]) -> None:
        """Remember a compaction for later calls and record it in the task file."""
        self._compacted = (before, after)
        if self._store is not None:
            # A log whose events were never appended cannot be named by records: the call
            # record still says the call was compacted.
            with suppress(ValueError):
                self._store.append_compaction(after)

    def _counter(
        self,
        client: Any,
        model: str,
        tools: Sequence[ToolLike],
        system: str | None,
        options: RequestOptions | None,
    ) -> Callable[[Sequence[CanonicalEvent]], int]:
        def count(events: Sequence[CanonicalEvent]) -> int:
            rendered = _render(client._core, model, events, tools, system, options)[0]
            tokens: int = client._count(model, rendered)[0]
            return tokens

        return count

    @property
    def store(self) -> LogStore | None:
        """The task file every call's record is appended to (None: calls are not recorded)."""
        return self._store

    @classmethod
    def _clients_for(
        cls, pin: Pin, kinds: Mapping[Route, type[K]], options: Mapping[str, Any]
    ) -> dict[Route, K]:
        check_client_numbers(f"{cls.__name__}.from_pin", options)
        routes = {pin.route(role) for role in pin.roles.pinned()}
        return {route: kinds[route].from_pin(pin, **options) for route in sorted(routes)}

    @property
    def last_usage(self) -> Usage | None:
        """Usage of the most recent successful call through this router, on any route (a
        stream's once it ends; under concurrency: any caller's)."""
        return self._last_usage

    @property
    def last_call(self) -> CallInfo | None:
        """What the proxy said about the most recent successful call through this router
        (its call id, cost...; under concurrency: any caller's)."""
        return self._last_call

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
        """The client ``role``'s calls go through; `UnknownRoleError` (a ``ValueError``, not
        an `LLMError`: a bug in the caller) for a role the pin does not define."""
        return self._resolve(role)[1]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._pin.roles.pinned()!r})"


class RoleRouter(RouterLimits, _RouterBase[_SyncClient]):
    """Complete by role through a pin's mapping; one connection pool per route used."""

    @classmethod
    def from_pin(
        cls,
        pin: Pin,
        *,
        store: LogStore | None = None,
        compaction: CompactionPolicy | None = None,
        **options: Any,
    ) -> Self:
        """A router over ``pin``; ``options`` (transport, sleep, on_usage...) go to each client.

        With ``store``, a start record is appended before each request leaves and the
        call's record (role, model, route, usage, cost, outcome) as it ends, success or
        failure; the store is begun with ``pin`` first (`TaskPinMismatch` if it holds
        another task). With ``compaction``, `complete` compacts a log near the window.
        """
        clients = cls._clients_for(pin, _SYNC_KINDS, options)
        return cls(pin, clients, store=store, compaction=compaction)

    def complete(
        self,
        role: str,
        events: LogLike,
        tools: ToolsLike,
        system: str | None = None,
        *,
        options: RequestOptions | None = None,
        cache: bool | None = None,
    ) -> list[CanonicalEvent]:
        """Send the log to ``role``'s pinned model down that model's route; ``options``
        override the role's profile field by field, ``cache`` the prompt-cache setting.

        With a `CompactionPolicy`, the log (with an earlier compaction applied) is
        compacted first when it is near the window, or once after `ContextWindowExceeded`.
        """
        model, client, merged = self._call(role, options)
        policy = self._compaction
        if policy is None:
            with _acting(role):
                return client.complete(events, tools, model, system, cache=cache, options=merged)
        specs = as_tool_specs(tools)
        given = as_events(events)
        log = self._substituted(given)
        room = client.headroom(model, log, specs, system, merged)
        window = room.max_input_tokens
        how: str | None = None
        if window is not None and room.input_tokens > policy.threshold * window:
            log = self._compact(model, client, log, specs, system, merged, window)
            self._keep(given, log)
            how = "threshold"
        try:
            with _acting(role), _compacting(how):
                return client.complete(log, specs, model, system, cache=cache, options=merged)
        except ContextWindowExceeded as exc:
            if how is not None:
                raise
            limit = window or exc.limit_tokens
            log = self._compact(model, client, log, specs, system, merged, limit, refused=True)
            self._keep(given, log)
        with _acting(role), _compacting("overflow"):
            return client.complete(log, specs, model, system, cache=cache, options=merged)

    def _compact(
        self,
        model: str,
        client: _SyncClient,
        log: list[CanonicalEvent],
        tools: list[ToolSpec],
        system: str | None,
        options: RequestOptions | None,
        window: int | None,
        *,
        refused: bool = False,
    ) -> list[CanonicalEvent]:
        from nisse_llm.task.compaction import compact
        from nisse_llm.task.summaries import policy_budget, summarize

        policy = self._compaction
        assert policy is not None
        count = self._counter(client, model, tools, system, options)
        budget = policy_budget(policy, window, count(log), refused=refused)
        if policy.summarize_role is None:
            after = compact(
                log,
                budget_tokens=budget,
                keep_last_turns=policy.keep_last_turns,
                tools=tools,
                system=system,
                count=count,
            )
        else:
            after = summarize(
                self,
                policy.summarize_role,
                log,
                budget_tokens=budget,
                keep_last_turns=policy.keep_last_turns,
                tools=tools,
                system=system,
                count=count,
                summary_tokens=policy.summary_tokens,
            )
        return after

    def complete_as(
        self,
        output_type: type[M],
        role: str,
        events: LogLike,
        tools: ToolsLike,
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
        tools: ToolsLike,
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
    def from_pin(
        cls,
        pin: Pin,
        *,
        store: LogStore | None = None,
        compaction: CompactionPolicy | None = None,
        **options: Any,
    ) -> Self:
        """A router over ``pin`` (see `RoleRouter.from_pin`)."""
        clients = cls._clients_for(pin, _ASYNC_KINDS, options)
        return cls(pin, clients, store=store, compaction=compaction)

    async def complete(
        self,
        role: str,
        events: LogLike,
        tools: ToolsLike,
        system: str | None = None,
        *,
        options: RequestOptions | None = None,
        cache: bool | None = None,
    ) -> list[CanonicalEvent]:
        """Send the log to ``role``'s pinned model down that model's route (see
        `RoleRouter.complete`, compaction included)."""
        model, client, merged = self._call(role, options)
        policy = self._compaction
        if policy is None:
            with _acting(role):
                return await client.complete(
                    events, tools, model, system, cache=cache, options=merged
                )
        specs = as_tool_specs(tools)
        given = as_events(events)
        log = self._substituted(given)
        room = await client.headroom(model, log, specs, system, merged)
        window = room.max_input_tokens
        how: str | None = None
        if window is not None and room.input_tokens > policy.threshold * window:
            log = await self._compact(model, client, log, specs, system, merged, window)
            self._keep(given, log)
            how = "threshold"
        try:
            with _acting(role), _compacting(how):
                return await client.complete(log, specs, model, system, cache=cache, options=merged)
        except ContextWindowExceeded as exc:
            if how is not None:
                raise
            limit = window or exc.limit_tokens
            log = await self._compact(
                model, client, log, specs, system, merged, limit, refused=True
            )
            self._keep(given, log)
        with _acting(role), _compacting("overflow"):
            return await client.complete(log, specs, model, system, cache=cache, options=merged)

    async def _compact(
        self,
        model: str,
        client: _AsyncClient,
        log: list[CanonicalEvent],
        tools: list[ToolSpec],
        system: str | None,
        options: RequestOptions | None,
        window: int | None,
        *,
        refused: bool = False,
    ) -> list[CanonicalEvent]:
        from nisse_llm.task.compaction import aplan_compaction
        from nisse_llm.task.summaries import asummarize, policy_budget

        policy = self._compaction
        assert policy is not None

        async def count(events: Sequence[CanonicalEvent]) -> int:
            rendered = _render(client._core, model, events, tools, system, options)[0]
            tokens: int = (await client._count(model, rendered))[0]
            return tokens

        budget = policy_budget(policy, window, await count(log), refused=refused)
        if policy.summarize_role is None:
            plan = await aplan_compaction(
                log, budget_tokens=budget, count=count, keep_last_turns=policy.keep_last_turns
            )
            after = plan.events
        else:
            after = await asummarize(
                self,
                policy.summarize_role,
                log,
                budget_tokens=budget,
                keep_last_turns=policy.keep_last_turns,
                count=count,
                summary_tokens=policy.summary_tokens,
            )
        return after

    async def complete_as(
        self,
        output_type: type[M],
        role: str,
        events: LogLike,
        tools: ToolsLike,
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
        tools: ToolsLike,
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
