"""Model limits on the clients: model info, token counts, headroom, the pre-flight check.

Two proxy endpoints beside the routes: ``GET /v1/model/info`` (read once per client and
kept) and ``POST /utils/token_counter`` (counts locally at the proxy: no database, no
upstream call). A `SideRequest` holds one such request's state as `Call` does for a
completion, classified and retried by the same rules; the mixins here only send and
sleep, sync or async, and are mixed into the clients and routers.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol, TypeVar

from nisse_llm import _telemetry
from nisse_llm.errors import ContextWindowExceeded, LLMError, UpstreamUnavailable
from nisse_llm.log.canonical import LogLike, ToolsLike
from nisse_llm.transport._callinfo import call_info
from nisse_llm.transport._classify import Retry, classify_failure, redact
from nisse_llm.transport.core import HTTPX_ERRORS, Call, Core, public_url, with_token_hint, logger

# The model-info readers load with the first side request: a plain call never needs them.
if TYPE_CHECKING:
    import httpx

    from nisse_llm.config.options import RequestOptions
    from nisse_llm.wire.models_info import Headroom, ModelInfo

__all__ = [
    "AsyncClientLimits",
    "AsyncRouterLimits",
    "ClientLimits",
    "RouterLimits",
    "SideRequest",
]

MODEL_INFO_PATH: Final = "/v1/model/info"
MODELS_PATH: Final = "/v1/models"
TOKEN_COUNTER_PATH: Final = "/utils/token_counter"
# A server without the endpoint (a plain OpenAI-compatible one): no limits, count locally.
_ABSENT: Final = frozenset({404, 405, 501})
Source = Literal["proxy", "estimate"]
T = TypeVar("T")


class SideRequest:
    """One request to a proxy endpoint beside the routes, across its attempts."""

    __slots__ = ("attempts", "body", "core", "headers", "method", "url", "where")

    def __init__(self, core: Core, method: str, path: str, body: bytes | None = None) -> None:
        self.core = core
        self.method = method
        self.url = core.base_url + path
        # The proxy's base path (if any) is the route endpoint's path less the route's own.
        base_path = core.endpoint.path[: -len(core.route.path)]
        public = public_url(core.endpoint.copy_with(raw_path=(base_path + path).encode()))
        self.where = f"{method} {public}"
        self.body = body
        self.attempts = 0
        #: Trace context from the caller's current span, while telemetry is on.
        tracer = _telemetry.tracer
        self.headers = {} if tracer is None else tracer.context_headers()

    @contextmanager
    def sending(self) -> Iterator[None]:
        """Count an attempt; any httpx exception inside becomes `UpstreamUnavailable`."""
        self.attempts += 1
        try:
            yield
        except HTTPX_ERRORS as exc:
            detail = redact(str(exc), self.core.token) or "no detail"
            raise self._logged(
                UpstreamUnavailable(
                    f"{self.where}: could not complete the exchange: {type(exc).__name__}: {detail}"
                )
            ) from exc

    def received(self, response: httpx.Response) -> float | None:
        """``None`` for a 2xx reply, the wait before retrying a 429, else raise its error."""
        status = response.status_code
        if 200 <= status < 300:
            return None
        core = self.core
        verdict = classify_failure(
            status,
            response.headers,
            response.content,
            where=self.where,
            token=core.token,
            policy=core.policy,
            retries_done=self.attempts - 1,
            now=datetime.now(UTC),
        )
        if isinstance(verdict, Retry):
            return verdict.wait_s
        verdict.call_id = call_info(response.headers, token=core.token).call_id
        raise self._logged(with_token_hint(verdict, core.token_source))

    def parse(self, response: httpx.Response, reader: Callable[[bytes], T]) -> T:
        """``reader`` applied to a 2xx body; an unreadable one is an `LLMError`."""
        try:
            return reader(response.content)
        except ValueError as exc:
            text = redact(str(exc), self.core.token)[:500]
            error = LLMError(f"{self.where}: unreadable {response.status_code} reply: {text}")
            error.status = response.status_code
            raise self._logged(error) from None

    def _logged(self, exc: LLMError) -> LLMError:
        logger.warning(
            "%s failed after %d attempt(s): %s: %s",
            self.where,
            self.attempts,
            type(exc).__name__,
            exc.message,
            extra={"route": self.core.route.name, "status": exc.status, "call_id": exc.call_id},
        )
        return exc


def _render(
    core: Core,
    model: str,
    events: LogLike,
    tools: ToolsLike,
    system: str | None,
    options: RequestOptions | None,
) -> tuple[bytes, int]:
    from nisse_llm.wire.models_info import body_output_ceiling

    parts = core.renderer.render_parts(
        events,
        tools,
        model,
        system,
        max_tokens=core.max_tokens,
        cache=core.prompt_cache,
        options=options,
    )
    rendered = b"".join(parts)
    # The ceiling the body sends: the options' over the client's, as the call would send it.
    return rendered, body_output_ceiling(rendered)


def _refusal(call: Call, room: Headroom) -> ContextWindowExceeded:
    needed = room.input_tokens + room.max_output_tokens
    return ContextWindowExceeded(
        f"{call.core.where}: pre-flight: the request needs {needed} tokens "
        f"({room.input_tokens} in, counted by {'the proxy' if room.source == 'proxy' else 'estimate'};"
        f" {room.max_output_tokens} out) and {call.model}'s window is {room.max_input_tokens}"
        " tokens; nothing was sent",
        limit_tokens=room.max_input_tokens,
        requested_tokens=needed,
    )


class ClientLimits:
    """`model_info`, `headroom` and the pre-flight check for the sync clients."""

    _core: Core
    _http: httpx.Client
    _sleep: Callable[[float], object]

    def _exchange(self, request: SideRequest) -> httpx.Response:
        while True:
            with request.sending():
                response = self._http.request(
                    request.method, request.url, content=request.body, headers=request.headers
                )
            wait = request.received(response)
            if wait is None:
                return response
            self._sleep(wait)

    def _model_infos(self) -> dict[str, ModelInfo]:
        from nisse_llm.wire.models_info import read_model_infos

        core = self._core
        if core.model_infos is None:
            request = SideRequest(core, "GET", MODEL_INFO_PATH)
            try:
                response = self._exchange(request)
            except LLMError as exc:
                if exc.status not in _ABSENT:
                    raise
                core.model_infos = {}
            else:
                core.model_infos = request.parse(response, read_model_infos)
        return core.model_infos

    def model_info(self, model: str) -> ModelInfo | None:
        """What the proxy reports for ``model`` (limits, prices, capabilities), or None
        when it lists no such model. Read once per client (``GET /v1/model/info``)."""
        return self._model_infos().get(model)

    def served_models(self) -> list[str]:
        """The model names the proxy serves now (``GET /v1/models``; read afresh each time)."""
        from nisse_llm.wire.models_info import read_model_ids

        request = SideRequest(self._core, "GET", MODELS_PATH)
        return request.parse(self._exchange(request), read_model_ids)

    def _count(self, model: str, rendered: bytes) -> tuple[int, Source]:
        from nisse_llm.wire.models_info import (
            estimate_input_tokens,
            read_token_count,
            token_count_request,
        )

        request = SideRequest(
            self._core, "POST", TOKEN_COUNTER_PATH, token_count_request(rendered, model)
        )
        try:
            response = self._exchange(request)
        except LLMError as exc:
            if exc.status not in _ABSENT:
                raise
            return estimate_input_tokens(rendered), "estimate"
        return request.parse(response, read_token_count), "proxy"

    def headroom(
        self,
        model: str,
        events: LogLike,
        tools: ToolsLike,
        system: str | None = None,
        options: RequestOptions | None = None,
    ) -> Headroom:
        """How much of ``model``'s window the request would leave (see `Headroom`)."""
        from nisse_llm.wire.models_info import headroom_of

        rendered, ceiling = _render(self._core, model, events, tools, system, options)
        info = self.model_info(model)
        tokens, source = self._count(model, rendered)
        return headroom_of(tokens, ceiling, info, source=source)

    def _preflight(self, call: Call) -> None:
        from nisse_llm.wire.models_info import body_output_ceiling, headroom_of

        try:
            info = self.model_info(call.model)
            if info is None or info.max_input_tokens is None:
                return  # no window known: nothing to check against
            body = call.body
            tokens, source = self._count(call.model, body)
        except LLMError as exc:
            call.fail(exc)
        room = headroom_of(tokens, body_output_ceiling(body), info, source=source)
        if not room.fits:
            call.fail(_refusal(call, room))

    def _stream_opened(self, call: Call) -> None:
        # A LiteLLM proxy's stream carries no cost header: read the model's prices now so
        # the cost can be computed when the stream ends.
        if call.info is None or call.info.call_id is None or self._core.model_infos is not None:
            return
        try:
            self._model_infos()
        except LLMError as exc:
            logger.debug("no prices for the streamed cost of %s: %s", call.model, exc)


