"""Properties of prompt-cache breakpoints over arbitrary and long logs, on both routes."""

from __future__ import annotations

import itertools
from typing import Any

import pydantic_core
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nisse_llm.events.canonical import (
    AssistantText,
    CanonicalEvent,
    Reasoning,
    ToolCall,
    ToolResult,
    ToolSpec,
    UserText,
)
from nisse_llm.render._cache import PromptCache
from nisse_llm.render.anthropic_messages import AnthropicMessagesRenderer
from nisse_llm.render.openai_chat import OpenAIChatRenderer
from tests.corpus import MODEL, TOOLS, long_log
from tests.render.anthropic_checker import anthropic_violations, official_violations
from tests.render.cache_markers import (
    chat_marker_problems,
    marker_paths,
    messages_marker_problems,
    prefix_at,
    strip_markers,
    unmark,
)
from tests.render.test_openai_official import judge_official
from tests.strategies import (
    MODELS,
    TOOL_NAMES,
    arguments,
    logs,
    reasoning_blocks,
    texts,
    tool_specs,
)

ANT = AnthropicMessagesRenderer()
CHAT = OpenAIChatRenderer()
PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
policies = st.sampled_from([PromptCache(), PromptCache(ttl="1h")])
#: A long agent loop cut anywhere (a cut may end mid-turn, with a call unanswered).
long_logs = st.integers(1, 40).flatmap(
    lambda turns: st.integers(1, 4 * turns + 1).map(lambda cut: long_log(turns)[:cut])
)


def _bodies(
    events: list[CanonicalEvent],
    tools: list[ToolSpec],
    model: str,
    system: str | None,
    cache: PromptCache | None,
) -> tuple[bytes, bytes]:
    return (
        ANT.render_bytes(events, tools, model, system, cache=cache),
        CHAT.render_bytes(events, tools, model, system, cache=cache),
    )


def _check_marked(
    events: list[CanonicalEvent],
    tools: list[ToolSpec],
    model: str,
    system: str | None,
    cache: PromptCache,
) -> None:
    ant_bytes, chat_bytes = _bodies(events, tools, model, system, cache)
    ant_off, chat_off = _bodies(events, tools, model, system, None)
    ant_body = pydantic_core.from_json(ant_bytes)
    chat_body = pydantic_core.from_json(chat_bytes)
    assert messages_marker_problems(ant_body) == []
    assert chat_marker_problems(chat_body) == []
    assert len(marker_paths(ant_body)) <= 4
    assert len(marker_paths(chat_body)) <= 4
    assert anthropic_violations(ant_body) == []
    assert official_violations(ant_body) == []
    judge_official(strip_markers(chat_body))
    assert unmark(ant_body, route="messages") == pydantic_core.from_json(ant_off)
    assert unmark(chat_body, route="chat") == pydantic_core.from_json(chat_off)
    typed_ant = ANT.render_request(events, tools, model, system, cache=cache)
    typed_chat = CHAT.render_request(events, tools, model, system, cache=cache)
    assert typed_ant.model_dump_json(exclude_none=True).encode() == ant_bytes
    assert typed_chat.model_dump_json(exclude_none=True).encode() == chat_bytes


@PROPERTY
@given(logs(), tool_specs(), st.none() | texts, policies)
def test_any_log_gets_at_most_four_breakpoints_on_markable_blocks(
    events: list[CanonicalEvent], tools: list[ToolSpec], system: str | None, cache: PromptCache
) -> None:
    """For any valid log to an Anthropic model, both routes send at most 4 breakpoints, none on
    an empty or thinking block, keep every API rule and official type, equal the typed dump,
    and are the caching-off body once the markers are undone."""
    _check_marked(events, tools, MODEL, system, cache)


@PROPERTY
@given(long_logs, st.none() | st.just("You are a careful coding agent."), policies)
def test_long_logs_get_at_most_four_breakpoints_on_markable_blocks(
    events: list[CanonicalEvent], system: str | None, cache: PromptCache
) -> None:
    """A long agent loop cut at any event keeps the same breakpoint rules as any log."""
    _check_marked(events, TOOLS, MODEL, system, cache)


@PROPERTY
@given(logs(), tool_specs(), st.sampled_from(MODELS[2:]), st.none() | texts, policies)
def test_other_models_get_byte_identical_bodies(
    events: list[CanonicalEvent],
    tools: list[ToolSpec],
    model: str,
    system: str | None,
    cache: PromptCache,
) -> None:
    """For a model that is not Anthropic's, caching on sends exactly the caching-off bytes."""
    assert _bodies(events, tools, model, system, cache) == _bodies(
        events, tools, model, system, None
    )


