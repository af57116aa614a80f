"""The messages route's renderer: corpus snapshots, official types, each render rule, bytes, memo."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
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
    ToolSpec,
    UserText,
)
from nisse_llm.render import Renderer
from nisse_llm.render import anthropic_messages as ant
from nisse_llm.render.anthropic_messages import (
    EMPTY_ERROR_OUTPUT,
    INTERRUPTED_RESULT,
    LEADING_PLACEHOLDER,
    STUB_TOOL_DESCRIPTION,
    TRAILING_PLACEHOLDER,
    AnthropicMessagesRenderer,
)
from nisse_llm.wire.anthropic_messages import AnthropicMessagesRequest
from tests.corpus import (
    MODEL,
    OTHER_MODEL,
    READ_FILE,
    REDACTED,
    THINKING,
    TOOLS,
    Conversation,
    corpus,
    long_log,
)
from tests.render.anthropic_checker import (
    anthropic_log_violations,
    anthropic_violations,
    official_violations,
)

RENDERER: Renderer = AnthropicMessagesRenderer()
ANT = AnthropicMessagesRenderer()
REQUESTS = Path(__file__).parent.parent / "fixtures" / "conformance" / "requests"


@pytest.fixture
def json_snapshot(snapshot: SnapshotAssertion) -> SnapshotAssertion:
    return snapshot.use_extension(JSONSnapshotExtension)


@pytest.fixture
def fresh_caches() -> Iterator[None]:
    """Run with empty prefix and fragment caches, so a test sees a first render."""
    ANT.forget()
    yield
    ANT.forget()


def _render(conversation: Conversation) -> dict[str, Any]:
    return ANT.render(
        conversation.events, conversation.tools, conversation.model, conversation.system
    )


def _body(events: list[CanonicalEvent], tools: list[ToolSpec] | None = None) -> dict[str, Any]:
    return ANT.render(events, TOOLS if tools is None else tools, MODEL)


def _call(call_id: str, tool: str = "read_file") -> ToolCall:
    return ToolCall(call_id=call_id, tool=tool, arguments={"path": f"{call_id}.py"})


def _texts(message: dict[str, Any]) -> list[str]:
    return [block["text"] for block in message["content"] if block["type"] == "text"]


def _kinds(message: dict[str, Any]) -> list[str]:
    return [block["type"] for block in message["content"]]


@pytest.mark.parametrize("conversation", corpus(), ids=lambda c: c.name)
def test_corpus_snapshot(conversation: Conversation, json_snapshot: SnapshotAssertion) -> None:
    """Each corpus conversation renders to its reviewed body."""
    assert _render(conversation) == json_snapshot


@pytest.mark.parametrize("conversation", corpus(), ids=lambda c: c.name)
def test_corpus_bodies_pass_the_checker(conversation: Conversation) -> None:
    """Every corpus body keeps the API's pairing rules and loses nothing of its log."""
    body = _render(conversation)
    assert anthropic_violations(body) == []
    assert anthropic_log_violations(body, conversation.events, conversation.model) == []


@pytest.mark.parametrize("conversation", corpus(), ids=lambda c: c.name)
def test_corpus_bodies_validate_against_the_official_type(conversation: Conversation) -> None:
    """Every corpus body is a MessageCreateParamsNonStreaming with no unknown key anywhere."""
    assert official_violations(_render(conversation)) == []


@pytest.mark.parametrize("conversation", corpus(), ids=lambda c: c.name)
@pytest.mark.parametrize("max_tokens", [None, 512])
def test_render_bytes_equal_the_typed_dump(
    conversation: Conversation, max_tokens: int | None
) -> None:
    """The byte path produces exactly the typed request's exclude_none dump, twice over."""
    args = (conversation.events, conversation.tools, conversation.model, conversation.system)
    typed = ANT.render_request(*args, max_tokens=max_tokens).model_dump_json(exclude_none=True)
    assert ANT.render_bytes(*args, max_tokens=max_tokens) == typed.encode()
    assert ANT.render_bytes(*args, max_tokens=max_tokens) == typed.encode()
    assert json.loads(typed) == ANT.render(*args, max_tokens=max_tokens)


