"""What each route puts on the wire: path, headers, the renderer's exact bytes; and what it keeps secret."""

from __future__ import annotations

import traceback

import httpx
import pytest
from pydantic import SecretStr

from nisse_llm.config.routing import Route
from nisse_llm.errors import LLMError, UpstreamUnavailable
from nisse_llm.events.canonical import DEFAULT_MAX_OUTPUT_TOKENS, AssistantText, UserText
from nisse_llm.render._cache import PromptCache
from nisse_llm.render.anthropic_messages import AnthropicMessagesRenderer
from nisse_llm.render.openai_chat import OpenAIChatRenderer
from nisse_llm.render.openai_responses import OpenAIResponsesRenderer
from nisse_llm.transport.clients import (
    AnthropicPassthroughClient,
    AsyncAnthropicPassthroughClient,
    AsyncLiteLLMClient,
    LiteLLMClient,
)
from nisse_llm.transport.responses_client import AsyncOpenAIResponsesClient, OpenAIResponsesClient
from tests.corpus import TOOLS, long_log
from tests.transport.harness import (
    MODEL,
    MODES,
    ROUTES,
    TOKEN,
    Mode,
    assert_no_token,
    close,
    complete,
    make_client,
)
from tests.transport.loopback import LoopbackServer, Reply, SleepLog

RENDERERS = {
    "openai_chat": OpenAIChatRenderer,
    "anthropic_messages": AnthropicMessagesRenderer,
    "openai_responses": OpenAIResponsesRenderer,
}
PATHS = {
    "openai_chat": "/chat/completions",
    "anthropic_messages": "/v1/messages",
    "openai_responses": "/v1/responses",
}
LOG = [*long_log(3), UserText(text="Now summarise what changed.")]
SYSTEM = "You are a careful refactoring agent."


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("route", ROUTES)
async def test_request_on_the_wire(route: Route, mode: Mode, server: LoopbackServer) -> None:
    """Each route posts to its path with its auth headers; the body is the renderer's bytes (caching on by default)."""
    client = make_client(route, mode, server.base_url + "/", sleep=SleepLog(), max_tokens=2048)
    try:
        events = await complete(client, LOG, TOOLS, MODEL[route], system=SYSTEM)
    finally:
        await close(client)
    (seen,) = server.requests
    expected_body = RENDERERS[route]().render_bytes(
        LOG, TOOLS, MODEL[route], SYSTEM, max_tokens=2048, cache=PromptCache()
    )
    assert seen.body == expected_body
    assert seen.headers["authorization"] == f"Bearer {TOKEN}"
    assert seen.headers["content-type"] == "application/json"
    if route != "anthropic_messages":
        assert seen.path == PATHS[route]
        assert "x-api-key" not in seen.headers
        assert "anthropic-version" not in seen.headers
    else:
        assert seen.path == "/v1/messages"
        assert seen.headers["x-api-key"] == TOKEN
        assert seen.headers["anthropic-version"] == "2023-06-01"
    assert events == [AssistantText(text="echo: Now summarise what changed.", model=MODEL[route])]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("route", ROUTES)
async def test_headers_and_cookies_are_an_httpx_clients(
    route: Route, mode: Mode, server: LoopbackServer
) -> None:
    """Each attempt goes straight through the client's transport, yet carries what httpx's
    client would send (its default headers under the route's) and keeps the cookies a
    proxy or its load balancer sets, sending them back with the next calls."""
    server.plan(Reply(headers=(("set-cookie", "lb=node-2; Path=/"),)))
    client = make_client(route, mode, server.base_url, sleep=SleepLog())
    try:
        for _ in range(3):
            await complete(client, [UserText(text="hi")], None, MODEL[route])
    finally:
        await close(client)
    first, *later = server.requests
    assert "cookie" not in first.headers
    assert [seen.headers.get("cookie") for seen in later] == ["lb=node-2", "lb=node-2"]
    for seen in server.requests:
        assert seen.headers["user-agent"] == f"python-httpx/{httpx.__version__}"
        assert seen.headers["accept-encoding"] == "gzip, deflate"
        assert seen.headers["connection"] == "keep-alive"
        assert seen.headers["content-length"] == str(len(seen.body))


@pytest.mark.parametrize("route", ROUTES)
def test_base_url_path_prefix_is_kept(route: Route, server: LoopbackServer) -> None:
    """A base URL with a path (a proxy mounted under /litellm) keeps it before the route."""
    client = make_client(route, "sync", server.base_url + "/litellm/", sleep=SleepLog())
    with client:
        client.complete([UserText(text="hi")], None, MODEL[route])
    assert server.requests[0].path == "/litellm" + PATHS[route]


