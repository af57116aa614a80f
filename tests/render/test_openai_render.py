"""The chat route's renderer: corpus snapshots, each render rule, byte identity and the memo."""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

import pytest
from syrupy.assertion import SnapshotAssertion
from syrupy.extensions.json import JSONSnapshotExtension

from nisse_llm.errors import RenderError
from nisse_llm.events.canonical import (
    AssistantText,
    CanonicalEvent,
    Reasoning,
    StoredEvent,
    ToolCall,
    ToolResult,
    UserText,
)
from nisse_llm.render import Renderer
from nisse_llm.render import openai_chat as chat
from nisse_llm.render.openai_chat import (
    INTERRUPTED_RESULT,
    STUB_TOOL_DESCRIPTION,
    TOOL_ERROR_PREFIX,
    OpenAIChatRenderer,
)
from tests.corpus import CORPUS, MODEL, READ_FILE, THINKING, TOOLS, Conversation, corpus, long_log
from tests.render.openai_checker import check_against_log, check_chat_body

RENDERER: Renderer = OpenAIChatRenderer()
CHAT = OpenAIChatRenderer()


@pytest.fixture
def json_snapshot(snapshot: SnapshotAssertion) -> SnapshotAssertion:
    return snapshot.use_extension(JSONSnapshotExtension)


@pytest.fixture
def fresh_progress() -> Iterator[None]:
    """Run with an empty prefix cache, so a test sees a first render."""
    CHAT.forget()
    yield
    CHAT.forget()


def _render(conversation: Conversation) -> dict[str, Any]:
    return CHAT.render(
        conversation.events, conversation.tools, conversation.model, conversation.system
    )


def _typed_dump(conversation: Conversation, **options: Any) -> bytes:
    request = CHAT.render_request(
        conversation.events, conversation.tools, conversation.model, conversation.system, **options
    )
    return request.model_dump_json(exclude_none=True).encode()


@pytest.mark.parametrize("conversation", corpus(), ids=lambda c: c.name)
def test_corpus_snapshot(conversation: Conversation, json_snapshot: SnapshotAssertion) -> None:
    """Each corpus conversation renders to its reviewed body."""
    assert _render(conversation) == json_snapshot


@pytest.mark.parametrize("conversation", corpus(), ids=lambda c: c.name)
def test_corpus_bodies_pass_the_checker(conversation: Conversation) -> None:
    """Every corpus body keeps the pairing rules and loses nothing of its log."""
    body = _render(conversation)
    check_chat_body(body)
    check_against_log(body, conversation.events, conversation.system)


@pytest.mark.parametrize("conversation", corpus(), ids=lambda c: c.name)
@pytest.mark.parametrize("max_tokens", [None, 512])
def test_render_bytes_equals_the_typed_dump(
    conversation: Conversation, max_tokens: int | None
) -> None:
    """The memoised bytes are exactly the typed request's ``model_dump_json(exclude_none=True)``."""
    for _ in range(2):  # the second render comes from the caches
        got = CHAT.render_bytes(
            conversation.events,
            conversation.tools,
            conversation.model,
            conversation.system,
            max_tokens=max_tokens,
        )
        assert got == _typed_dump(conversation, max_tokens=max_tokens)


@pytest.mark.parametrize("conversation", corpus(), ids=lambda c: c.name)
def test_every_prefix_of_a_growing_log_renders_like_the_typed_path(
    conversation: Conversation, fresh_progress: None
) -> None:
    """Resuming from a cached prefix gives the same body (or error) as rendering from scratch."""
    for end in range(1, len(conversation.events) + 1):
        events = conversation.events[:end]
        try:
            expected: bytes | str = (
                CHAT.render_request(events, conversation.tools, MODEL)
                .model_dump_json(exclude_none=True)
                .encode()
            )
        except RenderError as exc:
            expected = str(exc)
        try:
            got: bytes | str = CHAT.render_bytes(events, conversation.tools, MODEL)
        except RenderError as exc:
            got = str(exc)
        assert got == expected


def test_render_returns_the_decoded_bytes() -> None:
    """``render`` is ``json.loads`` of ``render_bytes``, a fresh dict each call."""
    conversation = CORPUS["multi_round_agent_loop"]
    body = _render(conversation)
    assert body == json.loads(
        CHAT.render_bytes(conversation.events, conversation.tools, MODEL, conversation.system)
    )
    body["max_tokens"] = 1
    assert "max_tokens" not in _render(conversation)


def test_system_prompt_is_the_first_message() -> None:
    """A system prompt is sent as the first message; a blank one is left out."""
    body = _render(CORPUS["system_prompt"])
    assert body["messages"][0] == {
        "role": "system",
        "content": "You are a careful coding agent. Answer briefly.",
    }
    blank = CHAT.render([UserText(text="hi")], None, MODEL, " \n")
    assert blank["messages"] == [{"role": "user", "content": "hi"}]