def test_official_judge_rejects_unknown_nested_keys() -> None:
    """The official-type judge refuses an unknown key inside a block, a nested object and a tool."""
    body = _body([UserText(text="Read it."), _call("c1"), ToolResult(call_id="c1", output="ok")])
    assert official_violations(body) == []
    in_block = copy.deepcopy(body)
    in_block["messages"][2]["content"][0]["bogus"] = 1
    assert any("bogus: Extra inputs are not permitted" in v for v in official_violations(in_block))
    in_nested = copy.deepcopy(body)
    in_nested["messages"][1]["content"][0]["cache_control"] = {"type": "ephemeral", "x": 1}
    assert official_violations(in_nested) != []
    in_tool = copy.deepcopy(body)
    in_tool["tools"][0]["bogus"] = 1
    assert "0.ToolParam.bogus: Extra inputs are not permitted" in official_violations(in_tool)


@pytest.mark.parametrize("path", sorted(REQUESTS.glob("req_ant_*_200.json")), ids=lambda p: p.stem)
def test_accepted_request_controls_pass_both_judges(path: Path) -> None:
    """Bodies the live API accepted validate against the official type and pass the checker."""
    body = json.loads(path.read_bytes())
    assert official_violations(body) == []
    assert anthropic_violations(body) == []


def test_checker_rejects_the_orphan_result_control() -> None:
    """The body the live API refused for an orphan tool_result fails the checker on that rule."""
    body = json.loads((REQUESTS / "req_ant_orphan_tool_result_400.json").read_bytes())
    problems = anthropic_violations(body)
    assert "messages.1: roles must alternate" in problems
    assert any("unexpected `tool_use_id` found in `tool_result` blocks" in p for p in problems)


def test_system_goes_top_level_and_max_tokens_is_always_sent() -> None:
    """The system prompt is the top-level field; max_tokens defaults to the SDK ceiling."""
    body = ANT.render([UserText(text="Hi")], None, MODEL, "Be brief.")
    assert body["system"] == "Be brief."
    assert body["max_tokens"] == 16384
    assert [m["role"] for m in body["messages"]] == ["user"]
    assert "system" not in ANT.render([UserText(text="Hi")], None, MODEL, "  \n")
    assert ANT.render([UserText(text="Hi")], None, MODEL, max_tokens=None)["max_tokens"] == 16384
    assert ANT.render([UserText(text="Hi")], None, MODEL, max_tokens=7)["max_tokens"] == 7


def test_non_positive_max_tokens_is_a_render_error() -> None:
    """A ceiling below one token cannot be sent."""
    with pytest.raises(RenderError, match="max_tokens must be a positive number, not 0"):
        ANT.render([UserText(text="Hi")], None, MODEL, max_tokens=0)


def test_adjacent_same_role_content_merges_into_one_message() -> None:
    """Consecutive user texts and consecutive assistant texts become one message each."""
    body = _body(
        [
            UserText(text="a"),
            UserText(text="b"),
            AssistantText(text="c", model=MODEL),
            AssistantText(text="d", model=MODEL),
            UserText(text="e"),
        ]
    )
    assert [(m["role"], _texts(m)) for m in body["messages"]] == [
        ("user", ["a", "b"]),
        ("assistant", ["c", "d"]),
        ("user", ["e"]),
    ]


def test_assistant_first_log_gets_a_leading_placeholder() -> None:
    """A log that opens with assistant text is preceded by the documented user placeholder."""
    body = _body([AssistantText(text="Resumed.", model=MODEL), UserText(text="Go on.")])
    assert body["messages"][0] == {
        "role": "user",
        "content": [{"type": "text", "text": LEADING_PLACEHOLDER}],
    }
    assert body["messages"][1]["role"] == "assistant"


def test_log_ending_with_assistant_text_gets_a_trailing_placeholder() -> None:
    """A log that ends with assistant text is followed by a user placeholder (no prefill)."""
    body = _body([UserText(text="Hi"), AssistantText(text="Hello. ", model=MODEL)])
    assert body["messages"][-1] == {
        "role": "user",
        "content": [{"type": "text", "text": TRAILING_PLACEHOLDER}],
    }