@pytest.mark.parametrize("route", ROUTES)
def test_default_ceiling_is_always_sent(route: Route, server: LoopbackServer) -> None:
    """Without a configured ceiling the default output ceiling goes on the wire, on both routes."""
    with make_client(route, "sync", server.base_url, sleep=SleepLog()) as client:
        client.complete([UserText(text="hi")], None, MODEL[route])
    body = server.requests[0].json()
    ceiling = body.get("max_tokens", body.get("max_completion_tokens"))
    assert body.get("max_output_tokens", ceiling) == DEFAULT_MAX_OUTPUT_TOKENS


@pytest.mark.parametrize(
    "cls",
    [
        LiteLLMClient,
        AnthropicPassthroughClient,
        AsyncLiteLLMClient,
        AsyncAnthropicPassthroughClient,
        OpenAIResponsesClient,
        AsyncOpenAIResponsesClient,
    ],
)
async def test_token_never_in_repr(cls: type[LiteLLMClient]) -> None:
    """A client's repr names its endpoint and timeout, never the token, given as str or SecretStr."""
    for token in (TOKEN, SecretStr(TOKEN)):
        client = cls("http://127.0.0.1:9", token)
        try:
            text = repr(client)
            assert TOKEN not in text
            assert text.startswith(f"{cls.__name__}(url='http://127.0.0.1:9/")
            assert TOKEN not in repr(vars(client))
        finally:
            await close(client)


@pytest.mark.parametrize("route", ROUTES)
def test_secretstr_token_is_sent(route: Route, server: LoopbackServer) -> None:
    """A token given as a SecretStr is unwrapped for the Authorization header."""
    cls = LiteLLMClient if route == "openai_chat" else AnthropicPassthroughClient
    with cls(server.base_url, SecretStr(TOKEN)) as client:
        client.complete([UserText(text="hi")], None, MODEL[route])
    assert server.requests[0].headers["authorization"] == f"Bearer {TOKEN}"


def _httpx_exceptions() -> list[Exception]:
    request = httpx.Request("POST", "http://127.0.0.1:9/chat/completions")
    response = httpx.Response(500, request=request)
    made: list[Exception] = []
    for name in httpx.__all__:
        cls = getattr(httpx, name)
        if not (isinstance(cls, type) and issubclass(cls, Exception)):
            continue
        if issubclass(cls, httpx.HTTPStatusError):
            made.append(cls(f"boom {TOKEN}", request=request, response=response))
        elif issubclass(cls, httpx.RequestError):
            made.append(cls(f"boom {TOKEN}", request=request))
        elif cls in (
            httpx.StreamConsumed,
            httpx.StreamClosed,
            httpx.RequestNotRead,
            httpx.ResponseNotRead,
        ):
            made.append(cls())
        else:
            made.append(cls(f"boom {TOKEN}"))
    return made


HTTPX_EXCEPTIONS = _httpx_exceptions()


@pytest.mark.parametrize("exc", HTTPX_EXCEPTIONS, ids=lambda e: type(e).__name__)
@pytest.mark.parametrize("mode", MODES)
async def test_every_httpx_exception_is_upstream_unavailable(exc: Exception, mode: Mode) -> None:
    """Whatever httpx raises becomes UpstreamUnavailable, chained from it, the token
    redacted in both (the cause's args are cleaned, so a traceback shows no token)."""

    def fail(request: httpx.Request) -> httpx.Response:
        raise exc

    transport = httpx.MockTransport(fail)
    cls = LiteLLMClient if mode == "sync" else AsyncLiteLLMClient
    client = cls("http://127.0.0.1:9", TOKEN, transport=transport)  # type: ignore[arg-type]
    with pytest.raises(UpstreamUnavailable) as caught:
        await complete(client, [UserText(text="hi")], None, "gpt-4o-mini")
    await close(client)
    assert type(caught.value) is UpstreamUnavailable
    assert caught.value.__cause__ is exc
    assert TOKEN not in str(exc)
    assert TOKEN not in "".join(traceback.format_exception(caught.value))
    assert type(exc).__name__ in str(caught.value)
    assert_no_token(caught.value)


def test_all_httpx_exception_roots_are_covered() -> None:
    """The mapping table covers every exception class httpx exports (a new one fails here)."""
    from nisse_llm.transport.core import HTTPX_ERRORS

    exported = {type(e) for e in HTTPX_EXCEPTIONS}
    assert len(exported) > 25
    assert all(issubclass(cls, HTTPX_ERRORS) for cls in exported)


def test_parser_contract_breach_is_still_an_llm_error(
    server: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Should a parser ever raise a bare KeyError on a malformed body, the caller still gets LLMError."""

    def broken(body: bytes, *, requested_model: str) -> None:
        raise KeyError("choices")

    with LiteLLMClient(server.base_url, TOKEN) as client:
        monkeypatch.setattr(client._core.renderer, "parse", broken)
        with pytest.raises(LLMError) as caught:
            client.complete([UserText(text="hi")], None, "gpt-4o-mini")
    assert type(caught.value) is LLMError
    assert caught.value.status == 200
    assert isinstance(caught.value.__cause__, KeyError)
