"""Prompt-cache breakpoints on both routes: corpus snapshots with caching on, official types,
where the markers sit, which models get them, and the byte path with caching on."""

from __future__ import annotations

import json
from typing import Any

import pytest
from syrupy.assertion import SnapshotAssertion
from syrupy.extensions.json import JSONSnapshotExtension

from nisse_llm.events.canonical import (
    AssistantText,
    CanonicalEvent,
    Reasoning,
    ToolCall,
    ToolResult,
    UserText,
)
from nisse_llm.render._cache import PromptCache, is_anthropic_model
from nisse_llm.render.anthropic_messages import TRAILING_PLACEHOLDER, AnthropicMessagesRenderer
from nisse_llm.render.openai_chat import OpenAIChatRenderer
from tests.corpus import CORPUS, MODEL, THINKING, TOOLS, Conversation, corpus, long_log
from tests.render.anthropic_checker import anthropic_violations, official_violations
from tests.render.cache_markers import (
    chat_marker_problems,
    marker_paths,
    messages_marker_problems,
    strip_markers,
    unmark,
)
from tests.render.openai_checker import check_chat_body
from tests.render.test_openai_official import judge_official, judge_schema

ANT = AnthropicMessagesRenderer()
CHAT = OpenAIChatRenderer()
ON = PromptCache()
HOUR = PromptCache(ttl="1h")
EPHEMERAL = {"type": "ephemeral"}


@pytest.fixture
def json_snapshot(snapshot: SnapshotAssertion) -> SnapshotAssertion:
    return snapshot.use_extension(JSONSnapshotExtension)


def _ant(c: Conversation, cache: PromptCache | None = ON, model: str | None = None) -> Any:
    return ANT.render(c.events, c.tools, model or c.model, c.system, cache=cache)


def _chat(c: Conversation, cache: PromptCache | None = ON, model: str | None = None) -> Any:
    return CHAT.render(c.events, c.tools, model or c.model, c.system, max_tokens=1024, cache=cache)


@pytest.mark.parametrize("conversation", corpus(), ids=lambda c: c.name)
def test_messages_route_corpus_snapshot(
    conversation: Conversation, json_snapshot: SnapshotAssertion
) -> None:
    """Each corpus conversation renders for the messages route, caching on, to its reviewed body."""
    assert _ant(conversation) == json_snapshot


@pytest.mark.parametrize("conversation", corpus(), ids=lambda c: c.name)
def test_chat_route_corpus_snapshot(
    conversation: Conversation, json_snapshot: SnapshotAssertion
) -> None:
    """Each corpus conversation renders for the chat route, caching on, to its reviewed body."""
    assert _chat(conversation) == json_snapshot


@pytest.mark.parametrize("conversation", corpus(), ids=lambda c: c.name)
def test_messages_route_bodies_stay_valid_with_markers(conversation: Conversation) -> None:
    """With caching on, every messages body keeps the API rules, validates against the official
    type (which knows cache_control), marks only allowed blocks, and unmarked is the plain body."""
    body = _ant(conversation)
    assert anthropic_violations(body) == []
    assert official_violations(body) == []
    assert messages_marker_problems(body) == []
    assert marker_paths(body), "an Anthropic model's request carries breakpoints"
    assert unmark(body, route="messages") == _ant(conversation, None)


@pytest.mark.parametrize("conversation", corpus(), ids=lambda c: c.name)
def test_chat_route_bodies_stay_valid_with_markers(conversation: Conversation) -> None:
    """The openai SDK's types and OpenAI's schema know no ``cache_control`` (LiteLLM's extension),
    so the body is validated with the markers removed; separately, every marker sits exactly
    where LiteLLM reads one (a text part of a message, the last tool object), and the body
    with its markers undone is the caching-off body."""
    body = _chat(conversation)
    judge_official(strip_markers(body))
    judge_schema(strip_markers(body))
    assert chat_marker_problems(body) == []
    assert marker_paths(body), "an Anthropic model's request carries breakpoints"
    plain = unmark(body, route="chat")
    check_chat_body(plain)
    assert plain == _chat(conversation, None)


