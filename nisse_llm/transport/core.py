"""The exchange every client shares: render, send, classify, retry, parse, meter, log.

A `Call` holds one request's state and does everything but the I/O; sync and async
clients drive it the same way and differ only in how they send and how they sleep::

    call = core.begin(core.params(CallParams(events, tools, model, system)))
    while True:
        with call.sending():
            response = http.post(core.url, content=call.parts, headers=call.headers)
        wait = call.received(response)
        if wait is None:
            return call.finish(response)
        sleep(wait)                                             # or await
        call.slept(wait)

A streamed call (``begin(params, stream=True)``) runs the same loop up to the first 2xx
byte, then feeds the body to `Call.accumulator` and ends in `Call.finish_stream`, or in
`Call.stream_failed` for whatever broke mid-way.

The hooks a router gives a client (`ClientState.on_start`, `ClientState.on_call`) are the client's to
call, so an async client can await them: the client calls ``on_start`` before the first
attempt, and a call with ``on_call`` set keeps its ending (`Call.ending`) for the client
to tell once the step that ended it returns or raises, then `Call.report` logs a success
and runs ``on_usage``. A render failure `ClientState.begin` meets with ``on_call`` set is kept
too (`Call.failure`), raised when the client starts the call, once its ending is told.

httpx's exceptions are translated in `Call.reading` and `Call.stream_failed`, nowhere else.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final, NoReturn, TypeAlias, TypedDict

import httpx
from pydantic import SecretStr

from nisse_llm import _telemetry
from nisse_llm.config._egress import check_base_url, check_token, watch_token
from nisse_llm.errors import (
    AuthenticationFailed,
    ConfigError,
    LLMError,
    StreamInterrupted,
    UpstreamUnavailable,
)
from nisse_llm.events.canonical import (
    DEFAULT_MAX_OUTPUT_TOKENS,
    CallInfo,
    CanonicalEvent,
    Completion,
    Usage,
)
from nisse_llm.render import CallParams, Renderer
from nisse_llm.render._cache import PromptCache
from nisse_llm.routes.descriptor import RouteDescriptor
from nisse_llm.transport._callinfo import call_info, priced, usage_keywords
from nisse_llm.transport._classify import RateLimitPolicy, Retry, classify_failure, redact
from nisse_llm.transport._limits import ACCEPT_ENCODING, DeadlineExceeded, ReplyTooLarge
from nisse_llm.transport._tls import shared_ssl_context


class CallOptions(TypedDict, total=False):
    """How one call on a client is made, the keywords its call methods share."""

    #: Turns the client's prompt-cache setting on or off for this call.
    cache: bool | None
    #: How the call is made, already layered over the role's profile (their
    #: ``max_output_tokens`` wins over the client's ``max_tokens``).
    options: RequestOptions | None


# Streaming and the model-info readers load with the first stream or side request.
if TYPE_CHECKING:
    from nisse_llm._telemetry import CallTrace
    from nisse_llm.config.options import RequestOptions
    from nisse_llm.stream.deltas import StreamAccumulator
    from nisse_llm.wire.models_info import ModelInfo

__all__ = [
    "HTTPX_ERRORS",
    "AsyncCallObserver",
    "AsyncStartHook",
    "Call",
    "CallObserver",
    "CallOptions",
    "ClientState",
    "Core",
    "PartsRenderer",
    "RouteSpec",
    "StartHook",
    "UsageCallback",
    "logger",
    "router_role",
    "shared_ssl_context",
]

logger = logging.getLogger("nisse_llm")
# A library leaves output to the application: without this, Python's last-resort handler
# prints every WARNING record to stderr when no logging is configured.
logger.addHandler(logging.NullHandler())

#: The role a router is completing for, read by `ClientState.begin` (set only around a router's
#: call into its client, so a client's signature need not carry it).
router_role: ContextVar[str | None] = ContextVar("nisse_llm_router_role", default=None)

#: Called once per successful call with its usage and the model the request named, on the
#: caller's thread or task; an exception it raises reaches the caller. A callback that also
#: declares ``role`` and/or ``call`` keywords (or ``**kwargs``) receives the router role
#: the call went through (None outside a router) and its `CallInfo`.
UsageCallback = Callable[[Usage, str], None]

#: Called once when a call ends, before it returns or raises: with the call, its usage
#: (None without a parsed reply) and its outcome: ``"ok"``, ``"closed"`` (a stream left
#: early) or the error's class name. An exception it raises reaches the caller instead.
CallObserver = Callable[["Call", Usage | None, str], None]
#: `CallObserver` on an async client, which awaits it.
AsyncCallObserver = Callable[["Call", Usage | None, str], Awaitable[None]]
#: Called before a call's request leaves (an exception it raises stops the call unsent).
StartHook = Callable[["Call"], None]
#: `StartHook` on an async client, which awaits it.
AsyncStartHook = Callable[["Call"], Awaitable[None]]

# The roots of every exception httpx raises (HTTPError covers transport errors and
# timeouts; the other three are not HTTPError subclasses).
HTTPX_ERRORS: tuple[type[Exception], ...] = (
    httpx.HTTPError,
    httpx.InvalidURL,
    httpx.CookieConflict,
    httpx.StreamError,
)

_DEBUG_LIMIT = 2000
#: What a streamed request asks for instead of a JSON body.
_STREAM_ACCEPT: Final = {"accept": "text/event-stream"}
# A parser that breaks its contract on a malformed body still yields an LLMError here.
_PARSE_BUGS = (ValueError, TypeError, KeyError, IndexError, AttributeError)


#: A route's renderer, which also hands out its body in parts (``b"".join`` of them is it).
PartsRenderer: TypeAlias = Renderer


#: One proxy route, as the route table describes it (`nisse_llm.routes`).
RouteSpec: TypeAlias = RouteDescriptor


def _debug_text(data: bytes, token: str) -> str:
    # Cut past the limit before redacting so a token straddling it is still removed.
    head = data[: _DEBUG_LIMIT + len(token)].decode("utf-8", "replace")
    return redact(head, token)[:_DEBUG_LIMIT]


class ClientState:
    """What one client holds for its route, shared by all its calls: the endpoint and
    headers, the renderer, the retry and prompt-cache policies, the hooks a router set,
    and the latest call's usage."""

    __slots__ = (
        "_token",
        "base_url",
        "conversation_id",
        "endpoint",
        "headers",
        "last_call",
        "last_usage",
        "max_tokens",
        "model_infos",
        "on_call",
        "on_start",
        "on_usage",
        "policy",
        "preflight",
        "prompt_cache",
        "renderer",
        "route",
        "timeout_s",
        "token_source",
        "url",
        "usage_keywords",
        "where",
    )

    def __init__(
        self,
        route: RouteSpec,
        base_url: str,
        token: str | SecretStr,
        *,
        timeout_s: float | None,
        max_tokens: int | None,
        policy: RateLimitPolicy,
        on_usage: UsageCallback | None,
        prompt_cache: PromptCache | bool | None = True,
        preflight: bool = False,
    ) -> None:
        self._token = token if isinstance(token, SecretStr) else SecretStr(token)
        if self.token:
            check_token(self.token)
            watch_token(self.token)
        self.route = route
        #: The proxy's base URL, for its endpoints beside the route (model info, counter).
        self.base_url = check_base_url(base_url.rstrip("/"))
        self.url = self.base_url + route.path
        #: ``url`` parsed once: httpx would parse the string again on every request.
        try:
            self.endpoint = httpx.URL(self.url)
        except httpx.InvalidURL as exc:
            raise ConfigError(f"base URL {base_url[:200]!r} cannot be parsed: {exc}") from None
        #: The request as messages name it: method and full URL (never credentials), so
        #: "Connection refused" says where.
        self.where = f"POST {public_url(self.endpoint)}"
        #: Where the token came from, named when the proxy refuses it.
        self.token_source = "the token passed to the client"
        self.timeout_s = route.default_timeout_s if timeout_s is None else timeout_s
        self.max_tokens = max_tokens or DEFAULT_MAX_OUTPUT_TOKENS
        self.policy = policy
        self.on_usage = on_usage
        #: Told of every call's end (a router sets it to write the task record): a
        #: `CallObserver`, or an `AsyncCallObserver` on an async client; the client calls it.
        self.on_call: Callable[[Call, Usage | None, str], Any] | None = None
        #: Told of every call before its request leaves (a router records the start): a
        #: `StartHook` or an `AsyncStartHook`; the client calls it.
        self.on_start: Callable[[Call], Any] | None = None
        #: The prompt-cache policy of every call that does not override it (None: off).
        self.prompt_cache = _cache_policy(prompt_cache)
        self.renderer: PartsRenderer = route.new_renderer()
        # Built once: the body goes out as pre-encoded bytes, so the type is ours to set.
        self.headers = {
            **route.auth_headers(self._token.get_secret_value()),
            "content-type": "application/json",
            "accept": "application/json",
            "accept-encoding": ACCEPT_ENCODING,
        }
        #: Usage of the most recent successful call on this client (any thread or task).
        self.last_usage: Usage | None = None
        #: What the proxy said about the most recent successful call (id, cost...).
        self.last_call: CallInfo | None = None
        #: Check that each request fits its model's window before sending it.
        self.preflight = preflight
        #: ``/v1/model/info`` as read once (model name -> limits and prices), or None.
        self.model_infos: dict[str, ModelInfo] | None = None
        self.usage_keywords = usage_keywords(on_usage)
        #: The task this client's calls belong to (a router with a task file sets it).
        self.conversation_id: str | None = None

    @property
    def token(self) -> str:
        """The proxy token, for redaction only."""
        return self._token.get_secret_value()

    def describe(self, cls: type) -> str:
        """A repr for a client: route, endpoint and timeout, never the token."""
        return f"{cls.__name__}(url={self.url!r}, timeout_s={self.timeout_s!r})"

    def classify(
        self,
        response: httpx.Response,
        *,
        where: str,
        attempts: int,
        model: str | None = None,
        role: str | None = None,
    ) -> Retry | LLMError:
        """What to do about a non-2xx ``response`` to the ``attempts``-th try of a request
        named ``where`` (see `classify_failure`)."""
        return classify_failure(
            response.status_code,
            response.headers,
            response.content,
            where=where,
            token=self.token,
            policy=self.policy,
            retries_done=attempts - 1,
            now=datetime.now(UTC),
            model=model,
            role=role,
        )

    def params(self, call: CallParams, *, cache: bool | None = None) -> CallParams:
        """``call`` on this client: the client's ``max_tokens`` is the ceiling its options'
        ``max_output_tokens`` wins over, and ``cache`` turns the client's prompt-cache
        policy on or off for the call."""
        policy = self.prompt_cache
        if cache is not None:
            policy = _cache_policy(cache) if policy is None else replace(policy, enabled=cache)
        return replace(call, max_tokens=self.max_tokens, cache=policy)

    def begin(self, params: CallParams, *, stream: bool = False) -> Call:
        """Render the request of ``params`` (made by `params`) and start its call (a render failure
        is logged and raised, or, with an end hook set, kept for the client: see the module
        docstring). The call's rules are decided here, once (`RouteDescriptor.decide`,
        cached per model and options), and handed to the renderer with the rest."""
        model, options = params.model, params.options
        call = Call(self, model)
        call.role = router_role.get()
        call.streamed = stream
        # Telemetry off (the default) costs this one check per call: see `_telemetry`.
        tracer = _telemetry.tracer
        if tracer is not None:
            call.trace = tracer.call(call, params)
        try:
            rules = self.route.decide(
                model, options, max_tokens=params.max_tokens, prefixes=params.prefixes
            )
            parts = self.renderer.render_call(params.decided(rules))
        except LLMError as exc:
            try:
                call.fail(exc)
            except LLMError as failed:
                if call.ending is None:
                    raise
                call.failure = (
                    failed  # raised by `Call.raise_render_failure`, once the end hook is told
                )
                return call
        if stream:
            # Spliced before the body's closing brace: the history is never encoded twice.
            parts[-1] = parts[-1][:-1] + self.route.stream_fields
        call.parts = parts
        # A stream is sent as one bytes body (httpx sets its length); parts need theirs.
        call.headers = (
            dict(_STREAM_ACCEPT) if stream else {"content-length": str(sum(map(len, parts)))}
        )
        if call.trace is not None:
            call.headers.update(call.trace.headers)
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug("request %s %s: %s", self.where, model, _debug_text(call.body, self.token))
        return call


