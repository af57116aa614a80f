"""Role routing from a TOML config pinned at task start, through the real proxy."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nisse_llm.config.settings import Pin, load_settings
from nisse_llm.errors import ConfigError
from nisse_llm.events.canonical import AssistantText, CanonicalEvent, ToolCall, ToolResult, UserText
from nisse_llm.testing import Script, ToolUse, reply
from nisse_llm.testing.proxy import LiteLLMProxy
from nisse_llm.transport.routers import RoleRouter
from tests.corpus import RUN_TESTS

pytestmark = pytest.mark.proxy


def _write_config(path: Path, base_url: str, *, planner: str, executor: str) -> None:
    path.write_text(
        f"""
[llm]
base_url = "{base_url}"
max_output_tokens = 2048

[roles]
planner = "{planner}"
executor = "{executor}"
delegate = "claude-alt"
consultant = "gpt-alt"
"""
    )
    path.chmod(0o600)  # owner-only, whatever the umask: others-writable files warn


def test_roles_route_by_the_pin_taken_at_start_whatever_the_file_says_later(
    proxy: LiteLLMProxy, script: Script, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Planner goes down /v1/messages and executor down /chat/completions as pinned, even after the TOML swaps them."""
    config = tmp_path / "nisse.toml"
    _write_config(config, proxy.base_url, planner="claude-scripted", executor="gpt-scripted")
    monkeypatch.setenv("NISSE_LLM_TOKEN", proxy.token)
    pin = load_settings(config).pin()
    record = pin.record()
    assert record["roles"]["planner"] == {"model": "claude-scripted", "route": "anthropic_messages"}
    assert record["roles"]["executor"] == {"model": "gpt-scripted", "route": "openai_chat"}
    assert proxy.token not in json.dumps(record)

    # An operator edits the file mid-task; the running task must not notice.
    _write_config(config, proxy.base_url, planner="gpt-scripted", executor="claude-scripted")
    assert load_settings(config).pin().route("planner") == "openai_chat"

    script.messages(reply("Plan: run the tests, then fix what fails."))
    script.chat(reply(ToolUse("run_tests", {"selector": "tests/"})), reply("All 12 tests pass."))
    log: list[CanonicalEvent] = [UserText(text="Make the suite green.")]
    with RoleRouter.from_pin(pin) as router:
        assert (router.client_for("planner").route, router.client_for("executor").route) == (
            "anthropic_messages",
            "openai_chat",
        )
        plan = router.complete("planner", log, [RUN_TESTS])
        assert plan == [
            AssistantText(text="Plan: run the tests, then fix what fails.", model="claude-scripted")
        ]
        log += plan
        (call,) = router.complete("executor", log, [RUN_TESTS])
        assert isinstance(call, ToolCall)
        log += [call, ToolResult(call_id=call.call_id, output="12 passed")]
        done = router.complete("executor", log, [RUN_TESTS])
        assert done == [AssistantText(text="All 12 tests pass.", model="gpt-scripted")]

    assert [(r.path, r.json["model"], r.json["max_tokens"]) for r in script.requests] == [
        ("/v1/messages", "claude-scripted", 2048),
        ("/chat/completions", "gpt-scripted", 2048),
        ("/chat/completions", "gpt-scripted", 2048),
    ]


def test_a_pin_restored_from_its_record_routes_as_the_original(
    proxy: LiteLLMProxy, script: Script, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A resumed task rebuilds its pin from the logged record, the token and the operator's
    base URL, and keeps its routes; a record whose URL is not the operator's is refused."""
    config = tmp_path / "nisse.toml"
    _write_config(config, proxy.base_url, planner="claude-scripted", executor="gpt-scripted")
    monkeypatch.setenv("NISSE_LLM_TOKEN", proxy.token)
    record = json.loads(json.dumps(load_settings(config).pin().record()))
    _write_config(config, "http://127.0.0.1:9", planner="gpt-alt", executor="claude-alt")

    # The operator's base URL decides where the token goes: the edited file's is refused.
    with pytest.raises(ConfigError, match="is not the operator's"):
        Pin.from_record(record, proxy.token, base_url=load_settings(config).llm.base_url)
    restored = Pin.from_record(record, proxy.token, base_url=proxy.base_url)
    script.messages(reply("resumed plan"))
    with RoleRouter.from_pin(restored) as router:
        assert router.complete("planner", [UserText(text="Where were we?")], None) == [
            AssistantText(text="resumed plan", model="claude-scripted")
        ]
    assert [r.route for r in script.requests] == ["anthropic_messages"]
