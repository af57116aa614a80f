"""Bounded replies: every body read under a size cap and every attempt under a deadline.

The transport's other half (httpx is imported here and in `nisse_llm.transport.core` only).
`bounded_transport` wraps the transport a client sends through, so complete and stream,
sync and async, 2xx and error bodies all pass through one reader that:

- decodes ``Content-Encoding`` itself (gzip, deflate, and chains such as ``gzip, gzip``)
  in pieces of at most 64 KiB, counting *decoded* bytes, so a 3 KiB bomb stops at the
  cap instead of inflating in memory first (httpx would hand a whole inflated chunk over);
- raises `ReplyTooLarge` once a 2xx body passes ``max_response_bytes``; a non-2xx body is
  cut silently at `ERROR_BODY_BYTES`, all that classifying it needs;
- raises `DeadlineExceeded` once an attempt runs past its deadline (``call_deadline_s``,
  or ``stream_deadline_s`` for a request that accepts ``text/event-stream``), counted
  from the moment the request is handed to the transport, connecting and headers
  included. Async calls are cut by ``asyncio.timeout``; a sync client's own connection
  pool reads through `_DeadlineBackend`, which shortens each socket read and write to the
  time left, so both are cut at the deadline itself. (Over a caller's own transport a sync
  call is checked as each chunk arrives: at worst one read timeout past the deadline.)

Both exceptions are httpx transport errors, so the exchange classifies them as it does
a reset: `UpstreamUnavailable`, or `StreamInterrupted` mid-stream.
"""

from __future__ import annotations

import ssl
import time
import zlib
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Final, TypeVar

import httpcore
import httpx

from nisse_llm import defaults
from nisse_llm.config._egress import environment_proxy, proxy_error

__all__ = [
    "ACCEPT_ENCODING",
    "ERROR_BODY_BYTES",
    "AsyncBoundedTransport",
    "BoundedDecoder",
    "BoundedTransport",
    "DeadlineExceeded",
    "Limits",
    "ReplyTooLarge",
    "UnsupportedEncoding",
    "async_transport",
    "sync_transport",
]

#: How much of an error body is read: the classifier needs its JSON head, not 512 MiB.
ERROR_BODY_BYTES: Final = 64 * 1024
#: The encodings this reader decodes; sent as Accept-Encoding so a server picks one of them.
ACCEPT_ENCODING: Final = "gzip, deflate"
# Largest piece one decompression step may produce.
_PIECE = 64 * 1024
_EVENT_STREAM = "text/event-stream"
T = TypeVar("T")


class ReplyTooLarge(httpx.TransportError):
    """A reply body decoded past ``llm.max_response_bytes``; nothing more was read."""


class DeadlineExceeded(httpx.TransportError):
    """An attempt ran past ``llm.call_deadline_s`` (or ``llm.stream_deadline_s``)."""


class UnsupportedEncoding(httpx.TransportError):
    """A reply in a ``Content-Encoding`` this reader does not decode (only gzip, deflate)."""


@dataclass(frozen=True, slots=True)
class Limits:
    """The bounds of one client's attempts."""

    max_response_bytes: int = defaults.MAX_RESPONSE_BYTES
    call_deadline_s: float = defaults.CALL_DEADLINE_S
    stream_deadline_s: float = defaults.STREAM_DEADLINE_S

    def deadline_for(self, request: httpx.Request) -> tuple[float, str]:
        """The deadline of ``request`` in seconds and the setting that set it."""
        if _EVENT_STREAM in request.headers.get("accept", ""):
            return self.stream_deadline_s, "llm.stream_deadline_s"
        return self.call_deadline_s, "llm.call_deadline_s"


