"""For any request options and any valid log, each route renders a body the provider accepts
(the official SDK request types, the API rules, the documented option rules) or refuses the
options with a `RenderError` before anything is sent, exactly when a documented rule says so."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from nisse_llm.config.options import RequestOptions
from nisse_llm.errors import RenderError
from nisse_llm.events.canonical import CanonicalEvent, ToolCall, ToolSpec
from nisse_llm.render.anthropic_messages import AnthropicMessagesRenderer
from nisse_llm.render.openai_chat import OpenAIChatRenderer
from tests.render.anthropic_checker import (
    anthropic_log_violations,
    anthropic_violations,
    official_violations,
)
from tests.render.option_judges import judge_chat_body
from tests.strategies import TOOL_NAMES, logs, tool_specs

ANT = AnthropicMessagesRenderer()
CHAT = OpenAIChatRenderer()
PROPERTY = settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
CEILING = 16384  # the clients' default, passed as the renderers' max_tokens

options_strategy = st.builds(
    RequestOptions,
    max_output_tokens=st.none() | st.integers(1, 64000),
    reasoning=st.none()
    | st.sampled_from(["off", "minimal", "low", "medium", "high", "xhigh", "max"])
    | st.integers(1, 70000),
    reasoning_display=st.none() | st.sampled_from(["summarized", "omitted"]),
    temperature=st.none() | st.floats(0, 2),
    top_p=st.none() | st.floats(0, 1, exclude_min=True),
    stop=st.none()
    | st.lists(st.text(min_size=1, max_size=6) | st.sampled_from([" ", "\n"]), max_size=6).map(
        tuple
    ),
    tool_choice=st.none()
    | st.sampled_from(["auto", "none", "required", *TOOL_NAMES, "absent_tool"]),
    parallel_tool_calls=st.none() | st.booleans(),
)


class Facts:
    """What one model takes, as the README's model table says it (the oracle's own copy)."""

    def __init__(
        self,
        levels: str,
        *,
        adaptive: bool = False,
        budgets: bool = False,
        off: bool = True,
        none: bool = False,
        display: bool = False,
        sampling: bool = False,
        forced: bool = True,
    ) -> None:
        self.levels = levels.split()
        self.adaptive, self.budgets, self.off, self.none = adaptive, budgets, off, none
        self.display, self.sampling, self.forced = display, sampling, forced


CLAUDE_LEGACY = Facts("low medium high", budgets=True)
FACTS = {
    "claude-sonnet-4-5": CLAUDE_LEGACY,
    "claude-opus-4-1": CLAUDE_LEGACY,  # no row: the unplaced rules
    "claude-opus-5-5": Facts(
        "low medium high xhigh max", adaptive=True, off=False, display=True, forced=False
    ),
    "claude-sonnet-4-6": Facts("low medium high max", adaptive=True, budgets=True, display=True),
    "gpt-4o-mini": Facts("", sampling=True),
    "openrouter/x-ai/grok-4": Facts("low medium high", budgets=True, sampling=True),
    "gpt-6-astra": Facts("low medium high xhigh max", off=False),
    "gpt-5.5": Facts("low medium high xhigh max", none=True),
}
CLAUDES = [model for model in FACTS if model.startswith("claude-")]


def _thinks(options: RequestOptions) -> bool:
    return options.reasoning is not None and options.reasoning != "off"


def _by_budget(options: RequestOptions, facts: Facts) -> bool:
    """Whether a Claude model's thinking goes as a budget (not adaptive at a level)."""
    return isinstance(options.reasoning, int) or not facts.adaptive


