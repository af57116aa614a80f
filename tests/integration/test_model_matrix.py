"""Every reasoning setting and tool choice a current model family takes, through the real
proxy: the level asked is the level the upstream receives, on each route the model may take, and the body
the upstream receives validates against the official SDK's request types.

The proxy rewrites reasoning by the model name in ``litellm_params.model``, so each entry
is named after the real current model (the scripted upstream as its ``api_base``).
OpenAI models go without tools here: with tools and an effort the proxy bridges gpt-5.4 and
later to ``/responses`` (a route of its own, not this matrix's).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from nisse_llm.config.model_rules import rules_for
from nisse_llm.config.options import RequestOptions
from nisse_llm.events.canonical import UserText
from nisse_llm.testing import Script, ScriptedServer, Thinking, reply
from nisse_llm.testing.proxy import LiteLLMProxy, ProxyModel
from tests.corpus import READ_FILE
from tests.integration.helpers import (
    ClientRoute,
    client_for,
    fresh_script,
    proxy_of,
)
from tests.render.anthropic_checker import official_violations
from tests.render.test_openai_official import judge_official

pytestmark = pytest.mark.proxy

CLAUDES = ("claude-opus-5-5", "claude-sonnet-5-5", "claude-haiku-5-5", "claude-opus-4-8")
GPTS = ("gpt-6-astra", "gpt-5.6-sol", "gpt-5.4-mini")
MODELS = [ProxyModel(name, "anthropic") for name in CLAUDES] + [
    ProxyModel(name, "openai") for name in GPTS
]


def _cases() -> Iterator[Any]:
    """(model, route, options, the fields the upstream must receive) for every setting each
    model's row offers, on each route it may take."""
    for model in CLAUDES:
        rules = rules_for(model, "anthropic")
        for route in ("messages", "chat"):
            for level in rules.levels:
                expected = {"thinking": {"type": "adaptive"}, "output_config": {"effort": level}}
                yield model, route, RequestOptions(reasoning=level), expected
            for display in ("summarized", "omitted"):
                options = RequestOptions(reasoning="medium", reasoning_display=display)
                expected = {
                    "thinking": {"type": "adaptive", "display": display},
                    "output_config": {"effort": "medium"},
                }
                yield model, route, options, expected
            if rules.can_turn_off:
                # The chat route sends nothing for "off": the proxy drops a disabled thinking.
                off = {"thinking": {"type": "disabled"}} if route == "messages" else {}
                yield model, route, RequestOptions(reasoning="off"), off
            # Tool choice without thinking: forced where the model takes it, else offered.
            choice = "required" if rules.forced_tool else "auto"
            options = RequestOptions(tool_choice=choice, parallel_tool_calls=False)
            kind = "any" if rules.forced_tool else "auto"
            yield (
                model,
                route,
                options,
                {"tool_choice": {"type": kind, "disable_parallel_tool_use": True}},
            )
    for model in GPTS:
        rules = rules_for(model, "openai")
        for level in rules.levels:
            yield model, "chat", RequestOptions(reasoning=level), {"reasoning_effort": level}
        if rules.can_turn_off:
            yield model, "chat", RequestOptions(reasoning="off"), {"reasoning_effort": "none"}
        options = RequestOptions(tool_choice="read_file", parallel_tool_calls=False)
        named = {"type": "function", "function": {"name": "read_file"}}
        yield model, "chat", options, {"tool_choice": named, "parallel_tool_calls": False}


CASES = list(_cases())
COMPARED = ("thinking", "output_config", "reasoning_effort", "tool_choice", "parallel_tool_calls")


@pytest.fixture(scope="module")
def matrix_proxy(upstream: ScriptedServer, litellm_bin: Path) -> Iterator[LiteLLMProxy]:
    """A proxy whose entries carry the current models' real names."""
    with proxy_of(upstream, litellm_bin, MODELS) as running:
        yield running


@pytest.fixture
def script(upstream: ScriptedServer, matrix_proxy: LiteLLMProxy) -> Iterator[Script]:
    with fresh_script(upstream) as script:
        yield script


def test_the_matrix_covers_every_named_model() -> None:
    """Each current model of the matrix has at least one setting tried."""
    assert {case[0] for case in CASES} == {*CLAUDES, *GPTS}
    assert len(CASES) > 60


@pytest.mark.parametrize(
    ("model", "route", "options", "expected"),
    CASES,
    ids=[f"{m}-{r}-{o.model_dump_json(exclude_none=True)}" for m, r, o, _ in CASES],
)
def test_the_level_asked_is_the_level_received(
    matrix_proxy: LiteLLMProxy,
    script: Script,
    model: str,
    route: ClientRoute,
    options: RequestOptions,
    expected: dict[str, Any],
) -> None:
    """The upstream receives exactly the reasoning and tool fields asked for, in a valid body."""
    script.chat(reply("ok")).messages(reply("ok"))
    # OpenAI models get tools only without an effort: with both, the proxy bridges them to
    # /responses (module docstring).
    tools = [READ_FILE] if model.startswith("claude-") or options.tool_choice else []
    with client_for(matrix_proxy, route) as h:
        h.client.complete([UserText(text="Fix the test.")], tools, model, options=options)
    (request,) = script.requests
    body: dict[str, Any] = request.json
    received = {key: body[key] for key in COMPARED if key in body}
    assert received == expected
    if model.startswith("claude-"):
        assert request.path.endswith("/v1/messages")
        assert official_violations({k: v for k, v in body.items() if k != "stream"}) == []
    else:
        assert request.path.endswith("/chat/completions")
        judge_official(body)


class Verdict(BaseModel):
    """A review's verdict."""

    approve: bool
    reason: str


def test_a_thinking_claude_model_answers_typed_through_output_config(
    matrix_proxy: LiteLLMProxy, script: Script
) -> None:
    """complete_as with thinking on reaches claude-opus-5-5 as adaptive thinking, the effort
    and the answer's format in one output_config, unchanged by the proxy; the text validates."""
    script.messages(reply(Thinking("Safe change.", "sig-1"), '{"approve": true, "reason": "ok"}'))
    with client_for(matrix_proxy, "messages") as h:
        answer = h.client.complete_as(
            Verdict, [UserText(text="Review.")], [READ_FILE], "claude-opus-5-5",
            options=RequestOptions(reasoning="high"),
        )  # fmt: skip
    assert answer.value == Verdict(approve=True, reason="ok")
    (request,) = script.requests
    body = request.json
    assert body["thinking"] == {"type": "adaptive"}
    assert body["output_config"]["effort"] == "high"
    assert body["output_config"]["format"]["schema"]["required"] == ["approve", "reason"]
    assert official_violations({k: v for k, v in body.items() if k != "stream"}) == []


def test_an_openai_model_answers_typed_through_a_strict_response_format(
    matrix_proxy: LiteLLMProxy, script: Script
) -> None:
    """complete_as to gpt-5.6-sol with reasoning sends a strict response_format the proxy
    forwards unchanged, and the text answer validates."""
    script.chat(reply('{"approve": false, "reason": "tests fail"}'))
    with client_for(matrix_proxy, "chat") as h:
        answer = h.client.complete_as(
            Verdict, [UserText(text="Review.")], None, "gpt-5.6-sol",
            options=RequestOptions(reasoning="high"),
        )  # fmt: skip
    assert answer.value == Verdict(approve=False, reason="tests fail")
    (request,) = script.requests
    body = request.json
    assert body["reasoning_effort"] == "high"
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["strict"] is True
    assert body["response_format"]["json_schema"]["name"] == "Verdict"
    judge_official(body)
