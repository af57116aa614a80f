"""A role profile's ``route``: from the file, the environment and arguments, pinned in the
record and covered by its fingerprint, and honoured by the routers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nisse_llm import AsyncRoleRouter, OpenAIResponsesClient, RoleRouter, UserText
from nisse_llm.config.settings import ENV_VARS, Pin, RoleMap, load_settings
from nisse_llm.errors import ConfigError
from nisse_llm.testing import Script, ScriptedTransport, reply
from tests.config.helpers import COMPLETE, TOKEN, write_config


def _document(**roles: Any) -> dict[str, Any]:
    return {"llm": dict(COMPLETE["llm"]), "roles": {**COMPLETE["roles"], **roles}}


@pytest.mark.parametrize("role", RoleMap.ROLES)
def test_each_role_has_a_route_variable(role: str) -> None:
    """``NISSE_ROLE_<ROLE>_ROUTE`` names the route of each role."""
    assert ENV_VARS[f"roles.{role}.route"] == f"NISSE_ROLE_{role.upper()}_ROUTE"


def test_the_route_comes_from_file_environment_and_argument_in_that_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The argument beats the environment, which beats the file; without one the model's
    own route holds."""
    table = {"model": "gpt-6-astra", "route": "openai_responses"}
    path = write_config(tmp_path / "nisse-llm.toml", _document(executor=table))
    monkeypatch.delenv("NISSE_ROLE_EXECUTOR_ROUTE", raising=False)
    assert load_settings(path).pin().route("executor") == "openai_responses"
    monkeypatch.setenv("NISSE_ROLE_EXECUTOR_ROUTE", "openai_chat")
    assert load_settings(path).pin().route("executor") == "openai_chat"
    pin = load_settings(path, roles={"executor": {"route": "openai_responses"}}).pin()
    assert pin.route("executor") == "openai_responses"
    assert pin.options_for("executor") is None  # the route is no request option
    assert pin.route("planner") == "openai_chat"


def test_an_unknown_route_is_a_config_error(tmp_path: Path) -> None:
    """A route the table does not hold is refused at load time, naming the key and the
    routes it could have named."""
    table = {"model": "gpt-6-astra", "route": "responses"}
    path = write_config(tmp_path / "nisse-llm.toml", _document(executor=table))
    known = "the routes are openai_chat, anthropic_messages, openai_responses"
    with pytest.raises(ConfigError, match=rf"roles\.executor\.route.*'responses'.*{known}"):
        load_settings(path)


def test_the_route_is_pinned_and_fingerprinted(tmp_path: Path) -> None:
    """The record holds the role's route; restoring keeps it, and editing it breaks the
    fingerprint."""
    table = {"model": "gpt-6-astra", "route": "openai_responses"}
    path = write_config(tmp_path / "nisse-llm.toml", _document(executor=table))
    pin = load_settings(path).pin()
    record = pin.record()
    assert record["roles"]["executor"]["route"] == "openai_responses"
    plain = load_settings(path, roles={"executor": {"route": "openai_chat"}}).pin()
    assert plain.fingerprint != pin.fingerprint
    restored = Pin.from_record(record, TOKEN, base_url=pin.base_url)
    assert restored.route("executor") == "openai_responses"
    assert restored.record() == record
    edited = {**record, "roles": {**record["roles"]}}
    edited["roles"]["executor"] = {**record["roles"]["executor"], "route": "openai_chat"}
    with pytest.raises(ConfigError, match="fingerprint"):
        Pin.from_record(edited, TOKEN, base_url=pin.base_url)


def _pin(tmp_path: Path) -> Pin:
    table = {"model": "gpt-6-astra", "route": "openai_responses", "reasoning": "high"}
    return load_settings(write_config(tmp_path / "nisse-llm.toml", _document(executor=table))).pin()


def test_the_router_sends_a_role_down_its_pinned_route(tmp_path: Path) -> None:
    """A role pinned to the Responses route is completed by an `OpenAIResponsesClient`
    posting to ``/v1/responses`` with the role's reasoning."""
    script = Script().responses(reply("done"))
    with RoleRouter.from_pin(_pin(tmp_path), transport=ScriptedTransport(script)) as router:
        assert isinstance(router.client_for("executor"), OpenAIResponsesClient)
        events = router.complete("executor", [UserText(text="go")], [])
    (request,) = script.requests
    assert request.path == "/v1/responses"
    assert request.json["reasoning"] == {"effort": "high", "summary": "auto"}
    assert events[0].text == "done"  # type: ignore[union-attr]


async def test_the_async_router_sends_a_role_down_its_pinned_route(tmp_path: Path) -> None:
    """The async router does the same through `AsyncOpenAIResponsesClient`."""
    script = Script().responses(reply("done"))
    router = AsyncRoleRouter.from_pin(_pin(tmp_path), transport=ScriptedTransport(script))
    try:
        events = await router.complete("executor", [UserText(text="go")], [])
    finally:
        await router.aclose()
    assert script.requests[0].path == "/v1/responses"
    assert events[0].text == "done"  # type: ignore[union-attr]
