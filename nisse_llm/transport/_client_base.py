"""What every route's client shares, sync or async: the routes, the options a pin sets,
the client base (its core, usage, pin constructors) and the stream base (its state and
results). No I/O here: the sending halves are `nisse_llm.transport._async.clients` and
its generated sync twin.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, ClassVar, Self, TypeVar, Unpack

import httpx
from pydantic import SecretStr

from nisse_llm.events.canonical import (
    CallInfo,
    CanonicalEvent,
    Completion,
    LogLike,
    ToolsLike,
    Usage,
)
from nisse_llm.render.call import CallParams
from nisse_llm.transport._classify import RateLimitPolicy
from nisse_llm.transport.core import (
    Call,
    CallOptions,
    ClientState,
    RouteSpec,
    UsageCallback,
    shared_ssl_context,
)

if TYPE_CHECKING:
    from pydantic import BaseModel

    from nisse_llm.config.settings import Pin, Settings
    from nisse_llm.render._cache import PromptCache
    from nisse_llm.render.typed import TypedExchange
    from nisse_llm.stream.deltas import StreamAccumulator, StreamDelta

    M = TypeVar("M", bound=BaseModel)

__all__ = [
    "ClientBase",
    "ReplyStreamBase",
    "pin_options",
    "shared_ssl_context",
    "stream_timeout",
    "timeout",
    "typed_exchange",
]


def pin_options(pin: Pin, route: RouteSpec) -> dict[str, Any]:
    read_s = pin.passthrough_timeout_s if route.long_turns else pin.timeout_s
    return {
        "timeout_s": read_s,
        "connect_timeout_s": pin.connect_timeout_s,
        "max_tokens": pin.max_output_tokens,
        "rate_limit_retries": pin.rate_limit_retries,
        "rate_limit_wait_s": pin.rate_limit_wait_s,
        "rate_limit_wait_cap_s": pin.rate_limit_wait_cap_s,
        "stream_idle_timeout_s": pin.stream_idle_timeout_s,
        "prompt_cache": _pin_cache(pin),
        "preflight": pin.preflight,
        "max_response_bytes": pin.max_response_bytes,
        "call_deadline_s": pin.call_deadline_s,
        "stream_deadline_s": pin.stream_deadline_s,
    }


def _pin_cache(pin: Pin) -> PromptCache:
    from nisse_llm.render._cache import PromptCache

    return PromptCache(
        enabled=pin.prompt_cache, ttl=pin.prompt_cache_ttl, prefixes=pin.passthrough_prefixes
    )


def timeout(read_s: float, connect_s: float | None) -> httpx.Timeout:
    return httpx.Timeout(read_s, connect=read_s if connect_s is None else connect_s)


def stream_timeout(read_s: float, connect_s: float | None, idle_s: float) -> httpx.Timeout:
    # A read timeout bounds each socket read, so on a stream it is exactly the idle limit
    # (also while waiting for the headers); the route's timeout still bounds writes.
    return httpx.Timeout(read_s, connect=read_s if connect_s is None else connect_s, read=idle_s)


def typed_exchange(
    route: str, output_type: type[M], call: CallParams, repair_attempts: int
) -> TypedExchange[M]:
    """The asks of one ``complete_as`` of ``call`` on ``route``: how its model is asked for
    an answer of ``output_type`` (see `nisse_llm.render.typed`), and its repairs. The
    model's rules are decided here, the renderers' own (`request_rules`), and handed to
    the exchange."""
    from nisse_llm.config.option_rules import request_rules
    from nisse_llm.render.typed import TypedExchange

    options = call.options
    return TypedExchange.begin(
        output_type,
        call.events,
        call.tools,
        call.system,
        options=options,
        repair_attempts=repair_attempts,
        rules=request_rules(call.model, options.like if options else None, route=route),
        route=route,
    )


def next_ask(exchange: TypedExchange[Any], call: CallParams) -> CallParams:
    """``call`` as ``exchange`` asks it next (its log, tools, system and options)."""
    return replace(
        call,
        events=exchange.log,
        tools=exchange.tools,
        system=exchange.system,
        options=exchange.options,
    )


_EVENT_STREAM = "text/event-stream"


class ReplyStreamBase:
    """What sync and async streams share: the state, the results, the feeding and settling."""

    __slots__ = ("_acc", "_call", "_completion", "_deltas", "_idle_s", "_pending", "_settled")

    def __init__(self, call: Call, idle_s: float) -> None:
        self._call = call
        self._idle_s = idle_s
        self._acc: StreamAccumulator | None = None
        self._pending: list[StreamDelta] = []
        self._deltas = 0
        self._completion: Completion | None = None
        #: The call's one log record is written (success, failure, or closed early).
        self._settled = False

    @property
    def completion(self) -> Completion:
        """The reply's events, usage and stop reason; `RuntimeError` until the stream is read."""
        if self._completion is None:
            raise RuntimeError(
                "the stream has not been read to its end: iterate it first "
                "(a stream left early or broken has no result)"
            )
        return self._completion

    @property
    def events(self) -> list[CanonicalEvent]:
        """Exactly the canonical events ``complete()`` would have returned for this reply."""
        return self.completion.events

    @property
    def usage(self) -> Usage:
        """The reply's token usage (also the client's ``last_usage``)."""
        return self.completion.usage

    def _opened(self, response: httpx.Response) -> bool:
        """Whether a 2xx reply is an event stream (else it is read and parsed whole)."""
        is_stream = str(response.headers.get("content-type", "")).startswith(_EVENT_STREAM)
        if is_stream:
            self._acc = self._call.accumulator()
        return is_stream

    def _whole(self, response: httpx.Response) -> None:
        # A server that ignores "stream": true answers a plain body: the same reply, and the
        # deltas it implies (iterating still shows what `events` holds).
        from nisse_llm.stream.deltas import completion_deltas

        self._settled = True
        if self._call.trace is not None:
            self._call.trace.chunk()
        self._completion = self._call.finish_completion(response)
        self._pending = completion_deltas(self._completion)
        self._pending.reverse()  # popped from the end, in order
        self._deltas = len(self._pending)

    def _feed(self, chunk: bytes) -> None:
        assert self._acc is not None
        try:
            self._pending = self._acc.feed(chunk)
        except Exception as exc:  # classified by the call: interrupted, bad reply, or a bug
            self._broke(exc)
        self._pending.reverse()  # popped from the end, in arrival order
        self._deltas += len(self._pending)
        if self._pending and self._call.trace is not None:  # off: one check per read
            self._call.trace.chunk()

    def _final(self) -> bool:
        """Whether the route's final event has arrived (the rest of the body is not read)."""
        return self._acc is not None and self._acc.done

    def _ended(self) -> None:
        assert self._acc is not None
        self._settled = True
        self._completion = self._call.finish_stream(self._acc)

    def _broke(self, exc: Exception) -> None:
        assert self._acc is not None
        self._settled = True
        self._call.stream_failed(self._acc, exc, idle_timeout_s=self._idle_s)

    def _check_entered(self) -> None:
        if not self._settled:
            raise RuntimeError(
                "a stream sends its request when entered: use `with client.stream(...) as s` "
                "(`async with` on an async client) before iterating it"
            )

    def _left(self) -> None:
        if not self._settled:
            self._settled = True
            self._call.abandoned(self._deltas)


