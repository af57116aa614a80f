"""A token the real proxy refuses is `AuthenticationFailed` on every route: a wrong or
expired token (401) and a token without access to the model (403), never retried, the
token redacted, the message naming NISSE_LLM_TOKEN and where the token came from."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from nisse_llm import (
    AnthropicPassthroughClient,
    AssistantText,
    AsyncRoleRouter,
    AuthenticationFailed,
    LiteLLMClient,
    OpenAIResponsesClient,
    Pin,
    RoleRouter,
    UserText,
    load_settings,
)
from nisse_llm.config.routing import Route
from nisse_llm.testing import Script, ScriptedServer, reply
from nisse_llm.testing.proxy import LiteLLMProxy, ProxyModel
from nisse_llm.transport.clients import SyncRouteClient
from tests.integration.helpers import REQUEST_TIMEOUT_S, fresh_script

pytestmark = pytest.mark.proxy

HELLO = [UserText(text="Say hello.")]
# Echoed back by the proxy's refusal (as LiteLLM's own auth errors do): must be redacted.
WRONG = "sk-wrong-" + "5e1d7b" * 4
# Accepted by the proxy, for gpt-allowed only.
LIMITED = "sk-limited-" + "9c04a2" * 4
CLIENTS: dict[Route, type[SyncRouteClient]] = {
    "openai_chat": LiteLLMClient,
    "anthropic_messages": AnthropicPassthroughClient,
    "openai_responses": OpenAIResponsesClient,
}
PATHS: dict[Route, str] = {
    "openai_chat": "/chat/completions",
    "anthropic_messages": "/v1/messages",
    "openai_responses": "/v1/responses",
}
# The model each route is asked for that the limited token may not use.
FORBIDDEN: dict[Route, str] = {
    "openai_chat": "gpt-other",
    "anthropic_messages": "claude-other",
    "openai_responses": "gpt-other",
}


@pytest.fixture(scope="module")
def auth_proxy(litellm_bin: Path, upstream: ScriptedServer) -> Iterator[LiteLLMProxy]:
    """A proxy with one more token, limited to gpt-allowed (LiteLLM's model access check)."""
    models = [
        ProxyModel("gpt-allowed", "openai"),
        ProxyModel("gpt-other", "openai"),
        ProxyModel("claude-other", "anthropic"),
    ]
    with LiteLLMProxy(
        upstream.base_url,
        models=models,
        executable=litellm_bin,
        request_timeout_s=REQUEST_TIMEOUT_S,
        limited_tokens={LIMITED: ["gpt-allowed"]},
    ) as running:
        yield running


@pytest.fixture
def auth_script(upstream: ScriptedServer, auth_proxy: LiteLLMProxy) -> Iterator[Script]:
    """The upstream's script, empty: a refused request must never reach it."""
    with fresh_script(upstream) as script:
        yield script


def _refused(
    proxy: LiteLLMProxy, route: Route, token: str, model: str
) -> tuple[AuthenticationFailed, list[float]]:
    sleeps: list[float] = []
    client = CLIENTS[route](proxy.base_url, token, sleep=sleeps.append)
    with client, pytest.raises(AuthenticationFailed) as caught:
        client.complete(HELLO, None, model)
    return caught.value, sleeps


@pytest.mark.parametrize("route", list(CLIENTS))
def test_a_wrong_token_is_authentication_failed_401(
    auth_proxy: LiteLLMProxy, auth_script: Script, route: Route
) -> None:
    """A token the proxy does not know is a 401 `AuthenticationFailed`, sent once, the token
    redacted everywhere it rides."""
    error, sleeps = _refused(auth_proxy, route, WRONG, FORBIDDEN[route])
    assert error.status == 401
    assert str(error).startswith(
        f"POST {auth_proxy.base_url}{PATHS[route]}: the proxy refused the token (401): "
    )
    assert str(error).endswith(
        "; check NISSE_LLM_TOKEN or llm.token (this one came from the token passed to the client)"
    )
    assert "invalid proxy token" in (error.server_message or "")
    assert WRONG not in str(error)
    assert WRONG not in (error.server_message or "")
    assert WRONG not in repr(error.args)
    assert sleeps == []
    assert auth_script.requests == []


@pytest.mark.parametrize("route", list(CLIENTS))
def test_a_token_without_access_to_the_model_is_authentication_failed_403(
    auth_proxy: LiteLLMProxy, auth_script: Script, route: Route
) -> None:
    """A token the proxy accepts but not for this model is LiteLLM's 403
    key_model_access_denied: `AuthenticationFailed`, never retried, nothing sent upstream."""
    error, sleeps = _refused(auth_proxy, route, LIMITED, FORBIDDEN[route])
    assert error.status == 403
    assert error.error_type == "key_model_access_denied"
    assert f"'{FORBIDDEN[route]}' is not available for this API key" in str(error)
    assert "check NISSE_LLM_TOKEN or llm.token" in str(error)
    assert LIMITED not in str(error)
    assert sleeps == []
    assert auth_script.requests == []


@pytest.mark.parametrize("route", list(CLIENTS))
def test_a_stream_refused_for_its_token_is_authentication_failed_too(
    auth_proxy: LiteLLMProxy, auth_script: Script, route: Route
) -> None:
    """Opening a stream with a token the model is not allowed for raises the same 403
    `AuthenticationFailed`, before any delta."""
    client = CLIENTS[route](auth_proxy.base_url, LIMITED)
    with (
        client,
        pytest.raises(AuthenticationFailed) as caught,
        client.stream(HELLO, None, FORBIDDEN[route]) as stream,
    ):
        list(stream)
    assert caught.value.status == 403
    assert auth_script.requests == []


def test_the_limited_token_still_reaches_its_own_model(
    auth_proxy: LiteLLMProxy, auth_script: Script
) -> None:
    """The 403 is about the model, not the token: the same token's own model answers."""
    auth_script.add("openai_chat", reply("hello"))
    with LiteLLMClient(auth_proxy.base_url, LIMITED) as client:
        events = client.complete(HELLO, None, "gpt-allowed")
    assert [e.text for e in events if isinstance(e, AssistantText)] == ["hello"]
    assert len(auth_script.requests) == 1


def _pin_with_env_token(proxy: LiteLLMProxy, monkeypatch: pytest.MonkeyPatch, token: str) -> Pin:
    monkeypatch.setenv("NISSE_LLM_TOKEN", token)
    roles = dict.fromkeys(("executor", "planner", "delegate", "consultant"), "gpt-other")
    return load_settings(llm={"base_url": proxy.base_url}, roles=roles).pin()


def test_a_router_names_the_variable_the_refused_token_came_from(
    auth_proxy: LiteLLMProxy, auth_script: Script, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through a router built from the settings, the 403 says the token came from the
    environment's NISSE_LLM_TOKEN."""
    pin = _pin_with_env_token(auth_proxy, monkeypatch, LIMITED)
    with RoleRouter.from_pin(pin) as llm, pytest.raises(AuthenticationFailed) as caught:
        llm.complete("executor", HELLO, None)
    assert caught.value.status == 403
    assert str(caught.value).endswith("(this one came from env NISSE_LLM_TOKEN)")
    assert auth_script.requests == []


async def test_an_async_router_raises_it_too(
    auth_proxy: LiteLLMProxy, auth_script: Script, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The async router classifies the proxy's 401 the same way."""
    pin = _pin_with_env_token(auth_proxy, monkeypatch, WRONG)
    async with AsyncRoleRouter.from_pin(pin) as llm:
        with pytest.raises(AuthenticationFailed) as caught:
            await llm.complete("planner", HELLO, None)
    assert caught.value.status == 401
    assert WRONG not in str(caught.value)
    assert auth_script.requests == []
