"""Clients for the proxy's two routes, sync and async, and routing by model and by role.

Every client is the same exchange (`nisse_llm.transport.core`) over a different route:
`LiteLLMClient` posts chat completions, `AnthropicPassthroughClient` posts Anthropic
messages; the async twins differ only in awaiting the send and the sleep. ``stream()``
is ``complete()`` read as server-sent events: a `ReplyStream` (or `AsyncReplyStream`)
yields typed deltas, then holds the very events ``complete()`` would have returned.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any, ClassVar, Self, TypeVar

import httpx
from pydantic import SecretStr

from nisse_llm.config._bounds import check_client_numbers
from nisse_llm.config.routing import DEFAULT_PASSTHROUGH_PREFIXES, Route, has_native_adapter
from nisse_llm.log.canonical import (
    CallInfo,
    CanonicalEvent,
    Completion,
    LogLike,
    ToolsLike,
    Usage,
)
from nisse_llm.transport._classify import RateLimitPolicy
from nisse_llm.transport._headroom import AsyncClientLimits, ClientLimits
from nisse_llm.transport._limits import (
    DEFAULT_CALL_DEADLINE_S,
    DEFAULT_MAX_RESPONSE_BYTES,
    DEFAULT_STREAM_DEADLINE_S,
    Limits,
    async_transport,
    sync_transport,
)
from nisse_llm.transport.core import (
    HTTPX_ERRORS,
    Call,
    Core,
    PartsRenderer,
    RouteSpec,
    UsageCallback,
    shared_ssl_context,
)

# Streaming loads with the first stream (see `nisse_llm.stream.deltas`).
if TYPE_CHECKING:
    from pydantic import BaseModel

    from nisse_llm.config.options import RequestOptions
    from nisse_llm.config.settings import Pin, Settings
    from nisse_llm.render._cache import PromptCache
    from nisse_llm.render.typed import TypedReply
    from nisse_llm.stream.deltas import StreamAccumulator, StreamDelta

    M = TypeVar("M", bound=BaseModel)

__all__ = [
    "AnthropicPassthroughClient",
    "AsyncAnthropicPassthroughClient",
    "AsyncLiteLLMClient",
    "AsyncReplyStream",
    "LiteLLMClient",
    "ReplyStream",
    "Usage",
    "UsageCallback",
    "has_native_adapter",
    "select_client",
]


def _chat_renderer() -> PartsRenderer:
    from nisse_llm.render.openai_chat import OpenAIChatRenderer

    return OpenAIChatRenderer()


def _messages_renderer() -> PartsRenderer:
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


def _pin_options(pin: Pin, route: RouteSpec) -> dict[str, Any]:
    read_s = pin.timeout_s if route.name == "openai_chat" else pin.passthrough_timeout_s
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


async def _async_parts(parts: list[bytes]) -> AsyncIterator[bytes]:
    """The parts for an async client, which takes no sync iterable as content."""
    for part in parts:
        yield part


def _timeout(read_s: float, connect_s: float | None) -> httpx.Timeout:
    return httpx.Timeout(read_s, connect=read_s if connect_s is None else connect_s)


def _stream_timeout(read_s: float, connect_s: float | None, idle_s: float) -> httpx.Timeout:
    # A read timeout bounds each socket read, so on a stream it is exactly the idle limit
    # (also while waiting for the headers); the route's timeout still bounds writes.
    return httpx.Timeout(read_s, connect=read_s if connect_s is None else connect_s, read=idle_s)


async def _asyncio_sleep(seconds: float) -> None:
    """`asyncio.sleep`, imported when first awaited: a sync-only program never loads asyncio."""
    import asyncio

    await asyncio.sleep(seconds)


_EVENT_STREAM = "text/event-stream"


class _ReplyStreamBase:
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


class ReplyStream(_ReplyStreamBase):
    """One streamed reply: ``with client.stream(...) as s: for delta in s: ...``.

    Entering sends the request (errors before the first byte raise there, classified
    and retried as in ``complete()``); iterating yields `StreamDelta` values; once the
    iterator is exhausted `events`, `usage` and `completion` hold the result. Leaving
    the ``with`` early closes the response and reports no usage.
    """

    __slots__ = ("_chunks", "_client", "_response")

    def __init__(self, client: _SyncClient, call: Call) -> None:
        super().__init__(call, client._stream_idle_s)
        self._client = client
        self._response: httpx.Response | None = None
        self._chunks: Iterator[bytes] | None = None

    def __enter__(self) -> Self:
        client, call = self._client, self._call
        http, url = client._http, client._core.url
        if client._core.preflight:
            client._preflight(call)
        while True:
            with call.sending():
                request = http.build_request(
                    "POST",
                    url,
                    content=call.body,
                    headers=call.headers,
                    timeout=client._stream_timeout,
                )
                response = http.send(request, stream=True)
            if 200 <= response.status_code < 300 and self._opened(response):
                break
            try:
                with call.reading():
                    response.read()
            finally:
                response.close()
            wait = call.received(response)
            if wait is None:
                self._whole(response)
                return self
            client._sleep(wait)
            call.slept(wait)
        call.received(response)
        self._response = response
        client._stream_opened(call)
        self._chunks = response.iter_bytes()
        return self

    def __iter__(self) -> Self:
        return self

    def __next__(self) -> StreamDelta:
        pending = self._pending
        while not pending:
            chunks = self._chunks
            if chunks is None:
                self._check_entered()
                raise StopIteration
            try:
                chunk = next(chunks)
            except StopIteration:
                self._close()
                self._ended()
                raise
            except HTTPX_ERRORS as exc:
                self._close()
                if not self._final():
                    self._broke(exc)
                chunk = b""  # the reply was whole: a failure after it ends nothing
            if self._final():
                # Past the final event: a clean end returned the connection to the pool
                # above; bytes (keepalives) or a failure after it end the stream here.
                self._close()
                self._ended()
                raise StopIteration
            try:
                self._feed(chunk)
            except BaseException:
                self._close()
                raise
            pending = self._pending
        return pending.pop()

    def close(self) -> None:
        """Close the response (idempotent); a stream not yet read to its end reports no usage."""
        self._close()
        self._left()

    def _close(self) -> None:
        response, self._response, self._chunks = self._response, None, None
        if response is not None:
            response.close()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class AsyncReplyStream(_ReplyStreamBase):
    """`ReplyStream` for asyncio: ``async with client.stream(...) as s: async for d in s``."""

    __slots__ = ("_chunks", "_client", "_response")

    def __init__(self, client: _AsyncClient, call: Call) -> None:
        super().__init__(call, client._stream_idle_s)
        self._client = client
        self._response: httpx.Response | None = None
        self._chunks: AsyncIterator[bytes] | None = None

    async def __aenter__(self) -> Self:
        client, call = self._client, self._call
        http, url = client._http, client._core.url
        if client._core.preflight:
            await client._preflight(call)
        while True:
            with call.sending():
                request = http.build_request(
                    "POST",
                    url,
                    content=call.body,
                    headers=call.headers,
                    timeout=client._stream_timeout,
                )
                response = await http.send(request, stream=True)
            if 200 <= response.status_code < 300 and self._opened(response):
                break
            try:
                with call.reading():
                    await response.aread()
            finally:
                await response.aclose()
            wait = call.received(response)
            if wait is None:
                self._whole(response)
                return self
            await client._sleep(wait)
            call.slept(wait)
        call.received(response)
        self._response = response
        await client._stream_opened(call)
        self._chunks = response.aiter_bytes()
        return self

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> StreamDelta:
        pending = self._pending
        while not pending:
            chunks = self._chunks
            if chunks is None:
                self._check_entered()
                raise StopAsyncIteration
            try:
                chunk = await anext(chunks)
            except StopAsyncIteration:
                await self._close()
                self._ended()
                raise
            except HTTPX_ERRORS as exc:
                await self._close()
                if not self._final():
                    self._broke(exc)
                chunk = b""
            if self._final():  # as in `ReplyStream`: nothing is read past the final event
                await self._close()
                self._ended()
                raise StopAsyncIteration
            try:
                self._feed(chunk)
            except BaseException:
                await self._close()
                raise
            pending = self._pending
        return pending.pop()

    async def aclose(self) -> None:
        """Close the response (idempotent); a stream not yet read to its end reports no usage."""
        await self._close()
        self._left()

    async def _close(self) -> None:
        response, chunks = self._response, self._chunks
        self._response = self._chunks = None
        if chunks is not None:
            # aiter_bytes is an async generator: close it here, not from a GC hook.
            closer = getattr(chunks, "aclose", None)
            if closer is not None:
                await closer()
        if response is not None:
            await response.aclose()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


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
        prompt_cache: PromptCache | bool | None,
        preflight: bool = False,
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
    def route(self) -> Route:
        """The proxy route this client posts to."""
        return self.ROUTE.name

    def __repr__(self) -> str:
        return self._core.describe(type(self))

    @classmethod
    def from_pin(cls, pin: Pin, **options: Any) -> Self:
        """A client configured by a pin; ``options`` (transport, sleep, on_usage...) win."""
        merged = {**_pin_options(pin, cls.ROUTE), **options}
        client = cls(pin.base_url, pin.token, **merged)
        client._core.token_source = pin.token_source
        return client

    @classmethod
    def from_settings(cls, settings: Settings, **options: Any) -> Self:
        """A client configured by settings (pinned on the spot)."""
        return cls.from_pin(settings.pin(), **options)

    if TYPE_CHECKING:

        def __init__(self, base_url: str, token: str | SecretStr, **options: Any) -> None: ...


class _SyncClient(ClientLimits, _ClientBase):
    def __init__(
        self,
        base_url: str,
        token: str | SecretStr,
        *,
        timeout_s: float | None = None,
        connect_timeout_s: float | None = None,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], object] = time.sleep,
        max_tokens: int | None = None,
        rate_limit_retries: int = 1,
        rate_limit_wait_s: float = 20.0,
        rate_limit_wait_cap_s: float = 60.0,
        stream_idle_timeout_s: float = 120.0,
        on_usage: UsageCallback | None = None,
        prompt_cache: PromptCache | bool | None = True,
        preflight: bool = False,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        call_deadline_s: float = DEFAULT_CALL_DEADLINE_S,
        stream_deadline_s: float = DEFAULT_STREAM_DEADLINE_S,
    ) -> None:
        check_client_numbers(
            type(self).__name__,
            {
                "timeout_s": timeout_s,
                "connect_timeout_s": connect_timeout_s,
                "max_tokens": max_tokens,
                "rate_limit_retries": rate_limit_retries,
                "rate_limit_wait_s": rate_limit_wait_s,
                "rate_limit_wait_cap_s": rate_limit_wait_cap_s,
                "stream_idle_timeout_s": stream_idle_timeout_s,
                "max_response_bytes": max_response_bytes,
                "call_deadline_s": call_deadline_s,
                "stream_deadline_s": stream_deadline_s,
            },
        )
        core = self._setup(
            base_url,
            token,
            timeout_s=timeout_s,
            max_tokens=max_tokens,
            rate_limit_retries=rate_limit_retries,
            rate_limit_wait_s=rate_limit_wait_s,
            rate_limit_wait_cap_s=rate_limit_wait_cap_s,
            on_usage=on_usage,
            prompt_cache=prompt_cache,
            preflight=preflight,
        )
        self._sleep = sleep
        self._stream_idle_s = stream_idle_timeout_s
        self._stream_timeout = _stream_timeout(
            core.timeout_s, connect_timeout_s, stream_idle_timeout_s
        )
        limits = Limits(max_response_bytes, call_deadline_s, stream_deadline_s)
        self._http = httpx.Client(
            headers=core.headers,
            timeout=_timeout(core.timeout_s, connect_timeout_s),
            transport=sync_transport(core.url, transport, limits, shared_ssl_context()),
            verify=shared_ssl_context(),
        )

    def complete(
        self,
        events: LogLike,
        tools: ToolsLike,
        model: str,
        system: str | None = None,
        *,
        cache: bool | None = None,
        options: RequestOptions | None = None,
    ) -> list[CanonicalEvent]:
        """Send the log to ``model`` and return the reply's canonical events; ``cache``
        overrides the client's prompt-cache setting for this call, ``options`` set how it is
        made (their ``max_output_tokens`` wins over the client's ``max_tokens``)."""
        return self._completion(events, tools, model, system, options, cache).events

    def complete_as(
        self,
        output_type: type[M],
        events: LogLike,
        tools: ToolsLike,
        model: str,
        system: str | None = None,
        *,
        options: RequestOptions | None = None,
        repair_attempts: int = 0,
        cache: bool | None = None,
    ) -> TypedReply[M]:
        """An answer validated into ``output_type`` (see `nisse_llm.render.typed`): a `TypedReply`,
        or `OutputValidationError` once ``repair_attempts`` more asks have failed too."""
        from nisse_llm.render.typed import TypedExchange, answer_rules

        exchange = TypedExchange.begin(
            output_type,
            events,
            tools,
            system,
            options=options,
            repair_attempts=repair_attempts,
            rules=answer_rules(self.route, model, options),
            route=self.route,
        )
        while True:
            completion = self._completion(
                exchange.log, exchange.tools, model, exchange.system, exchange.options, cache
            )
            reply = exchange.settle(completion)
            if reply is not None:
                return reply

    def _completion(
        self,
        events: LogLike,
        tools: ToolsLike,
        model: str,
        system: str | None,
        options: RequestOptions | None,
        cache: bool | None,
    ) -> Completion:
        """`complete`, returning the whole `Completion` (this call's own usage); the one
        place a sync call is sent, so `complete` and `complete_as` check alike."""
        core = self._core
        call = core.begin(events, tools, model, system, cache=cache, options=options)
        if core.preflight:
            self._preflight(call)
        while True:
            with call.sending():
                response = self._http.post(core.endpoint, content=call.parts, headers=call.headers)
            wait = call.received(response)
            if wait is None:
                return call.finish_completion(response)
            self._sleep(wait)
            call.slept(wait)

    def stream(
        self,
        events: LogLike,
        tools: ToolsLike,
        model: str,
        system: str | None = None,
        *,
        cache: bool | None = None,
        options: RequestOptions | None = None,
    ) -> ReplyStream:
        """``complete()`` as a stream: ``with client.stream(...) as s: for delta in s: ...``.

        The log is rendered now (a `RenderError` raises here); the request goes out when
        the ``with`` is entered.
        """
        call = self._core.begin(
            events, tools, model, system, stream=True, cache=cache, options=options
        )
        return ReplyStream(self, call)

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


class _AsyncClient(AsyncClientLimits, _ClientBase):
    def __init__(
        self,
        base_url: str,
        token: str | SecretStr,
        *,
        timeout_s: float | None = None,
        connect_timeout_s: float | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        sleep: Callable[[float], Awaitable[object]] = _asyncio_sleep,
        max_tokens: int | None = None,
        rate_limit_retries: int = 1,
        rate_limit_wait_s: float = 20.0,
        rate_limit_wait_cap_s: float = 60.0,
        stream_idle_timeout_s: float = 120.0,
        on_usage: UsageCallback | None = None,
        prompt_cache: PromptCache | bool | None = True,
        preflight: bool = False,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        call_deadline_s: float = DEFAULT_CALL_DEADLINE_S,
        stream_deadline_s: float = DEFAULT_STREAM_DEADLINE_S,
    ) -> None:
        check_client_numbers(
            type(self).__name__,
            {
                "timeout_s": timeout_s,
                "connect_timeout_s": connect_timeout_s,
                "max_tokens": max_tokens,
                "rate_limit_retries": rate_limit_retries,
                "rate_limit_wait_s": rate_limit_wait_s,
                "rate_limit_wait_cap_s": rate_limit_wait_cap_s,
                "stream_idle_timeout_s": stream_idle_timeout_s,
                "max_response_bytes": max_response_bytes,
                "call_deadline_s": call_deadline_s,
                "stream_deadline_s": stream_deadline_s,
            },
        )
        core = self._setup(
            base_url,
            token,
            timeout_s=timeout_s,
            max_tokens=max_tokens,
            rate_limit_retries=rate_limit_retries,
            rate_limit_wait_s=rate_limit_wait_s,
            rate_limit_wait_cap_s=rate_limit_wait_cap_s,
            on_usage=on_usage,
            prompt_cache=prompt_cache,
            preflight=preflight,
        )
        self._sleep = sleep
        self._stream_idle_s = stream_idle_timeout_s
        self._stream_timeout = _stream_timeout(
            core.timeout_s, connect_timeout_s, stream_idle_timeout_s
        )
        limits = Limits(max_response_bytes, call_deadline_s, stream_deadline_s)
        self._http = httpx.AsyncClient(
            headers=core.headers,
            timeout=_timeout(core.timeout_s, connect_timeout_s),
            transport=async_transport(core.url, transport, limits, shared_ssl_context()),
            verify=shared_ssl_context(),
        )

    async def complete(
        self,
        events: LogLike,
        tools: ToolsLike,
        model: str,
        system: str | None = None,
        *,
        cache: bool | None = None,
        options: RequestOptions | None = None,
    ) -> list[CanonicalEvent]:
        """Send the log to ``model`` and return the reply's canonical events; ``cache``
        overrides the client's prompt-cache setting for this call, ``options`` set how it is
        made (their ``max_output_tokens`` wins over the client's ``max_tokens``)."""
        return (await self._completion(events, tools, model, system, options, cache)).events

    async def complete_as(
        self,
        output_type: type[M],
        events: LogLike,
        tools: ToolsLike,
        model: str,
        system: str | None = None,
        *,
        options: RequestOptions | None = None,
        repair_attempts: int = 0,
        cache: bool | None = None,
    ) -> TypedReply[M]:
        """An answer validated into ``output_type`` (see `nisse_llm.render.typed`): a `TypedReply`,
        or `OutputValidationError` once ``repair_attempts`` more asks have failed too."""
        from nisse_llm.render.typed import TypedExchange, answer_rules

        exchange = TypedExchange.begin(
            output_type,
            events,
            tools,
            system,
            options=options,
            repair_attempts=repair_attempts,
            rules=answer_rules(self.route, model, options),
            route=self.route,
        )
        while True:
            completion = await self._completion(
                exchange.log, exchange.tools, model, exchange.system, exchange.options, cache
            )
            reply = exchange.settle(completion)
            if reply is not None:
                return reply

    async def _completion(
        self,
        events: LogLike,
        tools: ToolsLike,
        model: str,
        system: str | None,
        options: RequestOptions | None,
        cache: bool | None,
    ) -> Completion:
        """`complete`, returning the whole `Completion` (this call's own usage); the one
        place an async call is sent, so `complete` and `complete_as` check alike."""
        core = self._core
        call = core.begin(events, tools, model, system, cache=cache, options=options)
        if core.preflight:
            await self._preflight(call)
        while True:
            with call.sending():
                response = await self._http.post(
                    core.endpoint, content=_async_parts(call.parts), headers=call.headers
                )
            wait = call.received(response)
            if wait is None:
                return call.finish_completion(response)
            await self._sleep(wait)
            call.slept(wait)

    def stream(
        self,
        events: LogLike,
        tools: ToolsLike,
        model: str,
        system: str | None = None,
        *,
        cache: bool | None = None,
        options: RequestOptions | None = None,
    ) -> AsyncReplyStream:
        """``complete()`` as a stream: ``async with client.stream(...) as s: async for d in s``.

        The log is rendered now (a `RenderError` raises here); the request goes out when
        the ``async with`` is entered.
        """
        call = self._core.begin(
            events, tools, model, system, stream=True, cache=cache, options=options
        )
        return AsyncReplyStream(self, call)

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