def test_results_open_the_next_user_message_in_call_order() -> None:
    """All results of a turn, whatever their log order, come first and in call order."""
    body = _body(
        [
            UserText(text="Read both."),
            _call("c1"),
            _call("c2"),
            ToolResult(call_id="c2", output="two"),
            ToolResult(call_id="c1", output="one"),
        ]
    )
    answer = body["messages"][2]
    assert answer["role"] == "user"
    assert [(b["tool_use_id"], b["content"]) for b in answer["content"]] == [
        ("c1", "one"),
        ("c2", "two"),
    ]


def test_user_text_that_arrived_while_tools_ran_follows_the_results() -> None:
    """Text written before the results landed is sent after them, in the same message."""
    body = _body(
        [
            UserText(text="Run."),
            _call("c1"),
            UserText(text="Skip slow ones."),
            ToolResult(call_id="c1", output="ok"),
        ]
    )
    assert _kinds(body["messages"][2]) == ["tool_result", "text"]
    assert _texts(body["messages"][2]) == ["Skip slow ones."]


def test_results_arriving_after_later_turns_are_moved_up() -> None:
    """A result logged after the assistant spoke again is moved to right after its call."""
    body = _body(
        [
            UserText(text="Run."),
            _call("c1"),
            UserText(text="Still there?"),
            AssistantText(text="Waiting.", model=MODEL),
            ToolResult(call_id="c1", output="done"),
            AssistantText(text="Finished.", model=MODEL),
        ]
    )
    roles = [(m["role"], _kinds(m)) for m in body["messages"]]
    assert roles == [
        ("user", ["text"]),
        ("assistant", ["tool_use"]),
        ("user", ["tool_result", "text"]),
        ("assistant", ["text", "text"]),
        ("user", ["text"]),
    ]


def test_unanswered_call_gets_a_synthetic_error_result() -> None:
    """A call with no result is answered by an is_error result saying it was interrupted."""
    body = _body([UserText(text="Read."), _call("lost")])
    assert body["messages"][-1]["content"] == [
        {
            "type": "tool_result",
            "tool_use_id": "lost",
            "content": INTERRUPTED_RESULT,
            "is_error": True,
        }
    ]


def test_tool_errors_are_carried_natively() -> None:
    """A failed tool run keeps its output and sets is_error; blank failures get the note."""
    body = _body(
        [
            UserText(text="Run."),
            _call("c1"),
            _call("c2"),
            _call("c3"),
            ToolResult(call_id="c1", output="boom", is_error=True),
            ToolResult(call_id="c2", output="  ", is_error=True),
            ToolResult(call_id="c3", output=""),
        ]
    )
    assert body["messages"][2]["content"] == [
        {"type": "tool_result", "tool_use_id": "c1", "content": "boom", "is_error": True},
        {
            "type": "tool_result",
            "tool_use_id": "c2",
            "content": EMPTY_ERROR_OUTPUT,
            "is_error": True,
        },
        {"type": "tool_result", "tool_use_id": "c3", "is_error": False},
    ]


def test_result_without_its_call_is_a_render_error() -> None:
    """A result whose call is not earlier in the log is a corrupt log."""
    with pytest.raises(RenderError, match="the tool result for 'ghost' has no earlier tool call"):
        _body([UserText(text="Hi"), ToolResult(call_id="ghost", output="?")])
    with pytest.raises(RenderError, match="has no earlier tool call"):
        _body([UserText(text="Hi"), ToolResult(call_id="c1", output="?"), _call("c1")])


def test_duplicate_ids_are_render_errors() -> None:
    """Two calls with one id, or two results for one call, are corrupt logs."""
    with pytest.raises(RenderError, match="two tool calls share the id 'c1'"):
        _body([UserText(text="Hi"), _call("c1"), _call("c1")])
    with pytest.raises(RenderError, match="two tool results answer 'c1'"):
        _body(
            [
                UserText(text="Hi"),
                _call("c1"),
                ToolResult(call_id="c1", output="a"),
                ToolResult(call_id="c1", output="b"),
            ]
        )


def test_empty_log_and_blank_log_are_render_errors() -> None:
    """Nothing to send is an error, never an empty messages list."""
    with pytest.raises(RenderError, match="cannot render an empty log"):
        _body([])
    with pytest.raises(RenderError, match="nothing to send"):
        _body([UserText(text=" "), Reasoning(model=OTHER_MODEL, block=THINKING)])