@pytest.mark.parametrize("conversation", corpus(), ids=lambda c: c.name)
@pytest.mark.parametrize("cache", [ON, HOUR], ids=["5m", "1h"])
def test_render_bytes_equal_the_typed_dump_with_caching_on(
    conversation: Conversation, cache: PromptCache
) -> None:
    """With markers, both byte paths still equal their typed request's exclude_none dump, twice."""
    args = (conversation.events, conversation.tools, conversation.model, conversation.system)
    for renderer in (ANT, CHAT):
        typed = renderer.render_request(*args, max_tokens=512, cache=cache)
        dumped = typed.model_dump_json(exclude_none=True).encode()
        assert renderer.render_bytes(*args, max_tokens=512, cache=cache) == dumped
        assert renderer.render_bytes(*args, max_tokens=512, cache=cache) == dumped


@pytest.mark.parametrize("model", ["gpt-4o-mini", "openrouter/x-ai/grok-4", "gemini/gemini-2.5"])
@pytest.mark.parametrize("conversation", corpus(), ids=lambda c: c.name)
def test_other_models_get_the_caching_off_body(conversation: Conversation, model: str) -> None:
    """A request to a model that is not Anthropic's is byte-identical with caching on and off."""
    args = (conversation.events, conversation.tools, model, conversation.system)
    for renderer in (ANT, CHAT):
        off = renderer.render_bytes(*args, max_tokens=512)
        assert renderer.render_bytes(*args, max_tokens=512, cache=ON) == off
        assert renderer.render_bytes(*args, max_tokens=512, cache=HOUR) == off


def test_a_disabled_policy_adds_nothing() -> None:
    """``PromptCache(enabled=False)`` renders the caching-off body for an Anthropic model."""
    conversation = CORPUS["multi_round_agent_loop"]
    off = PromptCache(enabled=False)
    assert _ant(conversation, off) == _ant(conversation, None)
    assert _chat(conversation, off) == _chat(conversation, None)


def test_messages_route_marks_tool_system_latest_and_previous_turn() -> None:
    """An agent loop's request marks the last tool, the system text, the last block of the log
    and the last block before the assistant turn that led to it: four breakpoints."""
    body = _ant(CORPUS["multi_round_agent_loop"])
    last = len(body["messages"]) - 1
    assert marker_paths(body) == [
        ("system", 0),
        ("messages", last - 2, "content", 0),
        ("messages", last, "content", 0),
        ("tools", 2),
    ]
    assert body["messages"][last]["content"][0] == {
        "type": "text",
        "text": "Thanks!",
        "cache_control": EPHEMERAL,
    }
    assert body["messages"][last - 2]["content"][0]["type"] == "tool_result"


def test_chat_route_turns_marked_strings_into_one_text_part() -> None:
    """On the chat route the marked user, tool and system messages carry one marked text part,
    and the last tool object carries the marker itself."""
    body = _chat(CORPUS["multi_round_agent_loop"])
    messages = body["messages"]
    assert messages[0]["content"] == [
        {"type": "text", "text": "You are a careful coding agent.", "cache_control": EPHEMERAL}
    ]
    assert messages[-1] == {
        "role": "user",
        "content": [{"type": "text", "text": "Thanks!", "cache_control": EPHEMERAL}],
    }
    assert messages[-3] == {
        "role": "tool",
        "tool_call_id": "call_r4",
        "content": [{"type": "text", "text": "all passed", "cache_control": EPHEMERAL}],
    }
    assert body["tools"][-1]["cache_control"] == EPHEMERAL
    assert len(marker_paths(body)) == 4


def test_one_hour_ttl_is_sent_and_five_minutes_is_left_to_the_default() -> None:
    """``ttl="1h"`` puts ``"ttl": "1h"`` in every marker; ``"5m"`` (the API default) sends none."""
    conversation = CORPUS["multi_round_agent_loop"]
    for render in (_ant, _chat):
        hour = json.dumps(render(conversation, HOUR))
        assert hour.count('"cache_control": {"type": "ephemeral", "ttl": "1h"}') == 4
        five = render(conversation, PromptCache(ttl="5m"))
        assert five == render(conversation, ON)
        assert '"ttl"' not in json.dumps(five)