def _scrubbed(exc: BaseException, token: str) -> bool:
    """Redact ``token`` in the args of ``exc`` and of every exception chained to it.

    A server may echo the token where httpx, httpcore or h11 quote it (a malformed
    status line, header or chunk size); the chain stays for debugging, cleaned. False if
    some exception still shows the token (its text is not made from its args).
    """
    found: dict[int, BaseException] = {}
    todo: list[object] = [exc]
    while todo:
        current = todo.pop()
        if not isinstance(current, BaseException) or id(current) in found:
            continue
        found[id(current)] = current
        todo += [current.__cause__, current.__context__, *current.args]
    for current in found.values():
        if any(isinstance(a, str | bytes | bytearray) for a in current.args):
            current.args = tuple(_redact_arg(a, token) for a in current.args)
    return not any(token in str(e) or token in repr(e) for e in found.values())


def _redact_arg(arg: object, token: str) -> object:
    if isinstance(arg, str):
        return redact(arg, token)
    if isinstance(arg, bytes | bytearray):
        return bytes(arg).replace(token.encode(), b"[redacted]")
    return arg


def public_url(url: httpx.URL) -> str:
    """``scheme://host:port/path``: the port always shown, credentials never."""
    port = url.port or (443 if url.scheme == "https" else 80)
    host = f"[{url.host}]" if ":" in url.host else url.host
    return f"{url.scheme}://{host}:{port}{url.path}"