def test_blank_text_is_left_out_and_neighbours_merge() -> None:
    """Empty and whitespace texts vanish; the user texts around a vanished reply merge."""
    body = _body(
        [
            UserText(text="one"),
            AssistantText(text=" \n", model=MODEL),
            UserText(text=""),
            UserText(text="two"),
        ]
    )
    assert body["messages"] == [
        {
            "role": "user",
            "content": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}],
        }
    ]


def test_reasoning_replays_verbatim_only_to_its_own_model() -> None:
    """Thinking goes back unchanged and first to the model string that made it, else it is left out."""
    events: list[CanonicalEvent] = [
        UserText(text="Why?"),
        Reasoning(model=MODEL, response_model=MODEL + "-20250929", block=THINKING),
        AssistantText(text="Because.", model=MODEL),
        UserText(text="And?"),
    ]
    same = ANT.render(events, None, MODEL)
    assert same["messages"][1]["content"] == [THINKING, {"type": "text", "text": "Because."}]
    other = ANT.render(events, None, OTHER_MODEL)
    assert _kinds(other["messages"][1]) == ["text"]
    redacted = ANT.render(
        [
            UserText(text="x"),
            Reasoning(model=MODEL, block=REDACTED),
            AssistantText(text="y", model=MODEL),
        ],
        None,
        MODEL,
    )
    assert redacted["messages"][1]["content"][0] == REDACTED


def test_reasoning_not_at_the_head_of_its_turn_is_left_out() -> None:
    """Thinking after text in the same message, or leading nothing, is not replayed."""
    after_text = _body(
        [
            UserText(text="Q"),
            AssistantText(text="A", model=MODEL),
            Reasoning(model=MODEL, block=THINKING),
            _call("c1"),
        ]
    )
    assert _kinds(after_text["messages"][1]) == ["text", "tool_use"]
    alone = _body([UserText(text="Q"), Reasoning(model=MODEL, block=THINKING), UserText(text="R")])
    assert alone["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Q"}, {"type": "text", "text": "R"}]}
    ]


def test_reasoning_that_is_not_replayable_is_left_out() -> None:
    """Chat-route reasoning and thinking blocks with unknown keys never reach the wire."""
    for block in (
        {"type": "reasoning_content", "reasoning_content": "hmm"},
        {**THINKING, "extra": 1},
        {"type": "thinking", "thinking": "no signature"},
    ):
        body = _body(
            [
                UserText(text="Q"),
                Reasoning(model=MODEL, block=block),
                AssistantText(text="A", model=MODEL),
            ]
        )
        assert _kinds(body["messages"][1]) == ["text"]


def test_calls_without_tools_declare_stubs_and_forbid_calling() -> None:
    """Logged calls with no tools passed get one stub per name and tool_choice none."""
    body = ANT.render(
        [
            UserText(text="Go"),
            _call("c1", "read_file"),
            _call("c2", "run_tests"),
            _call("c3", "read_file"),
        ],
        None,
        MODEL,
    )
    assert body["tools"] == [
        {
            "name": "read_file",
            "description": STUB_TOOL_DESCRIPTION,
            "input_schema": {"type": "object"},
        },
        {
            "name": "run_tests",
            "description": STUB_TOOL_DESCRIPTION,
            "input_schema": {"type": "object"},
        },
    ]
    assert body["tool_choice"] == {"type": "none"}
    assert "tool_choice" not in ANT.render([UserText(text="Go"), _call("c1")], [READ_FILE], MODEL)
    assert "tools" not in ANT.render([UserText(text="Go")], None, MODEL)


def test_tools_accept_specs_and_dicts_of_every_shape() -> None:
    """ToolSpecs and OpenAI- or Anthropic-shaped dicts all render to the same tool."""
    schema = {"type": "object", "properties": {"path": {"type": "string"}}}
    shapes: list[Any] = [
        ToolSpec(name="t", description="d", parameters=schema),
        {"name": "t", "description": "d", "parameters": schema},
        {"type": "function", "function": {"name": "t", "description": "d", "parameters": schema}},
        {"name": "t", "description": "d", "input_schema": schema},
    ]
    for shape in shapes:
        body = ANT.render([UserText(text="x")], [shape], MODEL)
        assert body["tools"] == [{"name": "t", "description": "d", "input_schema": schema}]
    bare = ANT.render(
        [UserText(text="x")], [ToolSpec(name="t", parameters={"properties": {}})], MODEL
    )
    assert bare["tools"] == [{"name": "t", "input_schema": {"type": "object", "properties": {}}}]


