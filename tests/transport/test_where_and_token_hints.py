"""Errors point at the place: every transport failure names the full URL it tried (never
credentials), and a refused token names the variable, the key and where the token came from."""

from __future__ import annotations

import socket

import pytest

from nisse_llm.config.routing import Route
from nisse_llm.config.settings import load_settings
from nisse_llm.errors import AuthenticationFailed, LLMError, UpstreamUnavailable
from nisse_llm.transport.clients import AnthropicPassthroughClient, LiteLLMClient
from tests.transport.harness import (
    EVENTS,
    MODEL,
    MODES,
    ROUTES,
    TOKEN,
    Mode,
    close,
    complete,
    make_client,
)
from tests.transport.loopback import LoopbackServer, Reply, SleepLog, error_body

PATHS: dict[Route, str] = {
    "openai_chat": "/chat/completions",
    "anthropic_messages": "/v1/messages",
    "openai_responses": "/v1/responses",
}


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("route", ROUTES)
async def test_connection_refused_names_the_full_url(route: Route, mode: Mode) -> None:
    """ "Connection refused" says where: scheme, host, port and path."""
    port = _closed_port()
    client = make_client(route, mode, f"http://127.0.0.1:{port}", sleep=SleepLog())
    try:
        with pytest.raises(UpstreamUnavailable) as caught:
            await complete(client, EVENTS, None, MODEL[route])
    finally:
        await close(client)
    assert str(caught.value).startswith(f"POST http://127.0.0.1:{port}{PATHS[route]}: ")
    assert TOKEN not in str(caught.value)


def test_the_default_port_is_named_too() -> None:
    """An https URL without a port names 443 (the one tried), and a mount prefix stays."""
    client = LiteLLMClient("https://gw.invalid/litellm", TOKEN)
    try:
        with pytest.raises(UpstreamUnavailable) as caught:
            client.complete(EVENTS, None, "gpt-x")
    finally:
        client.close()
    assert str(caught.value).startswith("POST https://gw.invalid:443/litellm/chat/completions: ")


REFUSALS = {
    "401": Reply(
        401, error_body("Authentication Error, Invalid proxy server token passed.", code="401")
    ),
    "403": Reply(403, error_body("Forbidden", code="403")),
    "no-db-400": Reply(400, error_body("No connected db.", type_="no_db_connection", code="400")),
}


@pytest.mark.parametrize("refusal", sorted(REFUSALS))
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("route", ROUTES)
async def test_a_refused_token_hints_at_the_token_and_its_source(
    server: LoopbackServer, route: Route, mode: Mode, refusal: str
) -> None:
    """401, 403 and LiteLLM's no-database 400 for a wrong key are `AuthenticationFailed`:
    the hint names the variable, the key, and (for a client built directly) that the token
    was passed to it."""
    server.plan(REFUSALS[refusal])
    client = make_client(route, mode, server.base_url, sleep=SleepLog())
    try:
        with pytest.raises(LLMError) as caught:
            await complete(client, EVENTS, None, MODEL[route])
    finally:
        await close(client)
    error = caught.value
    assert type(error) is AuthenticationFailed
    assert error.status == REFUSALS[refusal].status
    assert f"the proxy refused the token ({error.status})" in str(error)
    assert str(error).endswith(
        "; check NISSE_LLM_TOKEN or llm.token (this one came from the token passed to the client)"
    )
    assert TOKEN not in str(error)


@pytest.mark.parametrize(
    ("layer", "expected"),
    [("env", "env NISSE_LLM_TOKEN"), ("argument", "argument llm=")],
)
def test_a_client_from_a_pin_names_the_tokens_source(
    server: LoopbackServer, monkeypatch: pytest.MonkeyPatch, layer: str, expected: str
) -> None:
    """Built from a pin, the hint names the setting's source: the variable or the argument."""
    llm = {"base_url": server.base_url}
    if layer == "env":
        monkeypatch.setenv("NISSE_LLM_TOKEN", TOKEN)
    else:
        llm["token"] = TOKEN
    roles = dict.fromkeys(("executor", "planner", "delegate", "consultant"), "gpt-x")
    pin = load_settings(llm=llm, roles=roles).pin()
    server.plan(REFUSALS["401"])
    with LiteLLMClient.from_pin(pin) as client, pytest.raises(LLMError) as caught:
        client.complete(EVENTS, None, "gpt-x")
    assert str(caught.value).endswith(f"(this one came from {expected})")


def test_another_400_gets_no_token_hint(server: LoopbackServer) -> None:
    """An ordinary bad request says nothing about the token."""
    server.plan(Reply(400, error_body("messages: field required", code="400")))
    with (
        AnthropicPassthroughClient(server.base_url, TOKEN) as client,
        pytest.raises(LLMError) as caught,
    ):
        client.complete(EVENTS, None, "claude-x")
    assert "token" not in str(caught.value)
