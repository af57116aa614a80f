"""Choosing the route: by model (`select_client`), by pin (`from_pin`), by role (`RoleRouter`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from nisse_llm.config.settings import Pin, load_settings
from nisse_llm.errors import LLMError, UnknownRoleError, UpstreamUnavailable
from nisse_llm.events.canonical import UserText
from nisse_llm.transport.clients import (
    AnthropicPassthroughClient,
    AsyncLiteLLMClient,
    LiteLLMClient,
    has_native_adapter,
    select_client,
)
from nisse_llm.transport.routers import AsyncRoleRouter, RoleRouter
from tests.config.helpers import write_config
from tests.transport.harness import TOKEN
from tests.transport.loopback import LoopbackServer, Reply, SleepLog, error_body

ROLES = {
    "executor": "gpt-4o-mini",
    "planner": "claude-sonnet-4-5",
    "delegate": "anthropic/claude-opus-4-1",
    "consultant": "openai/gpt-5",
}
EXPECTED_PATH = {
    "executor": "/chat/completions",
    "planner": "/v1/messages",
    "delegate": "/v1/messages",
    "consultant": "/chat/completions",
}


def _pin(tmp_path: Path, server: LoopbackServer, **llm: object) -> tuple[Path, Pin]:
    path = write_config(
        tmp_path / "nisse.toml",
        {"llm": {"base_url": server.base_url, "token": TOKEN, **llm}, "roles": dict(ROLES)},
    )
    return path, load_settings(path).pin()


def test_select_client_by_model_prefix() -> None:
    """Claude and anthropic/ models take the passthrough, others the normalized client;
    the prefixes are configurable."""
    assert select_client("claude-sonnet-4-5", "chat", "messages") == "messages"
    assert select_client("anthropic/claude-opus-4-1", "chat", "messages") == "messages"
    assert select_client("openai/gpt-5", "chat", "messages") == "chat"
    assert (
        select_client("bedrock/claude-x", "chat", "messages", prefixes=("bedrock/",)) == "messages"
    )
    assert select_client("claude-sonnet-4-5", "chat", "messages", prefixes=("bedrock/",)) == "chat"
    assert has_native_adapter("claude-haiku-4-5")
    assert not has_native_adapter("gpt-4o")


def test_roles_go_down_their_models_routes(tmp_path: Path, server: LoopbackServer) -> None:
    """Each role's call carries its pinned model on the route that model takes."""
    _, pin = _pin(tmp_path, server)
    with RoleRouter.from_pin(pin, sleep=SleepLog()) as router:
        for role in ROLES:
            router.complete(role, [UserText(text=f"hello {role}")], None)
    seen = [(r.path, r.json()["model"]) for r in server.requests]
    assert seen == [(EXPECTED_PATH[role], model) for role, model in ROLES.items()]
    assert server.requests[1].headers["x-api-key"] == TOKEN


def test_toml_edit_after_pinning_changes_nothing(tmp_path: Path, server: LoopbackServer) -> None:
    """Editing the TOML after the pin was taken moves no call: the router reads only the pin."""
    path, pin = _pin(tmp_path, server)
    router = RoleRouter.from_pin(pin, sleep=SleepLog())
    write_config(
        path,
        {
            "llm": {"base_url": "http://127.0.0.1:9", "token": "sk-other"},
            "roles": {**ROLES, "planner": "gpt-4o", "executor": "claude-haiku-4-5"},
        },
    )
    assert load_settings(path).pin().model_for("planner") == "gpt-4o"
    with router:
        router.complete("planner", [UserText(text="plan")], None)
        router.complete("executor", [UserText(text="run")], None)
    assert [(r.path, r.json()["model"]) for r in server.requests] == [
        ("/v1/messages", "claude-sonnet-4-5"),
        ("/chat/completions", "gpt-4o-mini"),
    ]


def test_router_holds_one_client_per_route(tmp_path: Path, server: LoopbackServer) -> None:
    """Roles on the same route share one client (one pool); the two routes have one each."""
    _, pin = _pin(tmp_path, server)
    with RoleRouter.from_pin(pin) as router:
        assert router.client_for("executor") is router.client_for("consultant")
        assert router.client_for("planner") is router.client_for("delegate")
        assert isinstance(router.client_for("executor"), LiteLLMClient)
        assert isinstance(router.client_for("planner"), AnthropicPassthroughClient)
        with pytest.raises(UnknownRoleError, match="unknown role 'reviewer'") as caught:
            router.complete("reviewer", [UserText(text="hi")], None)
        assert not isinstance(caught.value, LLMError)
        with pytest.raises(TypeError, match=r"not str \(wrap a prompt as \[UserText"):
            router.complete("executor", "hi", None)  # type: ignore[arg-type]


async def test_async_router_routes_by_role(tmp_path: Path, server: LoopbackServer) -> None:
    """The async router sends each role down its route, like the sync one."""
    _, pin = _pin(tmp_path, server)
    async with AsyncRoleRouter.from_pin(pin, sleep=SleepLog().asleep) as router:
        assert isinstance(router.client_for("consultant"), AsyncLiteLLMClient)
        for role in ROLES:
            await router.complete(role, [UserText(text=f"hello {role}")], None)
    assert [r.path for r in server.requests] == [EXPECTED_PATH[role] for role in ROLES]


def test_from_pin_takes_the_pins_knobs(tmp_path: Path, server: LoopbackServer) -> None:
    """A client from a pin uses its per-route timeout, its ceiling and its retry policy."""
    _, pin = _pin(
        tmp_path,
        server,
        timeout_s=33,
        passthrough_timeout_s=99,
        max_output_tokens=777,
        rate_limit_retries=0,
    )
    sleep = SleepLog()
    chat = LiteLLMClient.from_pin(pin, sleep=sleep)
    messages = AnthropicPassthroughClient.from_pin(pin)
    assert "timeout_s=33" in repr(chat)
    assert "timeout_s=99" in repr(messages)
    server.plan(Reply(429, error_body("slow down", code="429")))
    with chat, messages, pytest.raises(UpstreamUnavailable):
        chat.complete([UserText(text="hi")], None, "gpt-4o-mini")
    assert sleep.waits == []
    assert server.requests[0].json()["max_tokens"] == 777


def test_from_settings_pins_and_builds(tmp_path: Path, server: LoopbackServer) -> None:
    """A client built from settings posts to the configured proxy with the configured token."""
    path, _ = _pin(tmp_path, server, max_output_tokens=123)
    with LiteLLMClient.from_settings(load_settings(path)) as client:
        client.complete([UserText(text="hi")], None, "gpt-4o-mini")
    (seen,) = server.requests
    assert seen.headers["authorization"] == f"Bearer {TOKEN}"
    assert seen.json()["max_tokens"] == 123