class ClientBase:
    """What sync and async clients share: the core, its repr, its usage, pin constructors."""

    ROUTE: ClassVar[RouteSpec]
    _core: ClientState

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
        prompt_cache: PromptCache | bool | None,
        preflight: bool = False,
    ) -> ClientState:
        self._core = ClientState(
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
            prompt_cache=prompt_cache,
            preflight=preflight,
        )
        return self._core

    @property
    def last_usage(self) -> Usage | None:
        """Usage of the most recent successful call (under concurrency: any caller's)."""
        return self._core.last_usage

    @property
    def last_call(self) -> CallInfo | None:
        """What the proxy said about the most recent successful call: its call id, cost,
        model group... (under concurrency: any caller's; each error carries its own
        ``call_id``)."""
        return self._core.last_call

    @property
    def preflight(self) -> bool:
        """Whether each request is checked against its model's window before it is sent."""
        return self._core.preflight

    @property
    def route(self) -> str:
        """The proxy route this client posts to."""
        return self.ROUTE.name

    def call_params(
        self,
        events: LogLike,
        tools: ToolsLike,
        model: str,
        system: str | None = None,
        **how: Unpack[CallOptions],
    ) -> CallParams:
        """One call's parameters on this client, built once (the arguments of ``complete``
        and ``stream``, with the client's ceiling and prompt-cache policy): what
        ``complete_call`` and ``stream_call`` take, and what a router passes on."""
        call = CallParams(events, tools, model, system, options=how.get("options"))
        return self._core.params(call, cache=how.get("cache"))

    def __repr__(self) -> str:
        return self._core.describe(type(self))

    @classmethod
    def from_pin(cls, pin: Pin, **options: Any) -> Self:
        """A client configured by a pin; ``options`` (transport, sleep, on_usage...) win."""
        merged = {**pin_options(pin, cls.ROUTE), **options}
        client = cls(pin.base_url, pin.token, **merged)
        client._core.token_source = pin.token_source
        return client

    @classmethod
    def from_settings(cls, settings: Settings, **options: Any) -> Self:
        """A client configured by settings (pinned on the spot)."""
        return cls.from_pin(settings.pin(), **options)

    if TYPE_CHECKING:

        def __init__(self, base_url: str, token: str | SecretStr, **options: Any) -> None: ...