@st.composite
def agent_sessions(draw: st.DrawFn) -> tuple[list[CanonicalEvent], list[int]]:
    """A log grown turn by turn, and the lengths at which the agent sent a request: after the
    user's side of each turn (results in any order, user text between them, some calls
    never answered), before the model's next reply."""
    events: list[CanonicalEvent] = [UserText(text=draw(texts.filter(str.strip)))]
    cuts: list[int] = []
    number = 0
    for _ in range(draw(st.integers(1, 6))):
        cuts.append(len(events))
        if draw(st.booleans()):
            block = draw(reasoning_blocks)
            events.append(Reasoning(model=draw(st.sampled_from(MODELS)), block=block))
        for _ in range(draw(st.integers(0, 2))):
            events.append(AssistantText(text=draw(texts), model=MODEL))
        calls: list[str] = []
        for _ in range(draw(st.integers(0, 3))):
            number += 1
            calls.append(f"call-{number}")
            tool = draw(st.sampled_from(TOOL_NAMES))
            events.append(ToolCall(call_id=calls[-1], tool=tool, arguments=draw(arguments)))
        answered = draw(st.permutations(calls))[: draw(st.integers(0, len(calls)))]
        user_side: list[CanonicalEvent] = [
            ToolResult(call_id=call, output=draw(texts), is_error=draw(st.booleans()))
            for call in answered
        ]
        for _ in range(draw(st.integers(0 if user_side else 1, 2))):
            user_side.append(UserText(text=draw(texts)))
        events.extend(draw(st.permutations(user_side)))
    cuts.append(len(events))
    return events, cuts


def _last_marked_block(body: dict[str, Any]) -> tuple[int, int] | None:
    marked = [path for path in marker_paths(body) if path[0] == "messages"]
    if not marked:
        return None
    _, message, _, block = marked[-1]
    assert isinstance(message, int)
    assert isinstance(block, int)
    return message, block


def _check_prefix(
    events: list[CanonicalEvent], cuts: list[int], tools: list[ToolSpec], system: str | None
) -> None:
    for route, renderer in (("messages", ANT), ("chat", CHAT)):
        bodies = [
            renderer.render(events[:cut], tools, MODEL, system, cache=PromptCache()) for cut in cuts
        ]
        for before, after in itertools.pairwise(bodies):
            point = _last_marked_block(before)
            assert point is not None, "a request with content carries a message breakpoint"
            sent = prefix_at(unmark(before, route=route), *point, route=route)
            again = prefix_at(unmark(after, route=route), *point, route=route)
            assert again == sent, f"{route}: turn N's cached prefix is not resent at N+1"
            assert unmark(after, route=route).get("system") == unmark(before, route=route).get(
                "system"
            )


@PROPERTY
@given(agent_sessions(), tool_specs(), st.none() | texts)
def test_what_a_request_marks_is_resent_unchanged_by_the_next(
    session: tuple[list[CanonicalEvent], list[int]], tools: list[ToolSpec], system: str | None
) -> None:
    """For a log growing turn by turn, everything turn N's request sends up to its last
    breakpoint is, markers aside, the start of turn N+1's request (so N+1 reads it from cache)."""
    events, cuts = session
    _check_prefix(events, cuts, tools, system)


def test_a_long_agent_loop_reads_back_each_previous_breakpoint_exactly() -> None:
    """Over a 60-turn loop asked after each user text, each request's prefix through its last
    breakpoint is resent by the next, which marks that very block again (an exact cache hit
    however many blocks the turn added, beyond the API's ~20-block lookback)."""
    events = long_log(60)
    cuts = list(range(1, 4 * 60, 4))
    _check_prefix(events, cuts, TOOLS, "You are a careful coding agent.")
    for route, renderer in (("messages", ANT), ("chat", CHAT)):
        previous: tuple[int, int] | None = None
        for cut in cuts:
            body = renderer.render(events[:cut], TOOLS, MODEL, cache=PromptCache())
            marked = {path[1:] for path in marker_paths(body) if path[0] == "messages"}
            if previous is not None:
                assert (previous[0], "content", previous[1]) in marked, route
            assert len(marker_paths(body)) <= 4
            previous = _last_marked_block(body)
