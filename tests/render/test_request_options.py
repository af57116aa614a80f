"""Request options on both routes: each option's field, each refused combination, byte paths."""

from __future__ import annotations

from typing import Any

import pytest

from nisse_llm.config.option_rules import EFFORT_BUDGETS
from nisse_llm.config.options import RequestOptions
from nisse_llm.errors import RenderError
from nisse_llm.events.canonical import (
    AssistantText,
    Reasoning,
    ToolCall,
    ToolResult,
    ToolSpec,
    UserText,
)
from nisse_llm.render._cache import PromptCache
from nisse_llm.render.anthropic_messages import AnthropicMessagesRenderer
from nisse_llm.render.openai_chat import OpenAIChatRenderer
from tests.corpus import CORPUS, READ_FILE, RUN_TESTS
from tests.render.anthropic_checker import anthropic_violations, official_violations
from tests.render.option_judges import judge_chat_body

ANT = AnthropicMessagesRenderer()
CHAT = OpenAIChatRenderer()
LOG = [UserText(text="Fix the failing test.")]
TOOLS = [READ_FILE, RUN_TESTS]
CLAUDE = "claude-sonnet-4-5"
GPT = "gpt-scripted"  # an OpenAI model no rule row places: the unplaced rules


def _messages(options: RequestOptions, tools: list[ToolSpec] | None = TOOLS, **kw: Any) -> Any:
    body = ANT.render(LOG, tools, CLAUDE, options=options, **kw)
    assert ANT.render_bytes(LOG, tools, CLAUDE, options=options, **kw) == (
        ANT.render_request(LOG, tools, CLAUDE, options=options, **kw)
        .model_dump_json(exclude_none=True)
        .encode()
    )
    assert anthropic_violations(body) == []
    assert official_violations(body) == []
    return body


def _chat(options: RequestOptions, model: str = GPT, tools: list[ToolSpec] | None = TOOLS) -> Any:
    body = CHAT.render(LOG, tools, model, options=options, max_tokens=4096)
    typed = CHAT.render_request(LOG, tools, model, options=options, max_tokens=4096)
    assert CHAT.render_bytes(LOG, tools, model, options=options, max_tokens=4096) == (
        typed.model_dump_json(exclude_none=True).encode()
    )
    judge_chat_body(body)
    return body


# --- messages route ---------------------------------------------------------------------


def test_messages_output_ceiling_wins_over_the_default() -> None:
    """``max_output_tokens`` becomes ``max_tokens``, over the client's default."""
    assert _messages(RequestOptions(max_output_tokens=900))["max_tokens"] == 900
    assert _messages(RequestOptions(), max_tokens=700)["max_tokens"] == 700
    assert _messages(RequestOptions(max_output_tokens=900), max_tokens=700)["max_tokens"] == 900


@pytest.mark.parametrize(
    ("reasoning", "ceiling", "budget"),
    [
        ("low", 32000, EFFORT_BUDGETS["low"]),
        ("medium", 32000, EFFORT_BUDGETS["medium"]),
        ("high", 64000, EFFORT_BUDGETS["high"]),
        ("high", 16384, 8192),  # capped at half the ceiling
        ("low", 1500, 1024),  # raised to the API's minimum
        (5000, 6000, 5000),
    ],
)
def test_messages_reasoning_is_an_explicit_budget_below_the_ceiling(
    reasoning: Any, ceiling: int, budget: int
) -> None:
    """A level or a budget becomes ``thinking: enabled`` with a budget below ``max_tokens``."""
    body = _messages(RequestOptions(reasoning=reasoning, max_output_tokens=ceiling))
    assert body["thinking"] == {"type": "enabled", "budget_tokens": budget}
    assert body["thinking"]["budget_tokens"] < body["max_tokens"] == ceiling


def test_messages_reasoning_off_disables_thinking() -> None:
    assert _messages(RequestOptions(reasoning="off"))["thinking"] == {"type": "disabled"}


def test_messages_stop_sequences() -> None:
    body = _messages(RequestOptions(stop=("\n\nEND", "</answer>")))
    assert body["stop_sequences"] == ["\n\nEND", "</answer>"]


