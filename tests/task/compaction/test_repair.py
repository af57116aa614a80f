"""repair: a corrupt log becomes one every route accepts, and each change is listed."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings

from nisse_llm.events.canonical import AssistantText, CanonicalEvent, ToolCall, ToolResult, UserText
from nisse_llm.render._wording import INTERRUPTED_TEXT
from nisse_llm.render.anthropic_messages import AnthropicMessagesRenderer
from nisse_llm.render.openai_chat import OpenAIChatRenderer
from nisse_llm.task.compaction import LogFix, repair
from tests.render.anthropic_checker import anthropic_violations, official_violations
from tests.render.openai_checker import check_chat_body
from tests.render.test_openai_official import judge_official
from tests.strategies import MODELS, logs
from tests.task.compaction.strategies import corrupted_logs

ANT = AnthropicMessagesRenderer()
CHAT = OpenAIChatRenderer()
PROPERTY = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(corrupted_logs())
def test_a_repaired_log_renders_on_every_route_and_needs_no_second_repair(
    events: list[CanonicalEvent],
) -> None:
    """Whatever duplicates and orphans a log holds, the repaired log passes every judge, and repairing it again changes nothing."""
    fixed, fixes = repair(events)
    assert repair(fixed) == (fixed, [])
    assert all(isinstance(fix, LogFix) for fix in fixes)
    for model in MODELS[:2]:
        body = ANT.render(fixed, None, model)
        assert anthropic_violations(body) == []
        assert official_violations(body) == []
    chat = json.loads(CHAT.render_bytes(fixed, None, "gpt-4o-mini"))
    check_chat_body(chat)
    judge_official(chat)


@PROPERTY
@given(logs())
def test_answering_dangling_calls_leaves_the_bodies_byte_identical(
    events: list[CanonicalEvent],
) -> None:
    """The synthesized interrupted result is the one the renderers send anyway, so the prompt cache survives repair."""
    fixed, fixes = repair(events)
    assert all(fix.kind == "interrupted_result" for fix in fixes)
    assert ANT.render_bytes(fixed, None, MODELS[0]) == ANT.render_bytes(events, None, MODELS[0])
    assert CHAT.render_bytes(fixed, None, "gpt-4o-mini") == CHAT.render_bytes(
        events, None, "gpt-4o-mini"
    )


class _Opaque:
    """A value no JSON encoder takes (a caller's object left in a tool call's arguments)."""

    def __repr__(self) -> str:
        return "<opaque>"


def test_each_kind_of_fix_is_listed_with_where_and_which_call() -> None:
    """A duplicate call, an orphan result, a second result, bad arguments and a dangling call each give one fix."""
    call = ToolCall(call_id="a", tool="run", arguments={"x": 1})
    bad = ToolCall(call_id="b", tool="run", arguments={"s": _Opaque()})
    events: list[CanonicalEvent] = [
        UserText(text="go"),
        call,
        call,
        ToolResult(call_id="zz", output="orphan"),
        ToolResult(call_id="a", output="ok"),
        ToolResult(call_id="a", output="again"),
        bad,
        AssistantText(text="waiting", model="m"),
        UserText(text="next"),
    ]
    fixed, fixes = repair(events)
    assert [(f.kind, f.index, f.call_id) for f in fixes] == [
        ("duplicate_call", 2, "a"),
        ("orphan_result", 3, "zz"),
        ("duplicate_result", 5, "a"),
        ("wrapped_arguments", 6, "b"),
        ("interrupted_result", 6, "b"),
    ]
    wrapped = fixed[3]
    assert isinstance(wrapped, ToolCall)
    assert wrapped.arguments == {"unparsed_arguments": "{'s': <opaque>}"}
    for body in (ANT.render_bytes(fixed, None, "m"), CHAT.render_bytes(fixed, None, "m")):
        assert b"unparsed_arguments" in body
    assert fixed[5] == ToolResult(call_id="b", output=INTERRUPTED_TEXT, is_error=True)
    assert fixed[6] == UserText(text="next")
