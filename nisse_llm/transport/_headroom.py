"""Model limits on the clients: model info, token counts, headroom, the pre-flight check.

Two proxy endpoints beside the routes: ``GET /v1/model/info`` (read once per client and
kept) and ``POST /utils/token_counter`` (counts locally at the proxy: no database, no
upstream call). A `SideRequest` holds one such request's state as `Call` does for a
completion, classified and retried by the same rules. The mixins that send them (sync
or async) are in `nisse_llm.transport._async.headroom` and its generated sync twin.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol, TypeVar

from nisse_llm import _telemetry
from nisse_llm.errors import ContextWindowExceeded, LLMError, UpstreamUnavailable
from nisse_llm.render import CallParams
from nisse_llm.transport._callinfo import call_info
from nisse_llm.transport._classify import Retry, redact
from nisse_llm.transport.core import (
    HTTPX_ERRORS,
    Call,
    ClientState,
    logger,
    public_url,
    with_token_hint,
)

# The model-info readers load with the first side request: a plain call never needs them.
if TYPE_CHECKING:
    import httpx

    from nisse_llm.config.options import RequestOptions
    from nisse_llm.wire.models_info import Headroom

__all__ = [
    "ABSENT",
    "MODELS_PATH",
    "MODEL_INFO_PATH",
    "TOKEN_COUNTER_PATH",
    "Resolves",
    "SideRequest",
    "Source",
    "preflight_refusal",
    "render_request",
]

MODEL_INFO_PATH: Final = "/v1/model/info"
MODELS_PATH: Final = "/v1/models"
TOKEN_COUNTER_PATH: Final = "/utils/token_counter"
# A server without the endpoint (a plain OpenAI-compatible one): no limits, count locally.
ABSENT: Final = frozenset({404, 405, 501})
Source = Literal["proxy", "estimate"]
T = TypeVar("T")


class SideRequest:
    """One request to a proxy endpoint beside the routes, across its attempts."""

    __slots__ = ("attempts", "body", "core", "headers", "method", "url", "where")

    def __init__(
        self, core: ClientState, method: str, path: str, body: bytes | None = None
    ) -> None:
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
        verdict = core.classify(response, where=self.where, attempts=self.attempts)
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


def render_request(core: ClientState, params: CallParams) -> tuple[bytes, int]:
    """The body ``core``'s client would send for ``params``, and the output ceiling it
    asks (the options' over the client's, as the call would send it)."""
    from nisse_llm.wire.models_info import body_output_ceiling

    parts = core.renderer.render_call(params)
    rendered = b"".join(parts)
    return rendered, body_output_ceiling(rendered)


def preflight_refusal(call: Call, room: Headroom) -> ContextWindowExceeded:
    needed = room.input_tokens + room.max_output_tokens
    return ContextWindowExceeded(
        f"{call.core.where}: pre-flight: the request needs {needed} tokens "
        f"({room.input_tokens} in, counted by {'the proxy' if room.source == 'proxy' else 'estimate'};"
        f" {room.max_output_tokens} out) and {call.model}'s window is {room.max_input_tokens}"
        " tokens; nothing was sent",
        limit_tokens=room.max_input_tokens,
        requested_tokens=needed,
    )


class Resolves(Protocol):
    def _resolve(self, role: str) -> tuple[str, Any]: ...

    def _call(self, role: str, options: RequestOptions | None) -> tuple[str, Any, Any]: ...