@pytest.mark.parametrize(
    ("choice", "parallel", "wire"),
    [
        ("auto", None, {"type": "auto"}),
        ("none", None, {"type": "none"}),
        ("required", None, {"type": "any"}),
        ("run_tests", None, {"type": "tool", "name": "run_tests"}),
        ("required", False, {"type": "any", "disable_parallel_tool_use": True}),
        (
            "run_tests",
            True,
            {"type": "tool", "name": "run_tests", "disable_parallel_tool_use": False},
        ),
        (None, False, {"type": "auto", "disable_parallel_tool_use": True}),
        ("none", False, {"type": "none"}),
    ],
)
def test_messages_tool_choice_and_parallel_switch(
    choice: Any, parallel: bool | None, wire: dict[str, Any]
) -> None:
    body = _messages(RequestOptions(tool_choice=choice, parallel_tool_calls=parallel))
    assert body["tool_choice"] == wire


def test_messages_no_options_send_no_option_fields() -> None:
    body = _messages(RequestOptions())
    assert set(body) == {"model", "max_tokens", "messages", "tools"}


def test_messages_without_tools_auto_and_parallel_send_nothing() -> None:
    body = _messages(RequestOptions(tool_choice="auto", parallel_tool_calls=False), tools=None)
    assert "tool_choice" not in body
    assert "tools" not in body


def test_messages_stubbed_log_keeps_tool_choice_none() -> None:
    """A log with calls but no tools passed keeps its stubs and ``none`` whatever auto says."""
    conversation = CORPUS["single_tool_call"]
    options = RequestOptions(tool_choice="auto", parallel_tool_calls=False)
    body = ANT.render(conversation.events, None, CLAUDE, options=options)
    assert body["tool_choice"] == {"type": "none"}


@pytest.mark.parametrize(
    ("options", "tools", "words"),
    [
        (RequestOptions(temperature=0.2), TOOLS, "temperature cannot be sent to an Anthropic"),
        (RequestOptions(top_p=0.9), TOOLS, "top_p cannot be sent"),
        (RequestOptions(reasoning=1000), TOOLS, "below Anthropic's minimum thinking budget"),
        (
            RequestOptions(reasoning=8000, max_output_tokens=8000),
            TOOLS,
            "must be below max_output_tokens (8000)",
        ),
        (RequestOptions(reasoning="low", max_output_tokens=1024), TOOLS, "below max_output_tokens"),
        (RequestOptions(reasoning="high", tool_choice="required"), TOOLS, "no forced tool"),
        (RequestOptions(reasoning=2048, tool_choice="run_tests"), TOOLS, "no forced tool"),
        (RequestOptions(tool_choice="deploy"), TOOLS, "names no tool of the request"),
        (RequestOptions(tool_choice="required"), None, "needs tools"),
        (RequestOptions(tool_choice="read_file"), None, "needs tools"),
        (RequestOptions(stop=(" ",)), TOOLS, "whitespace only"),
    ],
)
def test_messages_refuses_invalid_combinations(
    options: RequestOptions, tools: list[ToolSpec] | None, words: str
) -> None:
    """Each broken rule is a `RenderError` naming the options and the rule, on every path."""
    for render in (ANT.render, ANT.render_bytes, ANT.render_request):
        with pytest.raises(RenderError, match=r"request options .* cannot be sent") as caught:
            render(LOG, tools, CLAUDE, options=options)
        assert words in str(caught.value)


def test_messages_thinking_with_auto_or_none_choice_is_fine() -> None:
    for choice in ("auto", "none"):
        body = _messages(RequestOptions(reasoning="high", tool_choice=choice))
        assert body["thinking"]["type"] == "enabled"


def test_messages_envelope_cache_tells_options_apart() -> None:
    """The encoded envelope is cached per options: a second call with others is not stale."""
    first = ANT.render_bytes(LOG, TOOLS, CLAUDE, options=RequestOptions(max_output_tokens=1111))
    second = ANT.render_bytes(LOG, TOOLS, CLAUDE, options=RequestOptions(max_output_tokens=2222))
    assert b'"max_tokens":1111' in first
    assert b'"max_tokens":2222' in second


# --- chat route -------------------------------------------------------------------------


def test_chat_openai_model_gets_sampling_stop_and_effort() -> None:
    options = RequestOptions(
        temperature=0.2, top_p=0.9, stop=("END",), reasoning="medium", max_output_tokens=2000
    )
    body = _chat(options)
    assert body["temperature"] == 0.2
    assert body["top_p"] == 0.9
    assert body["stop"] == ["END"]
    assert body["reasoning_effort"] == "medium"
    assert body["max_tokens"] == 2000
    assert "thinking" not in body


@pytest.mark.parametrize(
    ("budget", "level"), [(1024, "low"), (2048, "low"), (2049, "medium"), (9000, "high")]
)
def test_chat_openai_model_gets_a_budget_as_a_level(budget: int, level: str) -> None:
    assert _chat(RequestOptions(reasoning=budget))["reasoning_effort"] == level