def with_token_hint(exc: LLMError, token_source: str) -> LLMError:
    """``exc`` saying where the token came from, when the proxy refused it."""
    if not isinstance(exc, AuthenticationFailed):
        return exc
    return AuthenticationFailed(
        f"{exc.message} (this one came from {token_source})",
        status=exc.status,
        error_type=exc.error_type,
        server_message=exc.server_message,
    )


def _cache_policy(value: PromptCache | bool | None) -> PromptCache | None:
    """``True``: breakpoints with the API's default 5-minute lifetime; ``False``/``None``: none."""
    if isinstance(value, PromptCache):
        return value if value.enabled else None
    return PromptCache(ttl="5m") if value else None


#: `ClientState` under its former name.
Core: TypeAlias = ClientState


class Call:
    """One request's state across its attempts; see the module docstring for the loop."""

    __slots__ = (
        "attempts",
        "core",
        "ending",
        "failure",
        "headers",
        "info",
        "model",
        "parts",
        "role",
        "started",
        "status",
        "streamed",
        "trace",
        "waited_s",
    )

    def __init__(self, core: ClientState, model: str) -> None:
        self.core = core
        self.model = model
        #: The body in parts, sent as they are (no megabyte join per call) under ``headers``:
        #: an explicit Content-Length keeps httpx from framing an iterable body as chunked.
        self.parts: list[bytes] = []
        #: The request's own headers: its length (or a stream's accept) and trace context.
        self.headers: dict[str, str] = {}
        self.attempts = 0
        self.waited_s = 0.0
        self.status: int | None = None
        self.started = time.perf_counter()
        #: What the last response's headers said about the call (None before one arrives).
        self.info: CallInfo | None = None
        #: The router role this call went through, if any.
        self.role: str | None = None
        self.streamed = False
        #: The call's span while telemetry is on (`nisse_llm.instrument`), else None.
        self.trace: CallTrace[Call] | None = None
        #: How the call ended (usage, outcome), kept for the client to tell ``on_call``.
        self.ending: tuple[Usage | None, str] | None = None
        #: A render failure kept while ``on_call`` is told of it (see `ClientState.begin`).
        self.failure: LLMError | None = None

    @property
    def body(self) -> bytes:
        """The whole body as one bytes object (a join: for streams, retries of those, logs)."""
        return b"".join(self.parts)

    @contextmanager
    def sending(self) -> Iterator[None]:
        """Count an attempt; any httpx exception inside becomes `UpstreamUnavailable`."""
        self.attempts += 1
        self.status = None
        self.info = None
        with self.reading():
            yield

    @contextmanager
    def reading(self) -> Iterator[None]:
        """`sending` without counting an attempt: for reading a streamed reply's error body."""
        try:
            yield
        except HTTPX_ERRORS as exc:
            detail = redact(str(exc), self.core.token) or "no detail"
            self.fail(
                UpstreamUnavailable(
                    f"{self.core.where}: could not complete the exchange: "
                    f"{type(exc).__name__}: {detail}"
                ),
                cause=exc,
            )
        except BaseException as exc:  # cancelled or interrupted while waiting on the network
            if self.trace is not None:
                self.trace.interrupted(self, type(exc).__name__)
            raise

    def received(self, response: httpx.Response) -> float | None:
        """``None`` for a 2xx reply, the wait before retrying a 429, else raise its error."""
        status = self.status = response.status_code
        is_stream = str(response.headers.get("content-type", "")).startswith("text/event-stream")
        self.info = call_info(response.headers, streamed=is_stream, token=self.core.token)
        if 200 <= status < 300:
            return None
        core = self.core
        self._log_reply(response)
        verdict = core.classify(
            response, where=core.where, attempts=self.attempts, model=self.model, role=self.role
        )
        if isinstance(verdict, Retry):
            return verdict.wait_s
        self.fail(with_token_hint(verdict, core.token_source))

    def _log_reply(self, response: httpx.Response) -> None:
        """The reply's body at DEBUG, cut short and with the token redacted."""
        if logger.isEnabledFor(logging.DEBUG):
            core = self.core
            logger.debug(
                "response %s %s %d: %s",
                core.where,
                self.model,
                response.status_code,
                _debug_text(response.content, core.token),
            )

    def slept(self, wait_s: float) -> None:
        """Record a wait taken before the next attempt."""
        self.waited_s += wait_s

    def finish(self, response: httpx.Response) -> list[CanonicalEvent]:
        """Parse a 2xx reply, record and report its usage, log the call, return the events."""
        return self.finish_completion(response).events

    def finish_completion(self, response: httpx.Response) -> Completion:
        """`finish`, returning the whole `Completion` (events, usage, stop reason)."""
        core = self.core
        self._log_reply(response)
        return self._settle(
            lambda: core.renderer.parse(response.content, requested_model=self.model)
        )

    def accumulator(self) -> StreamAccumulator:
        """A fresh accumulator for this call's streamed reply, parsing as `finish` does."""
        from nisse_llm.stream.deltas import accumulator_for

        core = self.core
        return accumulator_for(core.route, requested_model=self.model, parse=core.renderer.parse)

    def finish_stream(self, acc: StreamAccumulator) -> Completion:
        """End a stream that arrived whole: its completion, metered and logged as `finish` does."""
        return self._settle(acc.finish)

    def stream_failed(
        self, acc: StreamAccumulator, exc: Exception, *, idle_timeout_s: float
    ) -> NoReturn:
        """Raise what a stream that broke mid-way means: `StreamInterrupted` or the parse failure."""
        from nisse_llm.stream._sse import EventTooLarge

        if isinstance(exc, httpx.ReadTimeout):
            self._raise_parsed(acc.interrupted(f"no data for {idle_timeout_s:g} s"), cause=exc)
        if isinstance(exc, DeadlineExceeded | ReplyTooLarge | EventTooLarge):
            self._raise_parsed(acc.interrupted(str(exc)), cause=exc)
        if isinstance(exc, HTTPX_ERRORS):
            detail = redact(str(exc), self.core.token) or "no detail"
            self._raise_parsed(
                acc.interrupted(f"connection lost: {type(exc).__name__}: {detail}"), cause=exc
            )
        if isinstance(exc, LLMError):
            self._raise_parsed(exc)
        if isinstance(exc, _PARSE_BUGS):
            self.fail(
                LLMError(f"{self.core.where}: unreadable {self.status} stream: {exc}"), cause=exc
            )
        raise exc

    def abandoned(self, deltas: int) -> None:
        """Log a stream the caller closed before its end: no usage is known or reported."""
        if self.trace is not None:
            self.trace.closed(self)
        self._observe(None, "closed")
        self._log(logging.INFO, None, None, closed_after=deltas)

    def raise_render_failure(self) -> None:
        """Before the start hook: raise the render failure `ClientState.begin` kept for the end hook."""
        if self.failure is not None:
            raise self.failure

    def trace_unsent(self, exc: BaseException) -> None:
        """Trace the call as interrupted before its request left (the start hook raised ``exc``)."""
        if self.trace is not None:
            self.trace.interrupted(self, type(exc).__name__)

    def take_ending(self) -> tuple[Usage | None, str] | None:
        """Take the ending kept for ``on_call`` (None: none is waiting)."""
        ending, self.ending = self.ending, None
        return ending

    def _observe(self, usage: Usage | None, outcome: str) -> None:
        if self.core.on_call is not None:
            self.ending = (usage, outcome)

    def _settle(self, parse: Callable[[], Completion]) -> Completion:
        try:
            completion = parse()
        except LLMError as exc:
            self._raise_parsed(exc)
        except _PARSE_BUGS as exc:
            self.fail(
                LLMError(f"{self.core.where}: unreadable {self.status} response: {exc}"), cause=exc
            )
        core = self.core
        usage = completion.usage
        info = self._priced(usage)
        completion = completion.model_copy(update={"call": info})
        if self.trace is not None:
            self.trace.succeeded(self, completion)
        core.last_usage = usage
        core.last_call = info
        if core.on_call is None:
            self.report(usage)
        else:  # reported once ``on_call`` is told, as a router's record comes first
            self._observe(usage, "ok")
        return completion

    def report(self, usage: Usage) -> None:
        """Log a successful call and tell ``on_usage`` of it."""
        self._log(logging.INFO, usage, None)
        core = self.core
        if core.on_usage is not None:
            wanted = core.usage_keywords
            extra = {"role": self.role, "call": self.info}
            core.on_usage(usage, self.model, **{k: v for k, v in extra.items() if k in wanted})

    def _priced(self, usage: Usage) -> CallInfo:
        """The call's `CallInfo`, its cost from the model's prices where no header gave one."""
        info = self.info or CallInfo()
        known = self.core.model_infos
        model = None if known is None else known.get(self.model)
        if info.cost_usd is None and self.streamed and model is not None:
            cost = priced(
                usage,
                input_cost_per_token=model.input_cost_per_token,
                output_cost_per_token=model.output_cost_per_token,
                cache_read_cost_per_token=model.cache_read_cost_per_token,
                cache_write_cost_per_token=model.cache_write_cost_per_token,
            )
            if cost is not None:
                info = info.model_copy(update={"cost_usd": cost, "cost_source": "prices"})
        self.info = info
        return info

    def _raise_parsed(self, exc: LLMError, *, cause: BaseException | None = None) -> NoReturn:
        # A broken stream is the exchange's fault, not the reply's: no "200 reply" label.
        where = self.core.where
        label = where if isinstance(exc, StreamInterrupted) else f"{where}: {self.status} reply"
        exc.message = f"{label}: {exc.message}"
        exc.args = (exc.message, *exc.args[1:])
        self.fail(exc, cause=cause)

    def fail(self, exc: LLMError, *, cause: BaseException | None = None) -> NoReturn:
        """Redact, stamp the status on, log once, and raise ``exc``."""
        token = self.core.token
        if exc.status is None:
            exc.status = self.status
        if exc.call_id is None and self.info is not None:
            exc.call_id = self.info.call_id
        if token:
            exc.message = redact(exc.message, token)
            exc.args = tuple(redact(a, token) if isinstance(a, str) else a for a in exc.args)
            if exc.server_message is not None:
                exc.server_message = redact(exc.server_message, token)
            if exc.error_type is not None:  # a server may echo anything in error.type too
                exc.error_type = redact(exc.error_type, token)
        if self.trace is not None:
            self.trace.failed(self, exc)
        self._observe(None, type(exc).__name__)
        self._log(logging.WARNING, None, exc)
        if token and cause is None and token in str(exc.__cause__):
            raise exc from None  # a parser's chained error quotes the token, as pydantic quotes input
        if token and cause is not None and not _scrubbed(cause, token):
            raise exc from None  # a chained exception shows the token and cannot be cleaned
        if cause is not None:
            raise exc from cause
        raise exc

    def _log(
        self,
        level: int,
        usage: Usage | None,
        error: LLMError | None,
        *,
        closed_after: int | None = None,
    ) -> None:
        if not logger.isEnabledFor(level):
            return
        core = self.core
        latency_s = time.perf_counter() - self.started
        extra = {
            "route": core.route.name,
            "model": self.model,
            "status": self.status,
            "attempts": self.attempts,
            "waited_s": self.waited_s,
            "latency_s": latency_s,
            "usage": None if usage is None else usage.model_dump(),
            "error": None if error is None else type(error).__name__,
            "role": self.role,
            "call_id": None if self.info is None else self.info.call_id,
            "cost_usd": None if self.info is None else self.info.cost_usd,
        }
        if closed_after is not None:
            logger.log(
                level,
                "%s %s: %s stream closed by the caller after %d delta(s) in %.3f s",
                core.where,
                self.model,
                self.status,
                closed_after,
                latency_s,
                extra=extra,
            )
        elif error is None:
            logger.log(
                level,
                "%s %s: %s after %d attempt(s) in %.3f s",
                core.where,
                self.model,
                self.status,
                self.attempts,
                latency_s,
                extra=extra,
            )
        else:
            logger.log(
                level,
                "%s %s failed after %d attempt(s): %s: %s",
                core.where,
                self.model,
                self.attempts,
                type(error).__name__,
                error.message,
                extra=extra,
            )
