"""Model limits on the clients and routers, written once: ``_async/headroom.py`` is the
source, ``_sync/headroom.py`` is generated from it by ``scripts/gen_sync.py`` (unasync).

The requests themselves (`SideRequest`) and what is read from them are in
`nisse_llm.transport._headroom`; the mixins here send them and sleep between attempts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nisse_llm.errors import LLMError
from nisse_llm.events.canonical import LogLike, ToolsLike
from nisse_llm.render.call import CallParams
from nisse_llm.transport._async import io
from nisse_llm.transport._headroom import (
    ABSENT,
    MODEL_INFO_PATH,
    MODELS_PATH,
    TOKEN_COUNTER_PATH,
    Resolves,
    SideRequest,
    Source,
    preflight_refusal,
    render_request,
)
from nisse_llm.transport.core import Call, ClientState, logger

# The model-info readers load with the first side request: a plain call never needs them.
if TYPE_CHECKING:
    import httpx

    from nisse_llm.config.options import RequestOptions
    from nisse_llm.wire.models_info import Headroom, ModelInfo

__all__ = ["AsyncClientLimits", "AsyncRouterLimits"]


class AsyncClientLimits:
    """`model_info`, `headroom` and the pre-flight check for the clients."""

    _core: ClientState
    _http: httpx.AsyncClient
    _sleep: io.Sleep

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
                if exc.status not in ABSENT:
                    raise
                core.model_infos = {}
            else:
                core.model_infos = request.parse(response, read_model_infos)
        return core.model_infos

    async def model_info(self, model: str) -> ModelInfo | None:
        """What the proxy reports for ``model`` (limits, prices, capabilities), or None
        when it lists no such model. Read once per client (``GET /v1/model/info``)."""
        return (await self._model_infos()).get(model)

    async def served_models(self) -> list[str]:
        """The model names the proxy serves now (``GET /v1/models``; read afresh each time)."""
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
            if exc.status not in ABSENT:
                raise
            return estimate_input_tokens(rendered), "estimate"
        return request.parse(response, read_token_count), "proxy"

    async def count_tokens(
        self,
        model: str,
        events: LogLike,
        tools: ToolsLike,
        system: str | None = None,
        options: RequestOptions | None = None,
    ) -> int:
        """The input tokens the request would send to ``model``: the proxy's count, or the
        local estimate where the proxy has no counter."""
        return await self.count_tokens_call(self._asked(events, tools, model, system, options))

    async def count_tokens_call(self, params: CallParams) -> int:
        """``count_tokens()`` of a call's parameters built once (``call_params``)."""
        rendered = render_request(self._core, params)[0]
        return (await self._count(params.model, rendered))[0]

    async def headroom(
        self,
        model: str,
        events: LogLike,
        tools: ToolsLike,
        system: str | None = None,
        options: RequestOptions | None = None,
    ) -> Headroom:
        """How much of ``model``'s window the request would leave (see `Headroom`)."""
        return await self.headroom_call(self._asked(events, tools, model, system, options))

    async def headroom_call(self, params: CallParams) -> Headroom:
        """``headroom()`` of a call's parameters built once (``call_params``)."""
        from nisse_llm.wire.models_info import headroom_of

        rendered, ceiling = render_request(self._core, params)
        info = await self.model_info(params.model)
        tokens, source = await self._count(params.model, rendered)
        return headroom_of(tokens, ceiling, info, source=source)

    def _asked(
        self,
        events: LogLike,
        tools: ToolsLike,
        model: str,
        system: str | None,
        options: RequestOptions | None,
    ) -> CallParams:
        """The call ``count_tokens`` and ``headroom`` are asked about, on this client."""
        return self._core.params(CallParams(events, tools, model, system, options=options))

    async def _preflight(self, call: Call) -> None:
        from nisse_llm.wire.models_info import body_output_ceiling, headroom_of

        try:
            info = await self.model_info(call.model)
            if info is None or info.max_input_tokens is None:
                return  # no window known: nothing to check against
            body = call.body
            tokens, source = await self._count(call.model, body)
        except LLMError as exc:
            call.fail(exc)
        room = headroom_of(tokens, body_output_ceiling(body), info, source=source)
        if not room.fits:
            call.fail(preflight_refusal(call, room))

    async def _stream_opened(self, call: Call) -> None:
        # A LiteLLM proxy's stream carries no cost header: read the model's prices now so
        # the cost can be computed when the stream ends.
        if call.info is None or call.info.call_id is None or self._core.model_infos is not None:
            return
        try:
            await self._model_infos()
        except LLMError as exc:
            logger.debug("no prices for the streamed cost of %s: %s", call.model, exc)


class AsyncRouterLimits:
    """`model_info` and `headroom` by role, for the routers."""

    async def model_info(self: Resolves, role: str) -> ModelInfo | None:
        """What the proxy reports for ``role``'s pinned model, or None if it lists none."""
        model, client = self._resolve(role)
        info: ModelInfo | None = await client.model_info(model)
        return info

    async def headroom(
        self: Resolves,
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
        room: Headroom = await client.headroom(model, events, tools, system, merged)
        return room