def test_chat_openai_model_with_reasoning_off_gets_nothing() -> None:
    body = _chat(RequestOptions(reasoning="off"))
    assert "reasoning_effort" not in body
    assert "thinking" not in body


def test_chat_anthropic_model_gets_an_explicit_thinking_budget() -> None:
    """Not ``reasoning_effort``: the proxy would turn ``high`` into 4,096 tokens even above
    ``max_tokens``; an explicit budget is forwarded as sent."""
    body = _chat(RequestOptions(reasoning="high"), model=CLAUDE)
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert body["max_tokens"] == 4096
    assert "reasoning_effort" not in body
    assert "thinking" not in _chat(RequestOptions(reasoning="off"), model=CLAUDE)


def test_chat_anthropic_model_thinking_without_a_ceiling_sends_the_default_one() -> None:
    body = CHAT.render(LOG, TOOLS, CLAUDE, options=RequestOptions(reasoning="low"))
    assert body["max_tokens"] == 16384
    assert body["thinking"]["budget_tokens"] == 2048


def test_chat_operator_prefix_makes_an_anthropic_model() -> None:
    """A model routed to Anthropic by the operator's prefix is refused sampling too."""
    cache = PromptCache(enabled=False, prefixes=("corp-",))
    with pytest.raises(RenderError, match="Anthropic model"):
        CHAT.render(LOG, TOOLS, "corp-sonnet", cache=cache, options=RequestOptions(temperature=0))
    CHAT.render(LOG, TOOLS, "corp-sonnet", options=RequestOptions(temperature=0))


@pytest.mark.parametrize(
    ("choice", "wire"),
    [
        ("auto", "auto"),
        ("none", "none"),
        ("required", "required"),
        ("read_file", {"type": "function", "function": {"name": "read_file"}}),
    ],
)
def test_chat_tool_choice(choice: str, wire: Any) -> None:
    assert _chat(RequestOptions(tool_choice=choice))["tool_choice"] == wire


def test_chat_parallel_switch_goes_with_tools_only() -> None:
    assert _chat(RequestOptions(parallel_tool_calls=False))["parallel_tool_calls"] is False
    assert "parallel_tool_calls" not in _chat(RequestOptions(parallel_tool_calls=False), tools=None)
    body = _chat(RequestOptions(parallel_tool_calls=True, tool_choice="none"))
    assert "parallel_tool_calls" not in body


def test_chat_field_order_is_the_typed_order() -> None:
    """Every option at once: bytes, typed dump and dict agree (the tail is spliced by hand)."""
    options = RequestOptions(
        max_output_tokens=3000,
        reasoning="low",
        temperature=1.0,
        top_p=0.5,
        stop=("a", "b"),
        tool_choice="run_tests",
        parallel_tool_calls=False,
    )
    body = _chat(options)
    assert list(body) == [
        "model",
        "messages",
        "tools",
        "tool_choice",
        "max_tokens",
        "parallel_tool_calls",
        "stop",
        "temperature",
        "top_p",
        "reasoning_effort",
    ]


def test_chat_stubbed_log_keeps_tool_choice_none() -> None:
    conversation = CORPUS["single_tool_call"]
    body = CHAT.render(
        conversation.events, None, GPT, options=RequestOptions(tool_choice="auto", stop=("x",))
    )
    assert body["tool_choice"] == "none"
    assert body["stop"] == ["x"]


@pytest.mark.parametrize(
    ("options", "model", "tools", "words"),
    [
        (RequestOptions(temperature=0.5), CLAUDE, TOOLS, "temperature cannot be sent"),
        (RequestOptions(top_p=0.5), "anthropic/claude-opus-4-1", TOOLS, "top_p cannot be sent"),
        (RequestOptions(reasoning=512), CLAUDE, TOOLS, "minimum thinking budget"),
        (RequestOptions(reasoning="high", tool_choice="required"), CLAUDE, TOOLS, "forced tool"),
        (RequestOptions(stop=("1", "2", "3", "4", "5")), GPT, TOOLS, "at most 4"),
        (RequestOptions(tool_choice="deploy"), GPT, TOOLS, "names no tool"),
        (RequestOptions(tool_choice="required"), GPT, None, "needs tools"),
        (RequestOptions(max_output_tokens=100, reasoning=200), CLAUDE, TOOLS, "minimum"),
    ],
)
def test_chat_refuses_invalid_combinations(
    options: RequestOptions, model: str, tools: list[ToolSpec] | None, words: str
) -> None:
    for render in (CHAT.render, CHAT.render_bytes, CHAT.render_request):
        with pytest.raises(RenderError, match=r"request options .* cannot be sent") as caught:
            render(LOG, tools, model, options=options)
        assert words in str(caught.value)