class _Inflate:
    """One zlib stage; ``deflate`` tries the zlib wrapper first, then raw deflate."""

    __slots__ = ("_d", "_raw_fallback", "_started")

    def __init__(self, wbits: int, *, raw_fallback: bool = False) -> None:
        self._d = zlib.decompressobj(wbits)
        self._raw_fallback = raw_fallback
        self._started = False

    def pieces(self, data: bytes) -> Iterator[bytes]:
        while data and not self._d.eof:
            try:
                out = self._d.decompress(data, _PIECE)
            except zlib.error as exc:
                if self._raw_fallback and not self._started:
                    self._raw_fallback = False
                    self._d = zlib.decompressobj(-zlib.MAX_WBITS)
                    continue
                raise httpx.DecodingError(f"undecodable compressed reply: {exc}") from None
            self._started = True
            data = self._d.unconsumed_tail
            if out:
                yield out

    def flush(self) -> bytes:
        try:
            return self._d.flush()
        except zlib.error as exc:
            raise httpx.DecodingError(f"undecodable compressed reply: {exc}") from None


def _stage(name: str) -> _Inflate | None:
    if name in ("identity", ""):
        return None
    if name in ("gzip", "x-gzip"):
        return _Inflate(zlib.MAX_WBITS | 16)
    if name == "deflate":
        return _Inflate(zlib.MAX_WBITS, raw_fallback=True)
    raise UnsupportedEncoding(
        f"reply in Content-Encoding {name[:40]!r}; only {ACCEPT_ENCODING} are accepted"
    )


class BoundedDecoder:
    """Raw body bytes in, decoded pieces out, never more than ``limit`` bytes in total.

    ``truncate`` ends the body quietly at the limit (error bodies); otherwise passing it
    raises `ReplyTooLarge`. `ended` tells when no more input is wanted.
    """

    __slots__ = ("_limit", "_stages", "_truncate", "ended", "size")

    def __init__(self, content_encoding: str, limit: int, *, truncate: bool = False) -> None:
        names = [part.strip().lower() for part in content_encoding.split(",")]
        # Encodings are listed in the order they were applied: undo the last one first.
        self._stages = [s for s in map(_stage, reversed(names)) if s is not None]
        self._limit = limit
        self._truncate = truncate
        self.size = 0
        self.ended = False

    def feed(self, data: bytes) -> Iterator[bytes]:
        """The decoded pieces of ``data``."""
        yield from self._count(self._pump(data, 0))

    def flush(self) -> Iterator[bytes]:
        """What the decoders still hold at the end of the body."""
        yield from self._count(self._flush(0))

    def _pump(self, data: bytes, level: int) -> Iterator[bytes]:
        if level == len(self._stages):
            if data:
                yield data
            return
        for piece in self._stages[level].pieces(data):
            yield from self._pump(piece, level + 1)

    def _flush(self, level: int) -> Iterator[bytes]:
        if level == len(self._stages):
            return
        tail = self._stages[level].flush()
        if tail:
            yield from self._pump(tail, level + 1)
        yield from self._flush(level + 1)

    def _count(self, pieces: Iterator[bytes]) -> Iterator[bytes]:
        for piece in pieces:
            if self.ended:
                return
            room = self._limit - self.size
            if len(piece) > room:
                if not self._truncate:
                    self.ended = True
                    raise ReplyTooLarge(
                        f"the reply body passed {self._limit} bytes "
                        "(llm.max_response_bytes); nothing more was read"
                    )
                piece = piece[:room]
                self.ended = True
            self.size += len(piece)
            if piece:
                yield piece


def _decoder(response: httpx.Response, limits: Limits) -> BoundedDecoder:
    ok = 200 <= response.status_code < 300
    return BoundedDecoder(
        response.headers.get("content-encoding", ""),
        limits.max_response_bytes if ok else min(ERROR_BODY_BYTES, limits.max_response_bytes),
        truncate=not ok,
    )


def _rebuilt(
    response: httpx.Response, stream: httpx.SyncByteStream | httpx.AsyncByteStream
) -> httpx.Response:
    # The body is handed on decoded: without its encoding headers httpx reads it as is.
    headers = response.headers
    if "content-encoding" in headers:
        del headers["content-encoding"]
        headers.pop("content-length", None)
    response.stream = stream
    return response