class AsyncClientLimits:
    """`ClientLimits` for the async clients: ``await model_info(...)``, ``await headroom(...)``."""

    _core: Core
    _http: httpx.AsyncClient
    _sleep: Callable[[float], Awaitable[object]]

    async def _exchange(self, request: SideRequest) -> httpx.Response:
        while True:
            with request.sending():
                response = await self._http.request(
                    request.method, request.url, content=request.body, headers=request.headers
                )
            wait = request.received(response)
            if wait is None:
                return response
            await self._sleep(wait)

    async def _model_infos(self) -> dict[str, ModelInfo]:
        from nisse_llm.wire.models_info import read_model_infos

        core = self._core
        if core.model_infos is None:
            request = SideRequest(core, "GET", MODEL_INFO_PATH)
            try:
                response = await self._exchange(request)
            except LLMError as exc:
                if exc.status not in _ABSENT:
                    raise
                core.model_infos = {}
            else:
                core.model_infos = request.parse(response, read_model_infos)
        return core.model_infos

    async def model_info(self, model: str) -> ModelInfo | None:
        """What the proxy reports for ``model``, or None (see `ClientLimits.model_info`)."""
        return (await self._model_infos()).get(model)

    async def served_models(self) -> list[str]:
        """The model names the proxy serves now (see `ClientLimits.served_models`)."""
        from nisse_llm.wire.models_info import read_model_ids

        request = SideRequest(self._core, "GET", MODELS_PATH)
        return request.parse(await self._exchange(request), read_model_ids)

    async def _count(self, model: str, rendered: bytes) -> tuple[int, Source]:
        from nisse_llm.wire.models_info import (
            estimate_input_tokens,
            read_token_count,
            token_count_request,
        )

        request = SideRequest(
            self._core, "POST", TOKEN_COUNTER_PATH, token_count_request(rendered, model)
        )
        try:
            response = await self._exchange(request)
        except LLMError as exc:
            if exc.status not in _ABSENT:
                raise
            return estimate_input_tokens(rendered), "estimate"
        return request.parse(response, read_token_count), "proxy"

    async def headroom(
        self,
        model: str,
        events: LogLike,
        tools: ToolsLike,
        system: str | None = None,
        options: RequestOptions | None = None,
    ) -> Headroom:
        """How much of ``model``'s window the request would leave (see `Headroom`)."""
        from nisse_llm.wire.models_info import headroom_of

        rendered, ceiling = _render(self._core, model, events, tools, system, options)
        info = await self.model_info(model)
        tokens, source = await self._count(model, rendered)
        return headroom_of(tokens, ceiling, info, source=source)

    async def _preflight(self, call: Call) -> None:
        from nisse_llm.wire.models_info import body_output_ceiling, headroom_of

        try:
            info = await self.model_info(call.model)
            if info is None or info.max_input_tokens is None:
                return
            body = call.body
            tokens, source = await self._count(call.model, body)
        except LLMError as exc:
            call.fail(exc)
        room = headroom_of(tokens, body_output_ceiling(body), info, source=source)
        if not room.fits:
            call.fail(_refusal(call, room))

    async def _stream_opened(self, call: Call) -> None:
        if call.info is None or call.info.call_id is None or self._core.model_infos is not None:
            return
        try:
            await self._model_infos()
        except LLMError as exc:
            logger.debug("no prices for the streamed cost of %s: %s", call.model, exc)