def test_no_marker_lands_on_thinking_or_an_empty_result() -> None:
    """A user turn whose only result is blank passes its breakpoint back to the call before it,
    and an assistant turn opening with thinking is marked on its last real block."""
    events: list[CanonicalEvent] = [
        UserText(text="Think, then read."),
        Reasoning(model=MODEL, block=THINKING),
        AssistantText(text="Reading.", model=MODEL),
        ToolCall(call_id="c1", tool="read_file", arguments={"path": "a"}),
        ToolResult(call_id="c1", output="   "),
    ]
    body = ANT.render(events, TOOLS, MODEL, cache=ON)
    assert body["messages"][1]["content"][0]["type"] == "thinking"
    assert ("messages", 1, "content", 2) in marker_paths(body)
    assert messages_marker_problems(body) == []
    chat_body = CHAT.render(events, TOOLS, MODEL, cache=ON)
    # The blank tool message is passed over: the assistant text before it is the latest.
    assert [p for p in marker_paths(chat_body) if p[0] == "messages"] == [
        ("messages", 0, "content", 0),
        ("messages", 1, "content", 0),
    ]
    assert chat_marker_problems(chat_body) == []


def test_the_trailing_placeholder_is_never_marked() -> None:
    """A log ending with assistant text marks the assistant's block, not the placeholder that
    the next user text will replace."""
    events: list[CanonicalEvent] = [
        UserText(text="Say something."),
        AssistantText(text="Something.", model=MODEL),
    ]
    body = ANT.render(events, [], MODEL, cache=ON)
    assert body["messages"][-1]["content"] == [{"type": "text", "text": TRAILING_PLACEHOLDER}]
    assert marker_paths(body) == [("messages", 0, "content", 0), ("messages", 1, "content", 0)]


def test_a_long_log_keeps_markers_on_the_last_two_user_turns() -> None:
    """In a 200-turn log the message breakpoints sit on the last user turn and the one before."""
    body = _ant(Conversation("long", long_log(200)))
    paths = [p for p in marker_paths(body) if p[0] == "messages"]
    last = len(body["messages"]) - 1
    assert body["messages"][last]["content"] == [{"type": "text", "text": TRAILING_PLACEHOLDER}]
    # The log ends with assistant text: its block is the latest, the last results the previous.
    assert paths == [("messages", last - 2, "content", 0), ("messages", last - 1, "content", 0)]


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("claude-sonnet-4-5", True),
        ("anthropic/claude-haiku-4-5", True),
        ("bedrock/us.anthropic.claude-sonnet-4-5-v1:0", True),
        ("vertex_ai/claude-opus-4-1@20250805", True),
        ("openrouter/anthropic/claude-sonnet-4.5", True),
        ("gpt-4o-mini", False),
        ("openai/gpt-4o", False),
        ("bedrock/amazon.nova-pro-v1:0", False),
        ("openrouter/x-ai/grok-4", False),
        ("my-claude-alias", False),
    ],
)
def test_which_models_are_anthropic(model: str, expected: bool) -> None:
    """Passthrough prefixes and LiteLLM's routes to Claude models count as Anthropic; others do not."""
    assert is_anthropic_model(model) is expected


def test_the_policy_follows_configured_passthrough_prefixes() -> None:
    """A model that takes the passthrough by a configured prefix gets breakpoints on both routes."""
    conversation = CORPUS["system_prompt"]
    policy = PromptCache(prefixes=("sonnet-",))
    assert marker_paths(_ant(conversation, policy, model="sonnet-latest"))
    assert marker_paths(_chat(conversation, policy, model="sonnet-latest"))
    assert not marker_paths(_ant(conversation, ON, model="sonnet-latest"))