def test_chat_openai_models_may_think_with_a_forced_tool() -> None:
    """The forced-tool rule is Anthropic's: OpenAI reasoning models accept the pair."""
    body = _chat(RequestOptions(reasoning="high", tool_choice="required"), model="openai/o4-mini")
    assert body["reasoning_effort"] == "high"
    assert body["tool_choice"] == "required"


def test_chat_no_options_leave_the_body_as_before() -> None:
    conversation = CORPUS["multi_round_agent_loop"]
    args = (conversation.events, conversation.tools, GPT, conversation.system)
    assert CHAT.render_bytes(*args, options=RequestOptions()) == CHAT.render_bytes(*args)
    assert CHAT.render_bytes(*args, options=None, max_tokens=5) == CHAT.render_bytes(
        *args, options=RequestOptions(max_output_tokens=5)
    )


def test_chat_with_thinking_on_replays_the_models_own_thinking_blocks() -> None:
    """Anthropic refuses a tool loop with thinking on whose last assistant turn lacks its
    thinking: on the chat route the request model's blocks go back as ``thinking_blocks``."""
    conversation = CORPUS["reasoning_same_model"]
    args = (conversation.events, conversation.tools, conversation.model, conversation.system)
    plain = CHAT.render(*args, options=RequestOptions(reasoning="off"))
    assert all("thinking_blocks" not in message for message in plain["messages"])
    body = CHAT.render(*args, options=RequestOptions(reasoning="low"))
    judge_chat_body(body)
    replayed = [m["thinking_blocks"] for m in body["messages"] if "thinking_blocks" in m]
    own = [
        e.block
        for e in conversation.events
        if isinstance(e, Reasoning) and e.model == conversation.model
    ]
    assert replayed == [own]
    typed = CHAT.render_request(*args, options=RequestOptions(reasoning="low"))
    assert CHAT.render_bytes(*args, options=RequestOptions(reasoning="low")) == (
        typed.model_dump_json(exclude_none=True).encode()
    )
    other = CHAT.render(
        conversation.events,
        conversation.tools,
        "claude-opus-4-1",
        options=RequestOptions(reasoning="low"),
    )
    assert all("thinking_blocks" not in message for message in other["messages"])


@pytest.mark.parametrize("route", ["messages", "chat"])
def test_thinking_is_left_out_of_a_loop_whose_last_turn_did_not_think(route: str) -> None:
    """Anthropic refuses thinking on when the last assistant turn called tools without its
    thinking block; such a request goes without thinking, the next fresh turn thinks."""
    conversation = CORPUS["single_tool_call"]
    loop = conversation.events[:4]  # ends with the tool result the model must continue from
    options = RequestOptions(reasoning="low")
    render = ANT.render if route == "messages" else CHAT.render
    body = render(loop, conversation.tools, CLAUDE, options=options)
    assert "thinking" not in body
    later = [*loop, AssistantText(text="Done.", model=CLAUDE), UserText(text="Next.")]
    assert (
        render(later, conversation.tools, CLAUDE, options=options)["thinking"]["type"] == "enabled"
    )
    with pytest.raises(RenderError, match="minimum thinking budget"):  # still checked
        render(loop, conversation.tools, CLAUDE, options=RequestOptions(reasoning=10))


def test_a_loop_left_without_thinking_replays_no_thinking_blocks_on_chat() -> None:
    """With thinking left out (the loop's last turn did not think), earlier turns' own
    thinking blocks are not sent either: the chat route sends blocks only with thinking on."""
    thought = Reasoning(
        model=CLAUDE, block={"type": "thinking", "thinking": "hm", "signature": "sig-1"}
    )
    log = [
        UserText(text="Read it."),
        AssistantText(text="Reading.", model=CLAUDE),
        thought,
        UserText(text="Again."),
        ToolCall(call_id="call-1", tool="read_file", arguments={}),
        ToolResult(call_id="call-1", output="text"),
    ]
    options = RequestOptions(reasoning="low")
    body = CHAT.render(log, [READ_FILE], CLAUDE, options=options)
    judge_chat_body(body)
    assert "thinking" not in body
    assert all("thinking_blocks" not in message for message in body["messages"])
    assert CHAT.render_bytes(log, [READ_FILE], CLAUDE, options=options) == (
        CHAT.render_request(log, [READ_FILE], CLAUDE, options=options)
        .model_dump_json(exclude_none=True)
        .encode()
    )