class _Resolves(Protocol):
    def _resolve(self, role: str) -> tuple[str, Any]: ...

    def _call(self, role: str, options: RequestOptions | None) -> tuple[str, Any, Any]: ...


class RouterLimits:
    """`model_info` and `headroom` by role, for `RoleRouter`."""

    def model_info(self: _Resolves, role: str) -> ModelInfo | None:
        """What the proxy reports for ``role``'s pinned model, or None if it lists none."""
        model, client = self._resolve(role)
        info: ModelInfo | None = client.model_info(model)
        return info

    def headroom(
        self: _Resolves,
        role: str,
        events: LogLike,
        tools: ToolsLike,
        system: str | None = None,
        options: RequestOptions | None = None,
    ) -> Headroom:
        """How much of ``role``'s model's window this request would leave, counted before
        sending (by the proxy's token counter; locally where it has none); ``options`` over
        the role's profile, as the call would send them."""
        model, client, merged = self._call(role, options)
        room: Headroom = client.headroom(model, events, tools, system, merged)
        return room


class AsyncRouterLimits:
    """`RouterLimits` for `AsyncRoleRouter`."""

    async def model_info(self: _Resolves, role: str) -> ModelInfo | None:
        """What the proxy reports for ``role``'s pinned model, or None if it lists none."""
        model, client = self._resolve(role)
        info: ModelInfo | None = await client.model_info(model)
        return info

    async def headroom(
        self: _Resolves,
        role: str,
        events: LogLike,
        tools: ToolsLike,
        system: str | None = None,
        options: RequestOptions | None = None,
    ) -> Headroom:
        """How much of ``role``'s model's window this request would leave."""
        model, client, merged = self._call(role, options)
        room: Headroom = await client.headroom(model, events, tools, system, merged)
        return room