class _Clock:
    __slots__ = ("deadline_s", "key", "started")

    def __init__(self, limits: Limits, request: httpx.Request) -> None:
        self.deadline_s, self.key = limits.deadline_for(request)
        self.started = time.monotonic()

    @property
    def at(self) -> float:
        """The deadline on the ``time.monotonic`` clock."""
        return self.started + self.deadline_s

    def remaining(self) -> float:
        return self.deadline_s - (time.monotonic() - self.started)

    def check(self) -> None:
        if self.remaining() <= 0:
            raise self.exceeded()

    def exceeded(self) -> DeadlineExceeded:
        return DeadlineExceeded(
            f"the attempt passed its deadline of {self.deadline_s:g} s ({self.key})"
        )


class _SyncBody(httpx.SyncByteStream):
    def __init__(self, inner: httpx.SyncByteStream, decoder: BoundedDecoder, clock: _Clock) -> None:
        self._inner = inner
        self._decoder = decoder
        self._clock = clock

    def __iter__(self) -> Iterator[bytes]:
        decoder, clock = self._decoder, self._clock
        chunks = iter(self._inner)
        try:
            while True:
                with _deadline(clock):
                    raw = next(chunks, None)
                if raw is None:
                    break
                clock.check()
                yield from decoder.feed(raw)
                if decoder.ended:
                    return
            yield from decoder.flush()
        finally:
            self._inner.close()

    def close(self) -> None:
        self._inner.close()


class _AsyncBody(httpx.AsyncByteStream):
    def __init__(
        self, inner: httpx.AsyncByteStream, decoder: BoundedDecoder, clock: _Clock
    ) -> None:
        self._inner = inner
        self._decoder = decoder
        self._clock = clock

    async def __aiter__(self) -> AsyncIterator[bytes]:
        import asyncio  # here, not at import: a sync-only program never loads asyncio

        decoder, clock = self._decoder, self._clock
        chunks = aiter(self._inner)
        try:
            while True:
                try:
                    async with asyncio.timeout(max(clock.remaining(), 0)):
                        raw = await anext(chunks)
                except StopAsyncIteration:
                    break
                except TimeoutError:
                    raise clock.exceeded() from None
                for piece in decoder.feed(raw):
                    yield piece
                if decoder.ended:
                    return
            for piece in decoder.flush():
                yield piece
        finally:
            await self._inner.aclose()

    async def aclose(self) -> None:
        await self._inner.aclose()


class BoundedTransport(httpx.BaseTransport):
    """A sync transport whose replies are size-capped and deadline-bound (see the module)."""

    def __init__(self, inner: httpx.BaseTransport, limits: Limits) -> None:
        self._inner = inner
        self._limits = limits

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        clock = _Clock(self._limits, request)
        with _deadline(clock):
            response = self._inner.handle_request(request)
        try:
            clock.check()
            decoder = _decoder(response, self._limits)
        except BaseException:
            response.close()
            raise
        assert isinstance(response.stream, httpx.SyncByteStream)
        return _rebuilt(response, _SyncBody(response.stream, decoder, clock))

    def close(self) -> None:
        self._inner.close()


class AsyncBoundedTransport(httpx.AsyncBaseTransport):
    """`BoundedTransport` for asyncio: the deadline also covers connecting and the headers."""

    def __init__(self, inner: httpx.AsyncBaseTransport, limits: Limits) -> None:
        self._inner = inner
        self._limits = limits

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        import asyncio  # here, not at import: a sync-only program never loads asyncio

        clock = _Clock(self._limits, request)
        try:
            async with asyncio.timeout(clock.deadline_s):
                response = await self._inner.handle_async_request(request)
        except TimeoutError:
            raise clock.exceeded() from None
        try:
            decoder = _decoder(response, self._limits)
        except BaseException:
            await response.aclose()
            raise
        assert isinstance(response.stream, httpx.AsyncByteStream)
        return _rebuilt(response, _AsyncBody(response.stream, decoder, clock))

    async def aclose(self) -> None:
        await self._inner.aclose()


