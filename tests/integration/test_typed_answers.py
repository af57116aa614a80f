"""Typed answers through the real proxy, and what it does with native structured output.

``complete_as`` runs on both routes to both kinds of model entry, with the scripted
upstream answering valid, invalid then valid (a repair), and invalid twice. The second
half records how LiteLLM 1.108.7 carries each provider's native structured-output field
(the measurements behind choosing a forced tool call; see the docs' "Tools and typed
answers" guide).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import httpx
import pytest
from pydantic import BaseModel

from nisse_llm import (
    OutputValidationError,
    RequestOptions,
    RoleRouter,
    Usage,
    UserText,
    load_settings,
)
from nisse_llm.config.routing import Route
from nisse_llm.testing import Script, ScriptedServer, Thinking, Tokens, ToolUse, reply
from nisse_llm.testing.proxy import LiteLLMProxy, ProxyModel
from tests.corpus import READ_FILE
from tests.integration.helpers import (
    COMBO_IDS,
    COMBOS,
    Combo,
    client_for,
    fresh_script,
    tool_calls_sent,
    tool_results_sent,
)
from tests.tools.readme_agent import FIXED, agent_turns, readme_agent, results_sent

pytestmark = pytest.mark.proxy


class Verdict(BaseModel):
    """A reviewer's verdict on a change."""

    approve: bool
    severity: Literal["low", "high"]
    notes: list[str]


GOOD = {"approve": True, "severity": "low", "notes": ["tests pass"]}
BAD = {"approve": "perhaps", "severity": "urgent", "notes": ["x"]}
LOG = [UserText(text="Review the change to calc.py.")]
SYSTEM = "You review changes."


#: The forced answer tool as each kind of upstream receives it, whichever route it came by.
FORCED: dict[Route, dict[str, Any]] = {
    "openai_chat": {"type": "function", "function": {"name": "Verdict"}},
    "anthropic_messages": {"type": "tool", "name": "Verdict"},
}


def _answer(arguments: dict[str, Any], output: int) -> Any:
    return reply(ToolUse("Verdict", arguments), usage=Tokens(input=120, output=output))


def _tool_names(body: dict[str, Any], upstream: Route) -> list[str]:
    tools = body.get("tools") or []
    if upstream == "openai_chat":
        return [tool["function"]["name"] for tool in tools]
    return [tool["name"] for tool in tools]


@pytest.mark.parametrize("combo", COMBOS, ids=COMBO_IDS)
def test_a_valid_answer_through_the_proxy(
    proxy: LiteLLMProxy, script: Script, combo: Combo
) -> None:
    """The answer tool reaches the upstream beside the agent's tools; its call comes back typed."""
    script.add(combo.upstream, _answer(GOOD, output=11))
    with client_for(proxy, combo.route) as harness:
        result = harness.client.complete_as(Verdict, LOG, [READ_FILE], combo.model(), SYSTEM)
    assert result.value == Verdict(**GOOD)
    assert result.usage.output == 11
    assert result.attempts == 1
    [request] = script.requests
    assert _tool_names(request.json, combo.upstream) == ["read_file", "Verdict"]
    assert request.json["tool_choice"] == FORCED[combo.upstream]


@pytest.mark.parametrize("combo", COMBOS, ids=COMBO_IDS)
def test_an_invalid_answer_is_repaired_through_the_proxy(
    proxy: LiteLLMProxy, script: Script, combo: Combo
) -> None:
    """The validation errors reach the upstream as the failed call's error result; the
    second answer is taken and both calls' usage is summed."""
    script.add(combo.upstream, _answer(BAD, output=5), _answer(GOOD, output=9))
    with client_for(proxy, combo.route) as harness:
        result = harness.client.complete_as(
            Verdict, LOG, None, combo.model(), SYSTEM, repair_attempts=1
        )
    assert result.value == Verdict(**GOOD)
    assert result.attempts == 2
    assert result.usage.output == 14
    _, second = script.requests
    [(call_id, name, arguments)] = tool_calls_sent(second.json, combo.upstream)
    assert (name, arguments) == ("Verdict", BAD)
    output, flag = tool_results_sent(second.json, combo.upstream)[call_id]
    assert "- severity: Input should be 'low' or 'high' (got 'urgent')" in output
    assert "- approve: Input should be a valid boolean" in output
    if combo.route == "chat":  # no error flag on the chat route: the text says it
        assert output.startswith("[tool error] ")
    else:
        assert flag is (True if combo.upstream == "anthropic_messages" else None)


@pytest.mark.parametrize("combo", COMBOS, ids=COMBO_IDS)
def test_invalid_twice_fails_the_turn_through_the_proxy(
    proxy: LiteLLMProxy, script: Script, combo: Combo
) -> None:
    """Two invalid answers with one repair raise `OutputValidationError` with the raw
    answer, pydantic's errors and both calls' usage."""
    script.add(combo.upstream, _answer(BAD, output=5), _answer(BAD, output=6))
    with (
        client_for(proxy, combo.route) as harness,
        pytest.raises(OutputValidationError) as caught,
    ):
        harness.client.complete_as(Verdict, LOG, None, combo.model(), SYSTEM, repair_attempts=1)
    error = caught.value
    assert json.loads(error.raw) == BAD
    assert {e["loc"] for e in error.errors} == {("approve",), ("severity",)}
    assert error.attempts == 2
    assert isinstance(error.usage, Usage)
    assert error.usage.output == 11
    assert len(script.requests) == 2


