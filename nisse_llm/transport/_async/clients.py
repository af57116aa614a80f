"""A route's client and its stream, written once: ``_async/clients.py`` is the source,
``_sync/clients.py`` is generated from it by ``scripts/gen_sync.py`` (unasync).

A route's client is `AsyncRouteClient` with that route's `RouteSpec` (the route classes
are in `nisse_llm.transport.clients`). `completion` is the one place a call is sent
whole; ``complete`` and ``complete_as`` go through it. ``stream()`` is the same call
read as server-sent events: the stream yields typed deltas, then holds the very events
``complete()`` would have returned.

The hooks `observe` sets are the client's to run (see `nisse_llm.transport.core`): the
start hook before the first attempt, the end hook as the call ends (a reply parsed, any
failure, a stream finished, broken or left early), before its outcome reaches the caller.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Self, TypeVar, Unpack

import httpx
from pydantic import SecretStr

from nisse_llm import defaults
from nisse_llm._closing import AsyncClosing
from nisse_llm.config._bounds import check_client_numbers
from nisse_llm.events.canonical import CanonicalEvent, Completion, LogLike, ToolsLike
from nisse_llm.transport import _client_base
from nisse_llm.transport._async import io
from nisse_llm.transport._async.headroom import AsyncClientLimits
from nisse_llm.transport._client_base import (
    ClientBase,
    ReplyStreamBase,
    next_ask,
    stream_timeout,
    timeout,
    typed_exchange,
)
from nisse_llm.transport._limits import (
    Limits,
    async_transport,
)
from nisse_llm.transport.core import (
    HTTPX_ERRORS,
    AsyncCallObserver,
    AsyncStartHook,
    Call,
    CallOptions,
    UsageCallback,
)

# Streaming loads with the first stream (see `nisse_llm.stream.deltas`).
if TYPE_CHECKING:
    from pydantic import BaseModel

    from nisse_llm.render._cache import PromptCache
    from nisse_llm.render.call import CallParams
    from nisse_llm.render.typed import TypedReply
    from nisse_llm.stream.deltas import StreamDelta

    M = TypeVar("M", bound=BaseModel)

__all__ = ["AsyncReplyStream", "AsyncRouteClient"]


async def _started(call: Call) -> None:
    """Raise the render failure `ClientState.begin` kept, else call the start hook (an exception
    it raises stops the call before its request leaves)."""
    call.raise_render_failure()
    hook = call.core.on_start
    if hook is not None:
        try:
            await hook(call)
        except BaseException as exc:
            call.trace_unsent(exc)
            raise


async def _told(call: Call) -> None:
    """Call the end hook with the ending ``call`` kept, then report a success (the hook
    comes first: a router's record is written before ``on_usage`` runs)."""
    ending = call.take_ending()
    if ending is None:
        return
    usage, outcome = ending
    hook = call.core.on_call
    if hook is not None:
        await hook(call, usage, outcome)
    if outcome == "ok" and usage is not None:
        call.report(usage)


class AsyncReplyStream(ReplyStreamBase, AsyncClosing):
    """One streamed reply: ``async with client.stream(...) as s: async for delta in s: ...``.

    Entering sends the request (errors before the first byte raise there, classified
    and retried as in ``complete()``); iterating yields `StreamDelta` values; once the
    iterator is exhausted `events`, `usage` and `completion` hold the result. Leaving
    the ``async with`` early closes the response and reports no usage.
    """

    __slots__ = ("_chunks", "_client", "_response")

    def __init__(self, client: AsyncRouteClient, call: Call) -> None:
        super().__init__(call, client._stream_idle_s)
        self._client = client
        self._response: httpx.Response | None = None
        self._chunks: AsyncIterator[bytes] | None = None

    async def __aenter__(self) -> Self:
        client, call = self._client, self._call
        try:
            response = await client._send(call, opened=self._opened)
            if self._acc is None:  # not an event stream: the reply was read whole
                self._whole(response)
                return self
        finally:
            if call.ending is not None:
                await _told(call)
        self._response = response
        self._chunks = response.aiter_bytes()
        return self

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> StreamDelta:
        pending = self._pending
        while not pending:
            try:
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
                    chunk = b""  # the reply was whole: a failure after it ends nothing
                if self._final():
                    # Past the final event: a clean end returned the connection to the pool
                    # above; bytes (keepalives) or a failure after it end the stream here.
                    await self._close()
                    self._ended()
                    raise StopAsyncIteration
                try:
                    self._feed(chunk)
                except BaseException:
                    await self._close()
                    raise
            finally:  # the stream ended (whole, broken): the end hook hears it first
                if self._call.ending is not None:
                    await _told(self._call)
            pending = self._pending
        return pending.pop()

    async def aclose(self) -> None:
        """Close the response (idempotent); a stream not yet read to its end reports no usage."""
        await self._close()
        self._left()
        if self._call.ending is not None:
            await _told(self._call)

    async def _close(self) -> None:
        response, chunks = self._response, self._chunks
        self._response = self._chunks = None
        if chunks is not None:
            await io.close_chunks(chunks)
        if response is not None:
            await response.aclose()


class AsyncRouteClient(AsyncClientLimits, ClientBase, AsyncClosing):
    """A client of one proxy route (its class's ``ROUTE``): one connection pool, the
    route's renderer and reply parser, retries, limits and deadlines."""

    def __init__(
        self,
        base_url: str,
        token: str | SecretStr,
        *,
        timeout_s: float | None = None,
        connect_timeout_s: float | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        sleep: io.Sleep = io.sleep,
        max_tokens: int | None = None,
        rate_limit_retries: int = defaults.RATE_LIMIT_RETRIES,
        rate_limit_wait_s: float = defaults.RATE_LIMIT_WAIT_S,
        rate_limit_wait_cap_s: float = defaults.RATE_LIMIT_WAIT_CAP_S,
        stream_idle_timeout_s: float = defaults.STREAM_IDLE_TIMEOUT_S,
        on_usage: UsageCallback | None = None,
        prompt_cache: PromptCache | bool | None = defaults.PROMPT_CACHE,
        preflight: bool = defaults.PREFLIGHT,
        max_response_bytes: int = defaults.MAX_RESPONSE_BYTES,
        call_deadline_s: float = defaults.CALL_DEADLINE_S,
        stream_deadline_s: float = defaults.STREAM_DEADLINE_S,
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
        self._stream_timeout = stream_timeout(
            core.timeout_s, connect_timeout_s, stream_idle_timeout_s
        )
        limits = Limits(max_response_bytes, call_deadline_s, stream_deadline_s)
        context = _client_base.shared_ssl_context()  # looked up now: a test may stand in its own
        self._transport = async_transport(core.url, transport, limits, context)
        self._http = httpx.AsyncClient(
            headers=core.headers,
            timeout=timeout(core.timeout_s, connect_timeout_s),
            transport=self._transport,
            verify=context,
        )

    async def complete(
        self,
        events: LogLike,
        tools: ToolsLike,
        model: str,
        system: str | None = None,
        **how: Unpack[CallOptions],
    ) -> list[CanonicalEvent]:
        """Send the log to ``model`` and return the reply's canonical events; ``cache``
        overrides the client's prompt-cache setting for this call, ``options`` set how it is
        made (their ``max_output_tokens`` wins over the client's ``max_tokens``)."""
        return (
            await self.complete_call(self.call_params(events, tools, model, system, **how))
        ).events

    async def completion(
        self,
        events: LogLike,
        tools: ToolsLike,
        model: str,
        system: str | None = None,
        **how: Unpack[CallOptions],
    ) -> Completion:
        """``complete()``, returning this call's whole `Completion`: its events, usage and
        call info, which concurrent calls never share (unlike ``last_usage``)."""
        return await self.complete_call(self.call_params(events, tools, model, system, **how))

    async def complete_call(self, params: CallParams) -> Completion:
        """``completion()`` of a call's parameters built once (`call_params`)."""
        call = self._core.begin(params)
        try:
            return call.finish_completion(await self._send(call))
        finally:
            if call.ending is not None:
                await _told(call)

    async def _send(
        self, call: Call, *, opened: Callable[[httpx.Response], bool] | None = None
    ) -> httpx.Response:
        """The one retry loop of a call: send it until an answer that is not retried.

        For a stream (``opened`` given), a 2xx answer ``opened`` takes for an event stream
        comes back received but unread; any other answer is read whole first.
        """
        core = self._core
        if call.failure is not None or core.on_start is not None:
            await _started(call)
        if core.preflight:
            await self._preflight(call)
        http = self._http
        while True:
            with call.sending():
                if opened is None:
                    request = http.build_request(
                        "POST",
                        core.endpoint,
                        content=io.request_content(call.parts),
                        headers=call.headers,
                    )
                else:
                    request = http.build_request(
                        "POST",
                        core.endpoint,
                        content=call.body,
                        headers=call.headers,
                        timeout=self._stream_timeout,
                    )
                response = await self._attempt(request, read=opened is None)
            if opened is not None:
                if 200 <= response.status_code < 300 and opened(response):
                    call.received(response)
                    await self._stream_opened(call)
                    return response
                try:
                    with call.reading():
                        await response.aread()
                finally:
                    await response.aclose()
            wait = call.received(response)
            if wait is None:
                return response
            await self._sleep(wait)
            call.slept(wait)

    async def _attempt(self, request: httpx.Request, *, read: bool) -> httpx.Response:
        """One attempt, straight through the client's transport: a proxy call uses none of
        ``httpx.AsyncClient.send``'s auth, redirect or hook steps, and skipping them saves
        ~100 us a call (measured in ``bench.quick``). Cookies are kept, and a failure names
        its request, as the client would."""
        try:
            response = await self._transport.handle_async_request(request)
            response.request = request
            if "set-cookie" in response.headers:
                self._http.cookies.extract_cookies(response)
            if read:
                try:
                    await response.aread()
                finally:
                    await response.aclose()
        except httpx.HTTPError as exc:
            exc.request = request
            raise
        return response

    async def complete_as(
        self,
        output_type: type[M],
        events: LogLike,
        tools: ToolsLike,
        model: str,
        system: str | None = None,
        *,
        repair_attempts: int = 0,
        **how: Unpack[CallOptions],
    ) -> TypedReply[M]:
        """An answer validated into ``output_type`` (see `nisse_llm.render.typed`): a `TypedReply`,
        or `OutputValidationError` once ``repair_attempts`` more asks have failed too."""
        params = self.call_params(events, tools, model, system, **how)
        return await self.complete_call_as(output_type, params, repair_attempts)

    async def complete_call_as(
        self, output_type: type[M], params: CallParams, repair_attempts: int = 0
    ) -> TypedReply[M]:
        """``complete_as()`` of a call's parameters built once (`call_params`)."""
        exchange = typed_exchange(self.route, output_type, params, repair_attempts)
        while True:
            reply = exchange.settle(await self.complete_call(next_ask(exchange, params)))
            if reply is not None:
                return reply

    def stream(
        self,
        events: LogLike,
        tools: ToolsLike,
        model: str,
        system: str | None = None,
        **how: Unpack[CallOptions],
    ) -> AsyncReplyStream:
        """``complete()`` as a stream: ``async with client.stream(...) as s: async for d in s``.

        The log is rendered now (a `RenderError` raises here, or, on a client whose end
        hook `observe` set, on entering, once the hook is told); the request goes out when
        the ``async with`` is entered.
        """
        return self.stream_call(self.call_params(events, tools, model, system, **how))

    def stream_call(self, params: CallParams) -> AsyncReplyStream:
        """``stream()`` of a call's parameters built once (`call_params`)."""
        return AsyncReplyStream(self, self._core.begin(params, stream=True))

    def observe(
        self,
        *,
        on_start: AsyncStartHook | None = None,
        on_end: AsyncCallObserver | None = None,
        conversation_id: str | None = None,
    ) -> None:
        """Hooks a router gives its clients to write its task's records: before each
        call's request leaves, ``await on_start(call)`` (an exception it raises stops the
        call unsent); as the call ends (success, failure, a stream finished, broken or left
        early), before its outcome reaches the caller, ``await on_end(call, usage,
        outcome)``; ``conversation_id`` names the task the calls belong to. Each replaces
        the one set before."""
        core = self._core
        core.on_start = on_start
        core.on_call = on_end
        core.conversation_id = conversation_id

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._http.aclose()