def test_duplicate_tool_names_are_a_render_error() -> None:
    """The API needs unique tool names."""
    with pytest.raises(RenderError, match="two tools are named 'read_file'"):
        ANT.render([UserText(text="x")], [READ_FILE, READ_FILE], MODEL)


def test_stored_events_render_like_bare_events() -> None:
    """A log of StoredEvent records, or a mix, renders to the same body as its bare events."""
    events = long_log(3)
    stored = [
        StoredEvent(seq=i, at=datetime(2026, 1, 1, tzinfo=UTC), event=e)
        for i, e in enumerate(events)
    ]
    mixed = [stored[0], *events[1:]]
    expected = ANT.render_bytes(events, TOOLS, MODEL)
    assert ANT.render_bytes(stored, TOOLS, MODEL) == expected
    assert ANT.render_bytes(mixed, TOOLS, MODEL) == expected


def test_renderer_satisfies_the_renderer_protocol() -> None:
    """The renderer has the shared route surface and its typed request is the wire model."""
    assert isinstance(
        ANT.render_request([UserText(text="x")], None, MODEL), AnthropicMessagesRequest
    )
    assert RENDERER.render([UserText(text="x")], None, MODEL)["model"] == MODEL


def test_second_render_of_a_log_encodes_no_event_again(
    fresh_caches: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every event is encoded once: re-sending the log, or a grown copy, encodes only new events."""
    encoded: list[CanonicalEvent] = []
    real = ant._encode_event

    def counting(event: CanonicalEvent) -> bytes:
        encoded.append(event)
        return real(event)

    monkeypatch.setattr(ant, "_encode_event", counting)
    log = long_log(5)
    first = ANT.render_bytes(log, TOOLS, MODEL)
    assert len(encoded) == len(log)
    encoded.clear()
    assert ANT.render_bytes(log, TOOLS, MODEL) == first
    assert encoded == []
    ANT.forget()  # a cold plan still finds every fragment memoised
    assert ANT.render_bytes(list(log), TOOLS, MODEL) == first
    assert encoded == []
    new = UserText(text="One more thing.")
    ANT.render_bytes([*log, new], TOOLS, MODEL)
    assert encoded == [new]


def test_cached_prefix_plans_are_not_changed_by_longer_logs(fresh_caches: None) -> None:
    """Rendering a grown log (which fills a hole and appends) leaves the shorter log's body intact."""
    short: list[CanonicalEvent] = [UserText(text="Run."), _call("c1"), UserText(text="Hurry.")]
    before = ANT.render_bytes(short, TOOLS, MODEL)
    grown = [*short, ToolResult(call_id="c1", output="ok"), UserText(text="Thanks.")]
    after = ANT.render_bytes(grown, TOOLS, MODEL)
    assert ANT.render_bytes(short, TOOLS, MODEL) == before
    assert INTERRUPTED_RESULT.encode() in before
    assert INTERRUPTED_RESULT.encode() not in after
    ANT.forget()
    assert ANT.render_bytes(grown, TOOLS, MODEL) == after


def _nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth):
        value = {"a": value}
    return value


def test_arguments_too_deep_to_encode_are_a_render_error() -> None:
    """Arguments nested past the encoder's limit, or circular, fail as RenderError on every path."""
    circular: dict[str, Any] = {}
    circular["self"] = circular
    for arguments in (_nested(1000), circular):
        log = [UserText(text="go"), ToolCall(call_id="deep", tool="t", arguments=arguments)]
        with pytest.raises(RenderError, match="cannot be encoded as JSON"):
            ANT.render_bytes(log, None, MODEL)
        with pytest.raises(RenderError, match="cannot be encoded as JSON"):
            ANT.render(log, None, MODEL)
    deep_schema = ToolSpec(name="t", parameters={"type": "object", "x": _nested(1000)})
    with pytest.raises(RenderError, match="cannot be encoded as JSON"):
        ANT.render_bytes([UserText(text="go")], [deep_schema], MODEL)
