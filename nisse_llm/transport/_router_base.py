"""What the sync and async role routers share, with no I/O: role -> model -> route's
client, the role's profile under each call's options, the task file's records and the
compacted log kept for later calls. The routers themselves are
`nisse_llm.transport._async.routers` and its generated sync twin.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Literal, Self, TypeVar, cast

from nisse_llm.config._bounds import check_client_numbers
from nisse_llm.events.canonical import CallInfo, CanonicalEvent, Usage
from nisse_llm.transport._client_base import ClientBase
from nisse_llm.transport.clients import (
    ASYNC_CLIENTS,
    SYNC_CLIENTS,
    AsyncRouteClient,
    SyncRouteClient,
)
from nisse_llm.transport.core import Call, router_role

if TYPE_CHECKING:
    from pydantic import BaseModel

    from nisse_llm.config.options import AnswerOptions, RequestOptions
    from nisse_llm.config.settings import Pin
    from nisse_llm.task.records import CallRecord
    from nisse_llm.task.summaries import CompactionPolicy

__all__ = [
    "ASYNC_KINDS",
    "SYNC_KINDS",
    "RouterBase",
    "acting",
    "compacting",
    "end_record",
    "start_record",
]


#: Route name -> the class of a router's clients on it (every route of the table).
SYNC_KINDS: Mapping[str, type[SyncRouteClient]] = SYNC_CLIENTS
ASYNC_KINDS: Mapping[str, type[AsyncRouteClient]] = ASYNC_CLIENTS

K = TypeVar("K", bound=ClientBase)
#: The router's store: a `TaskStore` (sync) or an `AsyncTaskStore` (async).
S = TypeVar("S")


@contextmanager
def acting(role: str) -> Iterator[None]:
    """Mark the calls made inside as made for ``role`` (read when each call begins)."""
    acting = router_role.set(role)
    try:
        yield
    finally:
        router_role.reset(acting)


#: How the router compacted the log of the call being made (read by the call's record).
_compacted_as: ContextVar[str | None] = ContextVar("nisse_llm_compacted_as", default=None)


@contextmanager
def compacting(how: str | None) -> Iterator[None]:
    token = _compacted_as.set(how)
    try:
        yield
    finally:
        _compacted_as.reset(token)


def start_record(call: Call) -> CallRecord:
    """The record appended before ``call``'s request leaves."""
    from nisse_llm.task.records import CallRecord

    return CallRecord(
        role=call.role,
        model=call.model,
        route=call.core.route.name,
        outcome="started",
        compacted=_compacted(),
    )


def end_record(call: Call, usage: Usage | None, outcome: str, start: int | None) -> CallRecord:
    """The record of how ``call`` ended, naming its start record's number."""
    from nisse_llm.task.records import CallRecord

    return CallRecord(
        role=call.role,
        model=call.model,
        route=call.core.route.name,
        usage=usage or Usage(),
        call=call.info,
        outcome=outcome,
        start=start,
        compacted=_compacted(),
    )


def _compacted() -> Literal["threshold", "overflow"] | None:
    how = _compacted_as.get()
    return "threshold" if how == "threshold" else "overflow" if how else None


class RouterBase(Generic[K, S]):
    """Role -> model by the pin alone, model -> route by the pin's prefixes, one client per route."""

    #: Route -> the class of this router's clients on it (`SYNC_KINDS` or `ASYNC_KINDS`).
    _kinds: ClassVar[Mapping[str, type[Any]]]

    def __init__(
        self,
        pin: Pin,
        clients: Mapping[str, K],
        *,
        store: S | None = None,
        compaction: CompactionPolicy | None = None,
        strict_pin: bool = False,
        client_options: Mapping[str, Any] | None = None,
    ) -> None:
        self._pin = pin
        self._clients = dict(clients)
        #: What each client was built with, to build them again over a task's own pin.
        self._client_options = dict(client_options or {})
        self._strict_pin = strict_pin
        #: The keys where the pin given differs from the task's own (see ``pin_changes``).
        self._pin_changes: tuple[str, ...] = ()
        self._store = store
        #: The store `from_pin` opened (from a path or a key), closed with the router.
        self._owned_store: S | None = None
        self._compaction = compaction
        if compaction is not None and compaction.summarize_role is not None:
            self._resolve(compaction.summarize_role)  # an unknown role fails now, not mid-task
        #: The last log compacted (as given) and what it became, for the next call.
        self._compacted: tuple[list[CanonicalEvent], list[CanonicalEvent]] | None = None
        self._last_usage: Usage | None = None
        self._last_call: CallInfo | None = None
        #: id(call) -> its start record's number, while the call runs.
        self._starts: dict[int, int] = {}
        #: Whether the store has been begun with the pin (see ``begin_task``).
        self._begun = store is None
        self._attach()

    def _attach(self) -> None:
        """Begin the store (when the router can now) and give each client the hooks that
        record its calls: the router's own I/O."""
        raise NotImplementedError

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

    def for_store(self, store: S) -> Self:
        """A router like this one (its pin, compaction and client options, so the same
        transport) recording its calls in ``store``: a sub-task's; close it after use."""
        build = type(self).from_pin  # type: ignore[attr-defined]
        made = build(self._pin, store=store, compaction=self._compaction, **self._client_options)
        return cast("Self", made)

    @property
    def store(self) -> S | None:
        """The task file every call's record is appended to (None: calls are not recorded)."""
        return self._store

    @classmethod
    def _clients_for(
        cls, pin: Pin, kinds: Mapping[str, type[K]], options: Mapping[str, Any]
    ) -> dict[str, K]:
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
        """The pin this router completes by: with a store, once begun, the task's own (the
        pin it was begun with, or repinned to), whatever pin the router was given."""
        return self._pin

    @property
    def pin_changes(self) -> tuple[str, ...]:
        """The keys where the pin given differs from the task's own, which the router took
        when it began its store (empty: none, or not begun yet)."""
        return self._pin_changes

    def _adopted(self, pin: Pin) -> dict[str, K]:
        """Take ``pin`` (a task's own) and clients over it; the clients replaced, to close."""
        old = self._clients
        self._pin = pin
        self._clients = self._clients_for(pin, self._kinds, self._client_options)
        return old

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

    def answer_options(
        self,
        role: str,
        output_type: type[BaseModel],
        options: RequestOptions | None,
        taken: Iterable[str] = (),
    ) -> AnswerOptions | None:
        """``options`` (over ``role``'s profile) asking ``role``'s model for an answer of
        ``output_type`` as the reply's text, in the route's native structured output (as
        ``complete_as`` asks it), beside any tools (``taken``: their names); None where the
        model or route has none, or the schema does not fit it."""
        from nisse_llm.config.option_rules import request_rules
        from nisse_llm.config.options import AnswerOptions, RequestOptions
        from nisse_llm.render.typed import answer_tool, native_schema

        model, client, merged = self._call(role, options)
        route = client.route
        rules = request_rules(model, merged.like if merged else None, route=route)
        schema = native_schema(output_type, rules, route)
        if schema is None:
            return None
        asked = (merged or RequestOptions()).model_dump(exclude_none=True)
        name = answer_tool(output_type, taken).name
        return AnswerOptions(**asked, answer_name=name, answer_schema=schema)

    def client_for(self, role: str) -> K:
        """The client ``role``'s calls go through; `UnknownRoleError` (a ``ValueError``, not
        an `LLMError`: a bug in the caller) for a role the pin does not define."""
        return self._resolve(role)[1]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._pin.roles.pinned()!r})"
