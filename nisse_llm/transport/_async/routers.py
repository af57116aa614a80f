"""The role router, written once: ``_async/routers.py`` is the source, ``_sync/routers.py``
is generated from it by ``scripts/gen_sync.py`` (unasync).

The pin resolves a role to its model, the model to its route's client; the role's profile
is layered under each call's options. With a task file (``store=``) every call is recorded
as it starts and as it ends; with a `CompactionPolicy` (``compaction=``) a call's log is
compacted near the model's window. What needs no I/O is `nisse_llm.transport._router_base`.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import suppress
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Self, TypeVar, Unpack

from nisse_llm._closing import AsyncClosing
from nisse_llm.errors import ContextWindowExceeded
from nisse_llm.events.canonical import (
    CanonicalEvent,
    Completion,
    LogLike,
    ToolsLike,
    as_events,
    as_tool_specs,
)
from nisse_llm.transport._async import io
from nisse_llm.transport._async.headroom import AsyncRouterLimits
from nisse_llm.transport._router_base import (
    ASYNC_KINDS,
    RouterBase,
    acting,
    compacting,
    end_record,
    start_record,
)
from nisse_llm.transport.clients import AsyncReplyStream, AsyncRouteClient
from nisse_llm.transport.core import Call, CallOptions

if TYPE_CHECKING:
    from pydantic import BaseModel

    from nisse_llm.config.settings import Pin, Settings
    from nisse_llm.events.canonical import Usage
    from nisse_llm.render.call import CallParams
    from nisse_llm.render.typed import TypedReply
    from nisse_llm.task.logstore import AsyncTaskStore  # noqa: F401 (the base's type argument)
    from nisse_llm.task.stores import AsyncStoreArg
    from nisse_llm.task.summaries import CompactionPolicy

    M = TypeVar("M", bound=BaseModel)

__all__ = ["AsyncRoleRouter"]


class AsyncRoleRouter(
    AsyncRouterLimits, RouterBase[AsyncRouteClient, "AsyncTaskStore"], AsyncClosing
):
    """Complete by role through a pin's mapping; one connection pool per route used."""

    _kinds = ASYNC_KINDS

    @classmethod
    def from_pin(
        cls,
        pin: Pin,
        *,
        store: AsyncStoreArg | None = None,
        compaction: CompactionPolicy | None = None,
        settings: Settings | None = None,
        strict_pin: bool = False,
        **options: Any,
    ) -> Self:
        """A router over ``pin``; ``options`` (transport, sleep, on_usage...) go to each client.

        With ``store``, a start record is appended before each request leaves and the
        call's record (role, model, route, usage, cost, outcome) as it ends, success or
        failure, each awaited before the call goes on; the store is begun with ``pin``
        first, or, holding a task already, the router takes that task's own pin (see
        `begin_task`; ``strict_pin``: `TaskPinMismatch` instead when they differ). ``store`` is
        an `AsyncTaskStore`, a task file's path or a task key of the store ``settings``
        configure (`open_async_store`); one opened from a path or a key is closed with the
        router. With ``compaction``, `complete` compacts a log near the window.
        """
        from nisse_llm.task.stores import open_async_store

        opened, owned = (None, False) if store is None else open_async_store(store, settings)
        try:
            clients = cls._clients_for(pin, cls._kinds, options)
            router = cls(
                pin,
                clients,
                store=opened,
                compaction=compaction,
                strict_pin=strict_pin,
                client_options=options,
            )
        except BaseException:
            if owned and opened is not None:
                io.abandon(opened)
            raise
        router._owned_store = opened if owned else None
        return router

    def _attach(self) -> None:
        store = self._store
        if store is not None:
            from nisse_llm.task.stores import open_async_store

            open_async_store(store)  # the store object of the router's kind, or TypeError
        io.begin_now(self.begin_task)
        self._observe_clients()

    def _observe_clients(self) -> None:
        """Give each client the hooks that record its calls, and the task's id (known once
        the store is begun)."""
        store = self._store
        start = None if store is None else self._call_started
        task_id = None if store is None else store.task_id
        for client in self._clients.values():
            client.observe(on_start=start, on_end=self._call_ended, conversation_id=task_id)

    async def begin_task(self) -> None:
        """Begin the task's store with the router's pin, unless begun: a new task gets the
        pin's header; a task begun before keeps its own pin, which the router takes
        (`AsyncTaskStore.open_pin`: one WARNING naming the keys that differ, in
        ``pin_changes``; `TaskPinMismatch` with ``strict_pin``, or for another base URL,
        before any call). A `RoleRouter` begins it as it is built; an `AsyncRoleRouter`
        (whose constructor cannot wait on I/O) at its first `complete`, `completion` or
        `complete_as`, or when this is called: a resumed task's first `stream` needs it
        called first."""
        if not self._begun:
            assert self._store is not None
            opened = await self._store.open_pin(self._pin, strict_pin=self._strict_pin)
            if opened.pin != self._pin:
                for client in self._adopted(opened.pin).values():
                    await client.aclose()
            self._pin_changes = opened.changes
            self._begun = True
            self._observe_clients()  # the task's id is known now, and the clients new

    async def _call_started(self, call: Call) -> None:
        """Append ``call``'s start record before its request leaves (the store begun first:
        a call resolved over another pin than the task's own is refused before it leaves)."""
        assert self._store is not None
        if not self._begun:
            await self.begin_task()
            role = call.role
            if role is not None and call.model != self._pin.model_for(role):
                raise ValueError(
                    "this call was resolved before the router learnt the task's own pin: "
                    "await router.begin_task() before a resumed task's first stream"
                )
        self._starts[id(call)] = (await self._store.append_call(start_record(call))).seq

    async def _call_ended(self, call: Call, usage: Usage | None, outcome: str) -> None:
        """Keep a success's usage and append ``call``'s record, before its outcome
        reaches the caller."""
        if outcome == "ok":
            self._last_usage = usage
            self._last_call = call.info
        if self._store is not None:
            start = self._starts.pop(id(call), None)
            await self._store.append_call(end_record(call, usage, outcome, start))

    async def complete(
        self,
        role: str,
        events: LogLike,
        tools: ToolsLike,
        system: str | None = None,
        **how: Unpack[CallOptions],
    ) -> list[CanonicalEvent]:
        """Send the log to ``role``'s pinned model down that model's route; ``options``
        override the role's profile field by field, ``cache`` the prompt-cache setting.

        With a `CompactionPolicy`, the log (with an earlier compaction applied) is
        compacted first when it is near the window, or once after `ContextWindowExceeded`.
        """
        return (await self.completion(role, events, tools, system, **how)).events

    async def completion(
        self,
        role: str,
        events: LogLike,
        tools: ToolsLike,
        system: str | None = None,
        **how: Unpack[CallOptions],
    ) -> Completion:
        """``complete()``, returning this call's whole `Completion`: its events, usage and
        call info, which concurrent calls never share (unlike ``last_usage``)."""
        if not self._begun:
            await self.begin_task()
        client, params = self._asked(role, events, tools, system, how)
        policy = self._compaction
        if policy is None:
            with acting(role):
                return await client.complete_call(params)
        given = as_events(events)
        log = self._substituted(given)
        params = replace(params, events=log, tools=as_tool_specs(tools))
        room = await client.headroom_call(params)
        window = room.max_input_tokens
        compacted: str | None = None
        if window is not None and room.input_tokens > policy.threshold * window:
            log = await self._compact(client, params, log, window)
            await self._keep(given, log)
            compacted = "threshold"
        try:
            with acting(role), compacting(compacted):
                return await client.complete_call(replace(params, events=log))
        except ContextWindowExceeded as exc:
            if compacted is not None:
                raise
            limit = window or exc.limit_tokens
            log = await self._compact(client, params, log, limit, refused=True)
            await self._keep(given, log)
        with acting(role), compacting("overflow"):
            return await client.complete_call(replace(params, events=log))

    def _asked(
        self, role: str, events: LogLike, tools: ToolsLike, system: str | None, how: CallOptions
    ) -> tuple[AsyncRouteClient, CallParams]:
        """The client of ``role``'s model and the call's parameters on it, its options over
        the role's profile."""
        model, client, merged = self._call(role, how.get("options"))
        cache = how.get("cache")
        return client, client.call_params(events, tools, model, system, cache=cache, options=merged)

    async def _keep(self, before: list[CanonicalEvent], after: list[CanonicalEvent]) -> None:
        """Remember a compaction for later calls and record it in the task's store."""
        self._compacted = (before, after)
        if self._store is not None:
            await self.begin_task()
            # A log whose events were never appended cannot be named by records: the call
            # record still says the call was compacted.
            with suppress(ValueError):
                await self._store.append_compaction(after)

    async def _compact(
        self,
        client: AsyncRouteClient,
        params: CallParams,
        log: list[CanonicalEvent],
        window: int | None,
        *,
        refused: bool = False,
    ) -> list[CanonicalEvent]:
        """``log`` compacted to fit ``window`` when sent as ``params`` (``refused``: the
        proxy refused it as too long)."""
        from nisse_llm.task.compaction import aplan_compaction
        from nisse_llm.task.summaries import asummarize, policy_budget

        policy = self._compaction
        assert policy is not None

        async def count(events: Sequence[CanonicalEvent]) -> int:
            return await client.count_tokens_call(replace(params, events=events))

        budget = policy_budget(policy, window, await count(log), refused=refused)
        if policy.summarize_role is None:
            plan = await aplan_compaction(
                log, budget_tokens=budget, count=count, keep_last_turns=policy.keep_last_turns
            )
            return plan.events
        return await asummarize(
            self,
            policy.summarize_role,
            log,
            budget_tokens=budget,
            keep_last_turns=policy.keep_last_turns,
            count=count,
            summary_tokens=policy.summary_tokens,
        )

    async def complete_as(
        self,
        output_type: type[M],
        role: str,
        events: LogLike,
        tools: ToolsLike,
        system: str | None = None,
        *,
        repair_attempts: int = 0,
        **how: Unpack[CallOptions],
    ) -> TypedReply[M]:
        """An answer from ``role``'s pinned model validated into ``output_type``; ``options``
        override the role's profile (whose ``reasoning`` decides how the answer is asked)."""
        if not self._begun:
            await self.begin_task()
        client, params = self._asked(role, events, tools, system, how)
        with acting(role):
            return await client.complete_call_as(output_type, params, repair_attempts)

    def stream(
        self,
        role: str,
        events: LogLike,
        tools: ToolsLike,
        system: str | None = None,
        **how: Unpack[CallOptions],
    ) -> AsyncReplyStream:
        """Stream the reply of ``role``'s pinned model (see `AsyncLiteLLMClient.stream`)."""
        client, params = self._asked(role, events, tools, system, how)
        with acting(role):
            return client.stream_call(params)

    async def aclose(self) -> None:
        """Close every client's pool, and the store `from_pin` opened from a path or a key."""
        for client in self._clients.values():
            await client.aclose()
        owned, self._owned_store = self._owned_store, None
        if owned is not None:
            await owned.aclose()
