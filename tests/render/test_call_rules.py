"""A call's rules are decided once into a plain value, and the renderers read that value:
handed in by the transport, or decided by the route for a standalone render."""

from __future__ import annotations

import dataclasses

import pytest

from nisse_llm.config.call_rules import CallRules
from nisse_llm.config.option_rules import decide
from nisse_llm.config.options import RequestOptions
from nisse_llm.errors import RenderError
from nisse_llm.events.canonical import ToolSpec, UserText
from nisse_llm.render import Renderer
from nisse_llm.render._cache import PromptCache
from nisse_llm.routes import ROUTE_TABLE

EVENTS = [UserText(text="Plan the change.")]
TOOL = ToolSpec(name="submit_plan", description="Submit.", parameters={"type": "object"})
#: A model on each route that takes reasoning (a Claude one takes budgets, not adaptive).
MODEL = {
    "openai_chat": "claude-sonnet-4-5",
    "anthropic_messages": "claude-sonnet-4-5",
    "openai_responses": "gpt-6-astra",
}
OPTIONS = [
    None,
    RequestOptions(reasoning="high", max_output_tokens=32000, tool_choice="auto"),
    RequestOptions(max_output_tokens=2000, parallel_tool_calls=False),
]


def _renderer(route: str) -> Renderer:
    renderer: Renderer = ROUTE_TABLE[route].new_renderer()
    return renderer


@pytest.mark.parametrize("route", list(MODEL))
@pytest.mark.parametrize("options", OPTIONS, ids=["none", "reasoning", "ceiling"])
def test_a_standalone_render_sends_what_the_rules_handed_in_send(
    route: str, options: RequestOptions | None
) -> None:
    """Without ``rules=`` the route decides them: the bytes are those of the decided value
    handed in, as the transport does."""
    model, cache = MODEL[route], PromptCache(prefixes=("team-claude/",))
    alone = _renderer(route).render_bytes(EVENTS, [TOOL], model, options=options, cache=cache)
    rules = ROUTE_TABLE[route].decide(model, options, max_tokens=None, prefixes=("team-claude/",))
    handed = _renderer(route).render_parts(
        EVENTS, [TOOL], model, options=options, cache=cache, rules=rules
    )
    assert b"".join(handed) == alone


@pytest.mark.parametrize("route", list(MODEL))
def test_the_renderer_refuses_by_the_rules_it_is_handed(route: str) -> None:
    """A broken rule reaches the body's refusal from the value, beside the request's own
    tool-choice problem: the renderer consults no table of its own."""
    options = RequestOptions(tool_choice="missing_tool")
    rules = ROUTE_TABLE[route].decide(MODEL[route], options, max_tokens=None)
    assert rules.problems == ()
    broken = dataclasses.replace(rules, problems=("the model is resting",))
    with pytest.raises(RenderError, match="the model is resting; tool_choice 'missing_tool'"):
        _renderer(route).render_parts(EVENTS, [TOOL], MODEL[route], options=options, rules=broken)
    with pytest.raises(RenderError, match=r"^request options .* names no tool of the request"):
        _renderer(route).render_parts(EVENTS, [TOOL], MODEL[route], options=options, rules=rules)


@pytest.mark.parametrize("route", ["openai_chat", "anthropic_messages"])
def test_a_claude_thinking_budget_is_the_decided_one(route: str) -> None:
    options = RequestOptions(reasoning="high", max_output_tokens=32000)
    rules = ROUTE_TABLE[route].decide(MODEL[route], options, max_tokens=None)
    assert rules.family == "anthropic"
    assert rules.budget == 16000  # the level's 24,576, capped at half the ceiling
    body = _renderer(route).render(EVENTS, [], MODEL[route], options=options)
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 16000}
    handed = dataclasses.replace(rules, budget=4096)
    parts = _renderer(route).render_parts(EVENTS, [], MODEL[route], options=options, rules=handed)
    assert b'"budget_tokens":4096' in b"".join(parts)


def test_the_responses_effort_and_reasoning_items_are_the_decided_ones() -> None:
    options = RequestOptions(reasoning=3000)
    rules = ROUTE_TABLE["openai_responses"].decide("gpt-unplaced-9", options, max_tokens=None)
    assert (rules.effort, rules.reasons, rules.family) == ("medium", True, "openai")
    body = _renderer("openai_responses").render(EVENTS, [], "gpt-unplaced-9", options=options)
    assert body["reasoning"] == {"effort": "medium", "summary": "auto"}
    assert body["include"] == ["reasoning.encrypted_content"]
    quiet = dataclasses.replace(rules, effort=None, reasons=False)
    parts = _renderer("openai_responses").render_parts(
        EVENTS, [], "gpt-unplaced-9", options=options, rules=quiet
    )
    sent = b"".join(parts)
    assert b'"reasoning"' not in sent
    assert b'"include"' not in sent


def test_a_decision_is_cached_per_route_model_options_and_ceiling() -> None:
    options = RequestOptions(reasoning="low", max_output_tokens=9000)
    first = decide("anthropic_messages", "claude-sonnet-4-5", options, None)
    again = decide("anthropic_messages", "claude-sonnet-4-5", RequestOptions(**dict(options)), None)
    assert again is first
    assert decide("anthropic_messages", "claude-sonnet-4-5", options, 1234) == first
    other = decide("anthropic_messages", "claude-sonnet-4-5", None, 1234)
    assert other == CallRules(ceiling=1234, family="anthropic", reasons=True, structured=True)


def test_a_passthrough_prefix_makes_a_model_anthropics_by_the_decision() -> None:
    options = RequestOptions(reasoning="high")
    plain = ROUTE_TABLE["openai_chat"].decide("team-claude/sonnet", options, max_tokens=None)
    prefixed = ROUTE_TABLE["openai_chat"].decide(
        "team-claude/sonnet", options, max_tokens=None, prefixes=("team-claude/",)
    )
    assert (plain.family, plain.replays_thinking) == ("openai", False)
    assert (prefixed.family, prefixed.replays_thinking) == ("anthropic", True)


def test_a_ceiling_below_one_is_refused_when_deciding() -> None:
    with pytest.raises(RenderError, match="max_tokens must be a positive number, not 0"):
        ROUTE_TABLE["openai_chat"].decide("gpt-4o-mini", None, max_tokens=0)


def test_a_passthrough_prefix_reaches_the_responses_route_too() -> None:
    """The Responses route decides by the same prefixes as the chat route: an operator's
    prefixed Claude entry is Anthropic's there, so it gets no ``prompt_cache_key`` (the
    proxy refuses that field to Anthropic entries)."""
    renderer = _renderer("openai_responses")
    plain = renderer.render(EVENTS, [], "team-claude/sonnet")
    prefixed = renderer.render(
        EVENTS, [], "team-claude/sonnet", cache=PromptCache(prefixes=("team-claude/",))
    )
    assert plain["prompt_cache_key"].startswith("nisse-")
    assert "prompt_cache_key" not in prefixed
