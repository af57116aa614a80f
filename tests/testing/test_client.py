"""`ScriptedClient`: the client protocol answered from turns, recording every call."""

from __future__ import annotations

import re

import pytest

from nisse_llm.errors import BudgetExhausted, TruncatedResponse
from nisse_llm.events.canonical import (
    CALL_ID_PATTERN,
    AssistantText,
    Reasoning,
    StoredEvent,
    ToolCall,
    ToolResult,
    ToolSpec,
    Usage,
    UserText,
)
from nisse_llm.testing import (
    AsyncScriptedClient,
    RedactedThinking,
    ScriptedClient,
    ScriptExhausted,
    Thinking,
    Tokens,
    ToolUse,
    reply,
    truncated,
)

READ = ToolSpec(name="read_file", description="Read a file.", parameters={"type": "object"})


def test_replies_become_canonical_events_with_minted_ids() -> None:
    """Text, tool uses and thinking become AssistantText, ToolCall (fresh ids) and Reasoning."""
    client = ScriptedClient(
        [
            reply(
                Thinking("plan", "sig"),
                RedactedThinking("opaque"),
                "Reading.",
                ToolUse("read_file", {"path": "a.py"}, id="toolu_provider"),
                model="claude-x-20250101",
            )
        ]
    )
    events = client.complete([UserText(text="go")], [READ], "claude-x")
    thinking, redacted, text, call = events
    assert thinking == Reasoning(
        model="claude-x",
        response_model="claude-x-20250101",
        block={"type": "thinking", "thinking": "plan", "signature": "sig"},
    )
    assert redacted.block == {"type": "redacted_thinking", "data": "opaque"}  # type: ignore[union-attr]
    assert text == AssistantText(text="Reading.", model="claude-x-20250101")
    assert isinstance(call, ToolCall)
    assert (call.tool, call.arguments) == ("read_file", {"path": "a.py"})
    assert call.call_id != "toolu_provider"
    assert re.fullmatch(CALL_ID_PATTERN, call.call_id)


def test_calls_are_recorded_as_bare_events_and_tool_specs() -> None:
    """Each call keeps the events (unwrapped from StoredEvent), tools, model and system."""
    client = ScriptedClient(["first", "second"])
    log = [StoredEvent.now(0, UserText(text="hi"))]
    client.complete(
        log, [{"name": "read_file", "input_schema": {"type": "object"}}], "gpt-x", system="be brief"
    )
    client.complete(
        [*log, StoredEvent.now(1, AssistantText(text="first", model="gpt-x"))], None, "gpt-y"
    )
    first, second = client.calls
    assert first.events == [UserText(text="hi")]
    assert [t.name for t in first.tools] == ["read_file"]
    assert (first.model, first.system) == ("gpt-x", "be brief")
    assert second.events[-1] == AssistantText(text="first", model="gpt-x")
    assert (second.model, second.tools, second.system) == ("gpt-y", [], None)


def test_a_string_turn_is_a_text_reply_and_empty_text_is_left_out() -> None:
    """A plain string answers as text; whitespace-only text yields no event, as real parsers do."""
    client = ScriptedClient(["hello", reply("  ", ToolUse("ls"))])
    assert client.complete([UserText(text="hi")], None, "m") == [
        AssistantText(text="hello", model="m")
    ]
    (only,) = client.complete([UserText(text="hi")], None, "m")
    assert isinstance(only, ToolCall)


def test_exception_turns_are_raised_as_given() -> None:
    """An exception turn is raised, so agents can be tested against each failure class."""
    refusal = BudgetExhausted("budget gone", status=429)
    client = ScriptedClient([refusal, "after"])
    with pytest.raises(BudgetExhausted) as caught:
        client.complete([UserText(text="hi")], None, "m")
    assert caught.value is refusal
    assert client.complete([UserText(text="hi")], None, "m") == [
        AssistantText(text="after", model="m")
    ]


def test_truncated_reply_raises_truncated_response() -> None:
    """A truncated turn is a failed turn, as through a real client."""
    client = ScriptedClient([truncated("half a pla")])
    with pytest.raises(TruncatedResponse, match="m hit its output limit"):
        client.complete([UserText(text="plan")], None, "m")


def test_running_out_of_turns_is_an_assertion_not_an_llm_error() -> None:
    """An over-eager agent fails the test instead of being handled as a model failure."""
    client = ScriptedClient()
    with pytest.raises(ScriptExhausted, match="no turn left for call 1"):
        client.complete([UserText(text="hi")], None, "m")
    assert len(client.calls) == 1


def test_usage_is_scripted_or_estimated() -> None:
    """``last_usage`` reports scripted token counts, else an estimate."""
    client = ScriptedClient([reply("x", usage=Tokens(input=10, output=2, cache_read=4)), "y" * 40])
    assert client.last_usage is None
    client.complete([UserText(text="hi")], None, "m")
    assert client.last_usage == Usage(input=10, output=2, cache_read=4)
    client.complete([UserText(text="hi")], None, "m")
    assert client.last_usage is not None
    assert client.last_usage.output == 10


def test_add_chains_and_rejects_non_turns() -> None:
    """Turns can be appended later; anything else is a TypeError."""
    with ScriptedClient() as client:
        client.add("one").add(reply("two"))
        assert [client.complete([UserText(text="q")], None, "m")[0].text for _ in range(2)] == [
            "one",
            "two",
        ]  # type: ignore[union-attr]
        with pytest.raises(TypeError, match="not a client turn"):
            client.add(42)  # type: ignore[arg-type]


async def test_async_twin_behaves_the_same() -> None:
    """`AsyncScriptedClient` answers, raises and records like the sync client."""
    async with AsyncScriptedClient([reply(ToolUse("read_file", {"path": "x"})), "done"]) as client:
        (call,) = await client.complete([UserText(text="go")], [READ], "gpt-x")
        assert isinstance(call, ToolCall)
        log = [UserText(text="go"), call, ToolResult(call_id=call.call_id, output="data")]
        assert await client.complete(log, [READ], "gpt-x") == [
            AssistantText(text="done", model="gpt-x")
        ]
        assert client.calls[1].events == log
        assert client.last_usage is not None