# --- native structured output, as the proxy carries it --------------------------------

SCHEMA = {
    "type": "object",
    "properties": {"risk": {"type": "string", "enum": ["low", "high"]}},
    "required": ["risk"],
    "additionalProperties": False,
}
RESPONSE_FORMAT = {
    "type": "json_schema",
    "json_schema": {"name": "Risk", "schema": SCHEMA, "strict": True},
}
OUTPUT_FORMAT = {"type": "json_schema", "schema": SCHEMA}
ANSWER = '{"risk": "low"}'


def _post(proxy: LiteLLMProxy, path: str, body: dict[str, Any]) -> httpx.Response:
    headers = {
        "authorization": f"Bearer {proxy.token}",
        "x-api-key": proxy.token,
        "anthropic-version": "2023-06-01",
    }
    return httpx.post(proxy.base_url + path, json=body, headers=headers, timeout=30)


def _chat_text(response: httpx.Response) -> str:
    return str(response.json()["choices"][0]["message"]["content"])


def _messages_text(response: httpx.Response) -> str:
    return str(response.json()["content"][0]["text"])


def test_chat_route_forwards_response_format_to_an_openai_entry(
    proxy: LiteLLMProxy, script: Script
) -> None:
    """``response_format`` on /chat/completions reaches an ``openai/`` upstream unchanged."""
    script.chat(reply(ANSWER))
    body = {"model": "gpt-scripted", "messages": [{"role": "user", "content": "go"}]}
    response = _post(proxy, "/chat/completions", {**body, "response_format": RESPONSE_FORMAT})
    assert response.status_code == 200
    assert _chat_text(response) == ANSWER
    [request] = script.requests
    assert request.json["response_format"] == RESPONSE_FORMAT


def test_chat_route_emulates_response_format_with_a_forced_tool_for_an_unknown_claude(
    proxy: LiteLLMProxy, script: Script
) -> None:
    """To an ``anthropic/`` entry the price map does not know, LiteLLM forces its own
    ``json_tool_call`` tool upstream and returns the call's input as the text."""
    script.messages(reply(ToolUse("json_tool_call", {"risk": "low"})))
    body = {"model": "claude-scripted", "messages": [{"role": "user", "content": "go"}]}
    response = _post(
        proxy, "/chat/completions", {**body, "max_tokens": 64, "response_format": RESPONSE_FORMAT}
    )
    assert response.status_code == 200
    assert json.loads(_chat_text(response)) == {"risk": "low"}
    [request] = script.requests
    assert request.json["tool_choice"] == {"name": "json_tool_call", "type": "tool"}
    assert request.json["tools"] == [{"name": "json_tool_call", "input_schema": SCHEMA}]
    assert "output_format" not in request.json


def test_messages_route_forwards_output_format_to_an_anthropic_entry(
    proxy: LiteLLMProxy, script: Script
) -> None:
    """Anthropic's ``output_format`` on /v1/messages reaches an ``anthropic/`` upstream unchanged."""
    script.messages(reply(ANSWER))
    body = {"model": "claude-scripted", "max_tokens": 64, "output_format": OUTPUT_FORMAT}
    response = _post(
        proxy, "/v1/messages", {**body, "messages": [{"role": "user", "content": "go"}]}
    )
    assert response.status_code == 200
    assert _messages_text(response) == ANSWER
    [request] = script.requests
    assert request.json["output_format"] == OUTPUT_FORMAT


def test_messages_route_translates_output_format_for_an_openai_entry(
    proxy: LiteLLMProxy, script: Script
) -> None:
    """To an ``openai/`` entry, ``output_format`` becomes a strict ``response_format``
    named ``structured_output``."""
    script.chat(reply(ANSWER))
    body = {"model": "gpt-scripted", "max_tokens": 64, "output_format": OUTPUT_FORMAT}
    response = _post(
        proxy, "/v1/messages", {**body, "messages": [{"role": "user", "content": "go"}]}
    )
    assert response.status_code == 200
    assert _messages_text(response) == ANSWER
    [request] = script.requests
    assert request.json["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "structured_output", "schema": SCHEMA, "strict": True},
    }


@pytest.fixture(scope="module")
def known_claude(upstream: ScriptedServer, litellm_bin: Any) -> Iterator[LiteLLMProxy]:
    """A proxy whose one entry names a Claude model the price map knows (reasoning, native
    structured output), served by the scripted upstream."""
    entry = ProxyModel("claude-known", "anthropic", upstream_model="claude-sonnet-4-6")
    with LiteLLMProxy(upstream.base_url, models=[entry], executable=litellm_bin) as running:
        yield running


@pytest.fixture
def known_script(upstream: ScriptedServer, known_claude: LiteLLMProxy) -> Iterator[Script]:
    with fresh_script(upstream) as script:
        yield script