def test_assistant_message_carries_text_and_all_calls() -> None:
    """One turn is one assistant message with its text and every call, arguments as JSON text."""
    events: list[CanonicalEvent] = [
        UserText(text="go"),
        AssistantText(text="Reading both.", model=MODEL),
        ToolCall(call_id="c1", tool="read_file", arguments={"path": "a.py"}),
        ToolCall(call_id="c2", tool="read_file", arguments={"path": "b.py", "n": [1, None]}),
        ToolResult(call_id="c1", output="A"),
        ToolResult(call_id="c2", output="B"),
    ]
    messages = CHAT.render(events, TOOLS, MODEL)["messages"]
    assert messages[1] == {
        "role": "assistant",
        "content": "Reading both.",
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "read_file", "arguments": '{"path":"a.py"}'},
            },
            {
                "id": "c2",
                "type": "function",
                "function": {"name": "read_file", "arguments": '{"path":"b.py","n":[1,null]}'},
            },
        ],
    }
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "tool"]


def test_texts_of_one_turn_are_joined() -> None:
    """Several texts of one turn (also after its call) become one content, blank-line joined."""
    events: list[CanonicalEvent] = [
        UserText(text="go"),
        AssistantText(text="First.", model=MODEL),
        ToolCall(call_id="c1", tool="read_file", arguments={}),
        AssistantText(text="Second.", model=MODEL),
        ToolResult(call_id="c1", output="A"),
    ]
    assistant = CHAT.render(events, TOOLS, MODEL)["messages"][1]
    assert assistant["content"] == "First.\n\nSecond."


def test_results_are_moved_to_directly_after_their_call() -> None:
    """Results answer their calls in call order, before user text that arrived while tools ran."""
    out_of_order = _render(CORPUS["results_out_of_order"])["messages"]
    assert [(m["role"], m.get("tool_call_id")) for m in out_of_order] == [
        ("user", None),
        ("assistant", None),
        ("tool", "call_a"),
        ("tool", "call_b"),
    ]
    while_running = _render(CORPUS["user_text_while_tools_run"])["messages"]
    assert [m["role"] for m in while_running] == ["user", "assistant", "tool", "user"]
    assert while_running[3]["content"] == "Also, skip the slow ones."


def test_a_result_after_later_turns_is_moved_up() -> None:
    """A result that arrives turns after its call is still sent right after the call."""
    events: list[CanonicalEvent] = [
        UserText(text="go"),
        ToolCall(call_id="slow", tool="run_tests", arguments={}),
        UserText(text="meanwhile"),
        ToolCall(call_id="fast", tool="read_file", arguments={}),
        ToolResult(call_id="fast", output="F"),
        ToolResult(call_id="slow", output="S"),
    ]
    messages = CHAT.render(events, TOOLS, MODEL)["messages"]
    assert [(m["role"], m.get("tool_call_id"), m.get("content")) for m in messages[1:]] == [
        ("assistant", None, None),
        ("tool", "slow", "S"),
        ("user", None, "meanwhile"),
        ("assistant", None, None),
        ("tool", "fast", "F"),
    ]


def test_unanswered_call_gets_a_synthetic_interrupted_result() -> None:
    """A call with no result is answered by a fixed error text saying it was interrupted."""
    messages = _render(CORPUS["interrupted_call"])["messages"]
    assert messages[-1] == {
        "role": "tool",
        "tool_call_id": "call_lost",
        "content": INTERRUPTED_RESULT,
    }
    assert INTERRUPTED_RESULT.startswith(TOOL_ERROR_PREFIX)
    assert "interrupted" in INTERRUPTED_RESULT
    resumed = _render(CORPUS["interrupted_then_resumed"])["messages"]
    assert [m["role"] for m in resumed] == ["user", "assistant", "tool", "user"]
    assert resumed[2]["content"] == INTERRUPTED_RESULT


def test_tool_errors_carry_the_fixed_prefix() -> None:
    """A failed tool run's output is sent behind the documented prefix; a success is verbatim."""
    messages = _render(CORPUS["mixed_error_and_success"])["messages"]
    assert TOOL_ERROR_PREFIX == "[tool error] "
    assert messages[2]["content"] == "A = 1"
    assert messages[3]["content"] == "[tool error] No such file"