def _budget(options: RequestOptions, ceiling: int) -> int:
    """The documented budget: an int as given; a level's table budget capped at half the
    ceiling, never below 1,024."""
    if isinstance(options.reasoning, int):
        return options.reasoning
    table = {"low": 2048, "medium": 8192, "high": 24576}[str(options.reasoning)]
    return max(1024, min(table, ceiling // 2))


def _refusals(
    options: RequestOptions, facts: Facts, *, anthropic: bool, chat: bool, tools: list[str]
) -> set[str]:
    """The documented rules ``options`` break: an oracle written from the list in docs/guides/options.md."""
    broken: set[str] = set()
    ceiling = options.max_output_tokens or CEILING
    choice = options.tool_choice
    forced = choice is not None and choice not in ("auto", "none")
    reasoning = options.reasoning
    if reasoning == "off" and not facts.off:
        broken.add("cannot turn off")
    elif isinstance(reasoning, int) and not facts.budgets:
        broken.add("no budgets")
    elif isinstance(reasoning, str) and reasoning != "off" and reasoning not in facts.levels:
        broken.add("level not offered")
    if options.reasoning_display is not None and not facts.display:
        broken.add("no display")
    if forced and not facts.forced:
        broken.add("no forced tool")
    sampled = options.temperature is not None or options.top_p is not None
    if anthropic:
        if sampled:
            broken.add("sampling")
        if _thinks(options) and not broken & {"no budgets", "level not offered"}:
            if _by_budget(options, facts):
                budget = _budget(options, ceiling)
                if budget < 1024 or budget >= ceiling:
                    broken.add("budget")
            if forced:
                broken.add("thinking with a forced tool")
        if options.stop and any(not s.strip() for s in options.stop):
            broken.add("blank stop")
    elif sampled and not facts.sampling:
        broken.add("sampling")
    if chat and options.stop is not None and len(options.stop) > 4:
        broken.add("stop count")
    if forced and not tools:
        broken.add("no tools")
    if forced and tools and choice != "required" and choice not in tools:
        broken.add("unknown tool")
    return broken


def _option_fields_hold(body: dict[str, Any], options: RequestOptions, chat: bool) -> None:
    """What reaches the body is what the options asked for."""
    ceiling = options.max_output_tokens or CEILING
    assert body.get("max_tokens") == ceiling
    stop = body.get("stop" if chat else "stop_sequences")
    assert stop == (list(options.stop) if options.stop else None)
    thinking = body.get("thinking")
    if thinking is not None and thinking["type"] == "enabled":
        assert 1024 <= thinking["budget_tokens"] < body["max_tokens"]
        assert thinking["budget_tokens"] == _budget(options, ceiling)
    if thinking is not None and thinking["type"] == "adaptive":
        assert body["output_config"] == {"effort": options.reasoning}  # the level asked, as is
    else:
        assert "output_config" not in body
    if thinking is not None and thinking["type"] != "disabled":
        assert thinking.get("display") == options.reasoning_display


def _messages_unthought(body: dict[str, Any]) -> bool:
    """The last assistant message calls tools and does not start with thinking."""
    for message in reversed(body["messages"]):
        if message["role"] == "assistant":
            kinds = [block["type"] for block in message["content"]]
            return "tool_use" in kinds and kinds[0] not in ("thinking", "redacted_thinking")
    return False


def _chat_unthought(body: dict[str, Any]) -> bool:
    """The last assistant message calls tools and carries no thinking blocks."""
    for message in reversed(body["messages"]):
        if message["role"] == "assistant":
            return bool(message.get("tool_calls")) and not message.get("thinking_blocks")
    return False


def _renders_without_options(render: Any, *args: Any) -> bool:
    try:
        render(*args, max_tokens=CEILING)
    except RenderError:
        return False
    return True


@PROPERTY
@given(logs(), tool_specs(), st.sampled_from(CLAUDES), options_strategy)
def test_messages_route_valid_or_refused(
    events: list[CanonicalEvent], tools: list[ToolSpec], model: str, options: RequestOptions
) -> None:
    assume(_renders_without_options(ANT.render, events, tools, model))
    names = [tool.name for tool in tools]
    broken = _refusals(options, FACTS[model], anthropic=True, chat=False, tools=names)
    if broken:  # refused on every path, before anything is sent
        for render in (ANT.render, ANT.render_bytes, ANT.render_request):
            with pytest.raises(RenderError, match="request options"):
                render(events, tools, model, options=options, max_tokens=CEILING)
        return
    body = ANT.render(events, tools, model, options=options, max_tokens=CEILING)
    assert anthropic_violations(body) == []
    assert anthropic_log_violations(body, events, model) == []
    assert official_violations(body) == []
    assert "temperature" not in body
    assert "top_p" not in body
    _option_fields_hold(body, options, chat=False)
    if _thinks(options):
        # Anthropic: "a final assistant message must start with a thinking block" when
        # thinking is on; a loop whose last turn has none is continued without thinking.
        thinks = body.get("thinking", {}).get("type") in ("enabled", "adaptive")
        assert thinks is not _messages_unthought(body)
    typed = ANT.render_request(events, tools, model, options=options, max_tokens=CEILING)
    assert ANT.render_bytes(events, tools, model, options=options, max_tokens=CEILING) == (
        typed.model_dump_json(exclude_none=True).encode()
    )


@PROPERTY
@given(logs(), tool_specs(), st.sampled_from(list(FACTS)), options_strategy)
def test_chat_route_valid_or_refused(
    events: list[CanonicalEvent], tools: list[ToolSpec], model: str, options: RequestOptions
) -> None:
    assume(_renders_without_options(CHAT.render, events, tools, model))
    anthropic = model.startswith("claude-")
    names = [tool.name for tool in tools]
    facts = FACTS[model]
    broken = _refusals(options, facts, anthropic=anthropic, chat=True, tools=names)
    if broken:  # refused on every path, before anything is sent
        for render in (CHAT.render, CHAT.render_bytes, CHAT.render_request):
            with pytest.raises(RenderError, match="request options"):
                render(events, tools, model, options=options, max_tokens=CEILING)
        return
    body = CHAT.render(events, tools, model, options=options, max_tokens=CEILING)
    judge_chat_body(body)
    _option_fields_hold(body, options, chat=True)
    if anthropic:
        assert "reasoning_effort" not in body
        assert "temperature" not in body
        assert ("thinking" in body) is (_thinks(options) and not _chat_unthought(body))
    else:
        assert "thinking" not in body
        if options.reasoning == "off":
            assert body.get("reasoning_effort") == ("none" if facts.none else None)
        elif isinstance(options.reasoning, str):
            assert body["reasoning_effort"] == options.reasoning  # the level asked, as is
        else:
            assert ("reasoning_effort" in body) is (options.reasoning is not None)
        assert body.get("temperature") == options.temperature
    if not tools and any(isinstance(e, ToolCall) for e in events):
        assert body["tool_choice"] == "none"  # stubs are never callable
    typed = CHAT.render_request(events, tools, model, options=options, max_tokens=CEILING)
    assert CHAT.render_bytes(events, tools, model, options=options, max_tokens=CEILING) == (
        typed.model_dump_json(exclude_none=True).encode()
    )