def test_chat_route_uses_output_format_for_a_claude_the_price_map_knows(
    known_claude: LiteLLMProxy, known_script: Script
) -> None:
    """To ``anthropic/claude-sonnet-4-6``, ``response_format`` becomes Anthropic's native
    ``output_format``: the mechanism depends on the entry's price-map flags."""
    known_script.messages(reply(ANSWER))
    body = {"model": "claude-known", "messages": [{"role": "user", "content": "go"}]}
    response = _post(
        known_claude,
        "/chat/completions",
        {**body, "max_tokens": 64, "response_format": RESPONSE_FORMAT},
    )
    assert response.status_code == 200
    [request] = known_script.requests
    assert request.json["output_format"] == OUTPUT_FORMAT
    assert "tools" not in request.json


def test_chat_route_forwards_a_forced_tool_with_thinking(
    known_claude: LiteLLMProxy, known_script: Script
) -> None:
    """The proxy does not stop a forced tool beside thinking, which Anthropic refuses:
    avoiding that pair is the client's job."""
    known_script.messages(reply(ToolUse("Risk", {"risk": "low"})))
    tool = {"type": "function", "function": {"name": "Risk", "parameters": SCHEMA}}
    body = {
        "model": "claude-known",
        "messages": [{"role": "user", "content": "go"}],
        "max_tokens": 4000,
        "thinking": {"type": "enabled", "budget_tokens": 2000},
        "tools": [tool],
        "tool_choice": {"type": "function", "function": {"name": "Risk"}},
    }
    response = _post(known_claude, "/chat/completions", body)
    assert response.status_code == 200
    [request] = known_script.requests
    assert request.json["tool_choice"] == {"type": "tool", "name": "Risk"}
    assert request.json["thinking"] == {"type": "enabled", "budget_tokens": 2000}


# --- the docs' agent, through the proxy --------------------------------------------


@pytest.mark.parametrize(
    ("model", "served_on"),
    [("gpt-5.4-mini", "openai_responses"), ("claude-sonnet-5-5", "anthropic_messages")],
)
def test_readme_agent_through_the_proxy(
    proxy: LiteLLMProxy, script: Script, tmp_path: Path, model: str, served_on: Route
) -> None:
    """The docs' three-tool agent (docs/guides/tools.md), as written, fixes the file and
    answers typed through the proxy on each current model's own route (the answer natively,
    as its text)."""
    agent = readme_agent()
    script.add(served_on, *agent_turns(tmp_path))
    roles = {"executor": model, "planner": model, "delegate": model, "consultant": model}
    pin = load_settings(llm={"base_url": proxy.base_url, "token": proxy.token}, roles=roles).pin()
    with RoleRouter.from_pin(pin) as llm:
        outcome = agent.run_agent(llm, "Make check.py pass.")
    assert outcome == agent.Outcome(done=True, summary="add() fixed")
    assert (tmp_path / "calc.py").read_text() == FIXED
    assert results_sent(script.requests[3].json)[2] == "exit 0\nok\n"


# --- reasoning on: the answer tool offered, not forced --------------------------------


THINKING = RequestOptions(reasoning=2048, max_output_tokens=4096)


def _thinking_reply() -> Any:
    return reply(
        Thinking("The change is small and tested.", "sig-typed-1"),
        ToolUse("Verdict", GOOD),
        usage=Tokens(input=120, output=30),
    )


def test_thinking_on_the_messages_route_offers_the_answer_tool(
    proxy: LiteLLMProxy, script: Script
) -> None:
    """An Anthropic model thinking on /v1/messages: the upstream gets thinking and no forced
    tool (which Anthropic refuses), the system prompt asks for the answer tool."""
    script.messages(_thinking_reply())
    with client_for(proxy, "messages") as harness:
        result = harness.client.complete_as(
            Verdict,
            LOG,
            None,
            "claude-scripted",
            SYSTEM,
            options=THINKING,
        )
    assert result.value == Verdict(**GOOD)
    [request] = script.requests
    assert request.json["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert request.json.get("tool_choice", {"type": "auto"}) == {"type": "auto"}
    assert "calling the 'Verdict' tool" in json.dumps(request.json["system"])


def test_thinking_on_the_chat_route_offers_the_answer_tool(
    known_claude: LiteLLMProxy, known_script: Script
) -> None:
    """The same on /chat/completions to a Claude the proxy knows as a reasoning model: the
    upstream gets thinking and ``tool_choice`` auto, never a forced tool."""
    known_script.messages(_thinking_reply())
    with client_for(known_claude, "chat") as harness:
        result = harness.client.complete_as(
            Verdict,
            LOG,
            None,
            "claude-known",
            SYSTEM,
            options=THINKING,
        )
    assert result.value == Verdict(**GOOD)
    [request] = known_script.requests
    assert request.json["thinking"]["type"] == "enabled"
    assert request.json.get("tool_choice", {"type": "auto"}) == {"type": "auto"}
    assert _tool_names(request.json, "anthropic_messages") == ["Verdict"]