#: When the current sync attempt must end (``time.monotonic``), for `_DeadlineBackend`.
_DEADLINE: ContextVar[float | None] = ContextVar("nisse_llm_deadline", default=None)


class _deadline:
    """Within the block, sync socket operations end by ``clock``'s deadline; a timeout
    that the deadline caused is raised as `DeadlineExceeded`."""

    __slots__ = ("_clock", "_reset")

    def __init__(self, clock: _Clock) -> None:
        self._clock = clock

    def __enter__(self) -> None:
        self._reset = _DEADLINE.set(self._clock.at)

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: Any
    ) -> None:
        _DEADLINE.reset(self._reset)
        if isinstance(exc, httpx.TimeoutException) and self._clock.remaining() <= 0:
            raise self._clock.exceeded() from None


def _left(timeout: float | None) -> float | None:
    """``timeout`` shortened to the time left before the current deadline, if any."""
    at = _DEADLINE.get()
    if at is None:
        return timeout
    left = max(at - time.monotonic(), 0.001)  # 0 would make the socket non-blocking
    return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore.NetworkStream):
    """A socket stream whose every read and write ends by the current deadline."""

    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _left(timeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _left(timeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        return _DeadlineStream(self._inner.start_tls(ssl_context, server_hostname, _left(timeout)))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _DeadlineBackend(httpcore.NetworkBackend):
    """httpcore's sync network backend, its streams bounded by the current deadline."""

    def __init__(self, inner: httpcore.NetworkBackend) -> None:
        self._inner = inner

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        stream = self._inner.connect_tcp(host, port, _left(timeout), local_address, socket_options)
        return _DeadlineStream(stream)

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.NetworkStream:
        stream = self._inner.connect_unix_socket(path, _left(timeout), socket_options)
        return _DeadlineStream(stream)

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def _bound_sockets(transport: httpx.HTTPTransport) -> None:
    # httpx does not expose httpcore's network_backend; its pool keeps the backend here
    # (httpcore 1.x). Without it the deadline is still checked as each chunk arrives.
    pool = getattr(transport, "_pool", None)
    backend = getattr(pool, "_network_backend", None)
    if isinstance(backend, httpcore.NetworkBackend):
        pool._network_backend = _DeadlineBackend(backend)  # type: ignore[union-attr]


def _pool(base_url: str, make: Callable[..., T], verify: ssl.SSLContext) -> T:
    """httpx's own connection pool (``make``), over the environment's proxy for
    ``base_url`` if it names one (see `environment_proxy`)."""
    proxy, variable = environment_proxy(base_url)
    try:
        return make(verify=verify, proxy=proxy)
    except (ImportError, ValueError, httpx.InvalidURL) as exc:
        raise proxy_error(variable, proxy or "", exc) from None


def sync_transport(
    base_url: str, inner: httpx.BaseTransport | None, limits: Limits, verify: ssl.SSLContext
) -> BoundedTransport:
    """The bounded transport of a sync client: over ``inner``, else over a connection pool
    that takes the environment's proxy for ``base_url``."""
    if inner is None:
        pool = _pool(base_url, httpx.HTTPTransport, verify)
        _bound_sockets(pool)
        inner = pool
    return BoundedTransport(inner, limits)


def async_transport(
    base_url: str, inner: httpx.AsyncBaseTransport | None, limits: Limits, verify: ssl.SSLContext
) -> AsyncBoundedTransport:
    """`sync_transport` for asyncio."""
    if inner is None:
        inner = _pool(base_url, httpx.AsyncHTTPTransport, verify)
    return AsyncBoundedTransport(inner, limits)