@pytest.mark.parametrize(
    ("events", "message"),
    [
        (
            [UserText(text="x"), ToolResult(call_id="ghost", output="?")],
            "tool result for 'ghost' has no earlier tool call in the log",
        ),
        (
            [
                UserText(text="x"),
                ToolResult(call_id="early", output="?"),
                ToolCall(call_id="early", tool="t", arguments={}),
            ],
            "tool result for 'early' has no earlier tool call in the log",
        ),
        (
            [
                ToolCall(call_id="c", tool="t", arguments={}),
                ToolResult(call_id="c", output="1"),
                ToolResult(call_id="c", output="2"),
            ],
            "tool call 'c' has two results in the log",
        ),
        (
            [
                ToolCall(call_id="c", tool="t", arguments={}),
                ToolResult(call_id="c", output="1"),
                ToolCall(call_id="c", tool="t", arguments={}),
            ],
            "tool call id 'c' is used twice in the log",
        ),
    ],
    ids=["orphan", "result_before_call", "two_results", "id_reused"],
)
def test_corrupt_logs_raise_render_error(events: list[CanonicalEvent], message: str) -> None:
    """A result without an earlier call, a second result or a reused call id is a RenderError."""
    with pytest.raises(RenderError) as typed:
        CHAT.render_request(events, TOOLS, MODEL)
    with pytest.raises(RenderError) as encoded:
        CHAT.render_bytes(events, TOOLS, MODEL)
    assert str(typed.value) == str(encoded.value) == message


@pytest.mark.parametrize(
    "events",
    [
        [],
        [UserText(text=" "), AssistantText(text="", model=MODEL)],
        [Reasoning(model=MODEL, block=THINKING)],
    ],
    ids=["empty", "blank_text_only", "reasoning_only"],
)
def test_a_log_with_nothing_to_send_is_a_render_error(events: list[CanonicalEvent]) -> None:
    """An empty log, or one of only blank text and reasoning, raises RenderError."""
    with pytest.raises(RenderError, match="the log has nothing to send"):
        CHAT.render_bytes(events, None, MODEL, "system prompt")
    with pytest.raises(RenderError, match="the log has nothing to send"):
        CHAT.render_request(events, None, MODEL)


def test_blank_text_is_left_out() -> None:
    """Blank user and assistant texts are dropped; an assistant message left empty is omitted."""
    messages = _render(CORPUS["empty_and_whitespace_text"])["messages"]
    assert messages == [
        {"role": "user", "content": "The real question."},
        {"role": "assistant", "content": "An answer."},
        {"role": "user", "content": "Thanks."},
    ]


def test_reasoning_is_never_sent() -> None:
    """Reasoning from any model is left out; a reasoning-only turn's call is still sent."""
    for name in ("reasoning_same_model", "reasoning_other_model", "reasoning_only_turn"):
        encoded = CHAT.render_bytes(CORPUS[name].events, TOOLS, MODEL)
        assert THINKING["signature"].encode() not in encoded
        assert THINKING["thinking"].encode() not in encoded
    messages = _render(CORPUS["reasoning_only_turn"])["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "tool"]
    assert "content" not in messages[1]


def test_calls_without_tools_get_stub_declarations_and_tool_choice_none() -> None:
    """With calls in the log and no tools passed, each used tool is a stub and tool_choice is none."""
    body = _render(CORPUS["tools_in_log_none_passed"])
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "read_file",
                "description": STUB_TOOL_DESCRIPTION,
                "parameters": {"type": "object"},
            },
        }
    ]
    assert body["tool_choice"] == "none"


def test_tools_passed_are_declared_and_no_tools_means_no_key() -> None:
    """Passed tools are declared in order with tool_choice left to the API; none and no calls: no key."""
    body = _render(CORPUS["single_tool_call"])
    assert [tool["function"]["name"] for tool in body["tools"]] == ["read_file", "run_tests"]
    assert body["tools"][0]["function"]["parameters"] == READ_FILE.parameters
    assert "tool_choice" not in body
    plain = _render(CORPUS["plain_chat"])
    assert set(plain) == {"model", "messages"}


def test_max_tokens_is_sent_when_given() -> None:
    """``max_tokens`` appears only when given, and a ceiling below 1 is a RenderError."""
    events = [UserText(text="hi")]
    assert CHAT.render(events, None, MODEL, max_tokens=2048)["max_tokens"] == 2048
    assert "max_tokens" not in CHAT.render(events, None, MODEL)
    with pytest.raises(RenderError, match="max_tokens must be a positive number, not 0"):
        CHAT.render_bytes(events, None, MODEL, max_tokens=0)


def test_stored_events_and_dict_tools_render_like_bare_events_and_specs() -> None:
    """A log of StoredEvent records and tools as plain dicts give the same body."""
    conversation = CORPUS["multi_round_agent_loop"]
    stored = [
        StoredEvent(seq=n, at=datetime(2026, 1, 1, tzinfo=UTC), event=event)
        for n, event in enumerate(conversation.events)
    ]
    openai_dicts = [
        {"type": "function", "function": spec.model_dump()} for spec in conversation.tools
    ]
    anthropic_dicts = [
        {"name": s.name, "description": s.description, "input_schema": s.parameters}
        for s in conversation.tools
    ]
    expected = _typed_dump(conversation)
    system = conversation.system
    assert CHAT.render_bytes(stored, openai_dicts, MODEL, system) == expected
    assert CHAT.render_bytes(stored, anthropic_dicts, MODEL, system) == expected


def test_a_second_render_encodes_no_event(
    monkeypatch: pytest.MonkeyPatch, fresh_progress: None
) -> None:
    """Re-rendering a log encodes none of its events again, even with the prefix cache emptied."""
    encoded: list[object] = []
    original = chat._map_fragment

    def counting(item: object) -> Any:
        encoded.append(item)
        return original(item)

    monkeypatch.setattr(chat, "_map_fragment", counting)
    events = long_log(30)
    tools = [spec.model_copy() for spec in TOOLS]
    first = CHAT.render_bytes(events, tools, MODEL)
    assert len(encoded) == len(events) + len(tools)
    encoded.clear()
    assert CHAT.render_bytes(events, tools, MODEL) == first
    CHAT.forget()
    assert CHAT.render_bytes(events, tools, MODEL) == first
    assert encoded == []


def test_a_grown_log_encodes_only_its_new_events(
    monkeypatch: pytest.MonkeyPatch, fresh_progress: None
) -> None:
    """Rendering a log grown by one turn encodes just that turn's events."""
    encoded: list[object] = []
    original = chat._map_fragment

    def counting(item: object) -> Any:
        encoded.append(item)
        return original(item)

    monkeypatch.setattr(chat, "_map_fragment", counting)
    events = long_log(20)
    CHAT.render_bytes(events, TOOLS, MODEL)
    turn: list[CanonicalEvent] = [
        UserText(text="one more"),
        ToolCall(call_id="call_more", tool="read_file", arguments={"path": "x"}),
        ToolResult(call_id="call_more", output="X"),
    ]
    encoded.clear()
    grown = [*events, *turn]
    assert CHAT.render_bytes(grown, TOOLS, MODEL) == (
        CHAT.render_request(grown, TOOLS, MODEL).model_dump_json(exclude_none=True).encode()
    )
    assert encoded == turn


def test_a_cached_prefix_is_matched_by_identity_not_equality(fresh_progress: None) -> None:
    """Two logs sharing a last event but holding equal-yet-different arguments render apart."""
    last = ToolResult(call_id="c", output="done")
    ints: list[CanonicalEvent] = [
        UserText(text="go"),
        ToolCall(call_id="c", tool="t", arguments={"n": 1}),
        last,
    ]
    floats: list[CanonicalEvent] = [
        ints[0],
        ToolCall(call_id="c", tool="t", arguments={"n": 1.0}),
        last,
    ]
    assert ints[1] == floats[1]
    assert b'"{\\"n\\":1}"' in CHAT.render_bytes(ints, None, MODEL)
    assert b'"{\\"n\\":1.0}"' in CHAT.render_bytes(floats, None, MODEL)


def test_tools_with_one_name_are_a_render_error() -> None:
    """Two tools sharing a name cannot be declared."""
    with pytest.raises(RenderError, match="two tools are named 'read_file'"):
        CHAT.render_bytes([UserText(text="hi")], [READ_FILE, READ_FILE], MODEL)
    with pytest.raises(RenderError, match="two tools are named 'read_file'"):
        CHAT.render_request([UserText(text="hi")], [READ_FILE, READ_FILE], MODEL)


def test_a_schema_without_type_is_declared_as_an_object() -> None:
    """A parameters schema with no ``type`` is sent with ``"type": "object"`` added."""
    spec = {"name": "ping", "parameters": {"properties": {"host": {"type": "string"}}}}
    (tool,) = CHAT.render([UserText(text="hi")], [spec], MODEL)["tools"]
    assert tool == {
        "type": "function",
        "function": {
            "name": "ping",
            "parameters": {"type": "object", "properties": {"host": {"type": "string"}}},
        },
    }


def test_threads_rendering_one_growing_log_all_get_the_right_bodies(fresh_progress: None) -> None:
    """Concurrent renders of prefixes of one log share the caches without corrupting a body."""
    events = long_log(40)
    ends = [end for end in range(1, len(events) + 1) for _ in range(3)]
    expected = {
        end: CHAT.render_request(events[:end], TOOLS, MODEL)
        .model_dump_json(exclude_none=True)
        .encode()
        for end in set(ends)
    }
    with ThreadPoolExecutor(max_workers=8) as pool:
        got = list(pool.map(lambda end: (end, CHAT.render_bytes(events[:end], TOOLS, MODEL)), ends))
    assert all(body == expected[end] for end, body in got)
