"""The Responses renderer: official request types, the pairing and replay rules, options."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from syrupy.assertion import SnapshotAssertion
from syrupy.extensions.json import JSONSnapshotExtension

from nisse_llm.config.options import RequestOptions
from nisse_llm.errors import RenderError
from nisse_llm.events.canonical import (
    AssistantText,
    CanonicalEvent,
    Reasoning,
    ToolCall,
    ToolResult,
    ToolSpec,
    UserImage,
    UserText,
)
from nisse_llm.events.images import Image
from nisse_llm.render.anthropic_messages import AnthropicMessagesRenderer
from nisse_llm.render.openai_chat import OpenAIChatRenderer
from nisse_llm.render.openai_responses import INTERRUPTED_RESULT, OpenAIResponsesRenderer
from nisse_llm.testing.images import png
from tests.corpus import corpus
from tests.routes.openai_responses.judges import judge_request
from tests.strategies import logs, texts, tool_specs

RESPONSES = OpenAIResponsesRenderer()
MODEL = "gpt-6-astra"
OTHER = "gpt-5.6-sol"
SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])

#: A reasoning item as the API returns it (summary, encrypted content, status).
ITEM = {
    "id": "rs_0f35ed53160b395301693cc95817ac8190b978637daea4987e",
    "type": "reasoning",
    "encrypted_content": "gAAAAABpPMlcH0HHEv5_ozHwP5Gxz5ZLE7A8Aw7GK94sa1KWHq==",
    "summary": [{"type": "summary_text", "text": "**Listing first**\n\nI should look."}],
}

responses_items = st.builds(
    lambda number, text, secret: {
        "id": f"rs_{number}",
        "type": "reasoning",
        "summary": [] if text is None else [{"type": "summary_text", "text": text}],
        "encrypted_content": secret,
    },
    st.integers(0, 10**6),
    st.none() | st.text(max_size=40),
    st.from_regex(r"gAAAAA[A-Za-z0-9_=-]{4,40}", fullmatch=True),
)


@st.composite
def logs_with_items(draw: st.DrawFn) -> list[CanonicalEvent]:
    """A valid log with Responses reasoning items of this model and another put in."""
    events = draw(logs())
    for _ in range(draw(st.integers(0, 4))):
        at = draw(st.integers(0, len(events)))
        model = draw(st.sampled_from((MODEL, OTHER)))
        events.insert(at, Reasoning(model=model, block=draw(responses_items)))
    return events


def _outputs_follow_calls(body: dict[str, Any]) -> None:
    """Every call is answered exactly once, after it; every output answers an earlier call."""
    seen: list[str] = []
    answered: set[str] = set()
    for item in body["input"]:
        if item.get("type") == "function_call":
            seen.append(item["call_id"])
        elif item.get("type") == "function_call_output":
            assert item["call_id"] in seen
            assert item["call_id"] not in answered
            answered.add(item["call_id"])
    assert answered == set(seen)


@SETTINGS
@given(
    logs_with_items(),
    tool_specs(),
    st.none() | texts,
    st.none() | st.integers(1, 100_000),
    st.sampled_from([None, "low", "high", "xhigh"]),
)
def test_any_valid_log_renders_a_body_the_official_types_accept(
    events: list[CanonicalEvent],
    tools: list[ToolSpec],
    system: str | None,
    max_tokens: int | None,
    reasoning: Any,
) -> None:
    """Any valid log renders to a body the SDK's ``ResponseCreateParams`` accepts with no
    unknown key, with calls and outputs paired and only this model's items replayed."""
    options = RequestOptions(reasoning=reasoning)
    body = RESPONSES.render(events, tools, MODEL, system, max_tokens=max_tokens, options=options)
    judge_request(body)
    _outputs_follow_calls(body)
    assert body["store"] is False
    assert "previous_response_id" not in body
    assert body["include"] == ["reasoning.encrypted_content"]
    replayed = [item for item in body["input"] if item.get("type") == "reasoning"]
    mine = [e.block for e in events if isinstance(e, Reasoning) and e.model == MODEL]
    assert all(item in mine for item in replayed)
    assert all(
        e.block not in replayed
        for e in events
        if isinstance(e, Reasoning) and e.model != MODEL and e.block not in mine
    )


@SETTINGS
@given(logs_with_items(), tool_specs())
def test_the_typed_request_and_the_bytes_are_one_body(
    events: list[CanonicalEvent], tools: list[ToolSpec]
) -> None:
    """``render_bytes`` is the typed request's dump, and the request model reads it back."""
    request = RESPONSES.render_request(events, tools, MODEL)
    encoded = RESPONSES.render_bytes(events, tools, MODEL)
    assert encoded == request.model_dump_json(exclude_none=True).encode()
    assert type(request).model_validate_json(encoded) == request


def test_the_judge_is_strict_at_any_depth() -> None:
    """The official judge refuses one unknown key in an input item, a tool or the top level."""
    log = [UserText(text="hi"), ToolCall(call_id="c1", tool="ls", arguments={})]
    body = RESPONSES.render(log, [ToolSpec(name="ls", description="d", parameters={})], MODEL)
    judge_request(body)
    for path in (("input", 0), ("input", 1), ("tools", 0), ()):
        bad = copy.deepcopy(body)
        target = bad
        for key in path:
            target = target[key]
        target["surprise"] = 1
        with pytest.raises(ValidationError):
            judge_request(bad)


def _tool_loop() -> list[CanonicalEvent]:
    image = Image.from_bytes(png())
    return [
        UserText(text="List the files, then read the README."),
        Reasoning(model=MODEL, response_model="gpt-6-astra-2026-10-01", block=ITEM),
        AssistantText(text="Looking.", model=MODEL),
        ToolCall(call_id="call-1", tool="ls", arguments={"path": "."}),
        ToolCall(call_id="call-2", tool="shot", arguments={}),
        UserText(text="(while tools ran) also check setup.cfg"),
        ToolResult(call_id="call-2", output="", images=(image,)),
        ToolResult(call_id="call-1", output="README.md\nsetup.cfg"),
        Reasoning(model=OTHER, block={**ITEM, "id": "rs_other"}),
        ToolCall(call_id="call-3", tool="ls", arguments={"path": "docs"}),
        UserImage(image=image),
    ]


TOOLS = [
    ToolSpec(name="ls", description="List a folder.", parameters={"type": "object"}),
    ToolSpec(name="shot", description="Take a screenshot.", parameters={}),
]


def test_a_tool_loop_renders_in_log_order_with_outputs_moved_up() -> None:
    """Items go in log order, each turn's outputs right after it in call order, a dangling
    call gets the synthetic interrupted result, and tool images go as input images."""
    body = RESPONSES.render(_tool_loop(), TOOLS, MODEL, "Be brief.")
    judge_request(body)
    kinds = [(item.get("type"), item.get("role"), item.get("call_id")) for item in body["input"]]
    assert kinds == [
        ("message", "user", None),
        ("reasoning", None, None),
        ("message", "assistant", None),
        ("function_call", None, "call-1"),
        ("function_call", None, "call-2"),
        ("function_call_output", None, "call-1"),
        ("function_call_output", None, "call-2"),
        ("message", "user", None),
        ("function_call", None, "call-3"),
        ("function_call_output", None, "call-3"),
        ("message", "user", None),
    ]
    assert body["instructions"] == "Be brief."
    assert body["input"][6]["output"][0]["type"] == "input_image"
    assert body["input"][6]["output"][0]["image_url"].startswith("data:image/png;base64,")
    assert body["input"][9]["output"] == INTERRUPTED_RESULT
    assert body["input"][10]["content"][0]["detail"] == "auto"


def test_a_reasoning_item_is_replayed_byte_for_byte_to_its_model_only() -> None:
    """The same model on this route gets the item byte-identical in its place; another
    model, and the chat and messages routes, get none of it."""
    log = _tool_loop()
    encoded = RESPONSES.render_bytes(log, TOOLS, MODEL)
    as_received = json.dumps(ITEM, ensure_ascii=False, separators=(",", ":")).encode()
    assert encoded.count(as_received) == 1
    assert b"rs_other" not in encoded
    other = RESPONSES.render_bytes(log, TOOLS, OTHER)
    assert ITEM["id"].encode() not in other
    assert other.count(b"rs_other") == 1  # that model gets its own item
    chat = OpenAIChatRenderer().render_bytes(
        log, TOOLS, MODEL, options=RequestOptions(reasoning="high")
    )
    assert b"encrypted_content" not in chat
    messages = AnthropicMessagesRenderer().render_bytes(log, TOOLS, MODEL)
    assert b"encrypted_content" not in messages


def test_reasoning_of_a_turn_with_nothing_else_is_left_out() -> None:
    """A reasoning item whose turn sent no text and no call is not sent (the API refuses
    a reasoning item without the item it led to)."""
    log = [
        UserText(text="hi"),
        Reasoning(model=MODEL, block=ITEM),
        AssistantText(text="  ", model=MODEL),
        UserText(text="again"),
    ]
    body = RESPONSES.render(log, [], MODEL)
    assert [item["type"] for item in body["input"]] == ["message", "message"]


@pytest.mark.parametrize(
    ("log", "message"),
    [
        ([UserText(text="x"), ToolResult(call_id="nope", output="")], "no earlier tool call"),
        (
            [
                ToolCall(call_id="a", tool="t", arguments={}),
                ToolCall(call_id="a", tool="t", arguments={}),
            ],
            "used twice",
        ),
        ([UserText(text="  ")], "nothing to send"),
    ],
)
def test_a_corrupt_or_empty_log_is_a_render_error(log: list[CanonicalEvent], message: str) -> None:
    """An orphan result, a reused call id or a log with nothing to send is a RenderError."""
    with pytest.raises(RenderError, match=message):
        RESPONSES.render(log, [], MODEL)


def test_options_map_to_the_responses_fields() -> None:
    """Reasoning is an effort with an automatic summary, the ceiling is max_output_tokens,
    tool choice and parallel calls keep their names, and a task's key is stable."""
    options = RequestOptions(
        reasoning="xhigh", max_output_tokens=4096, tool_choice="ls", parallel_tool_calls=False
    )
    log = _tool_loop()
    body = RESPONSES.render(log, TOOLS, MODEL, options=options)
    judge_request(body)
    assert body["reasoning"] == {"effort": "xhigh", "summary": "auto"}
    assert body["max_output_tokens"] == 4096
    assert body["tool_choice"] == {"type": "function", "name": "ls"}
    assert body["parallel_tool_calls"] is False
    later = RESPONSES.render([*log, UserText(text="more")], TOOLS, MODEL, options=options)
    assert later["prompt_cache_key"] == body["prompt_cache_key"]
    assert (
        RESPONSES.render(log, TOOLS, MODEL, prompt_cache_key="task-7")["prompt_cache_key"]
        == "task-7"
    )


def test_off_is_effort_none_where_the_model_has_it() -> None:
    """``reasoning="off"`` is effort ``none`` (no summary) for gpt-5.6-sol."""
    body = RESPONSES.render(
        [UserText(text="hi")], [], OTHER, options=RequestOptions(reasoning="off")
    )
    assert body["reasoning"] == {"effort": "none"}


def test_stop_sequences_are_refused() -> None:
    """The route has no stop field: stop sequences are a RenderError that says so."""
    with pytest.raises(RenderError, match="no stop field"):
        RESPONSES.render([UserText(text="hi")], [], MODEL, options=RequestOptions(stop=("END",)))


def test_sampling_follows_the_model_rules() -> None:
    """Sampling is refused for a reasoning model and sent to one that takes it."""
    with pytest.raises(RenderError, match="temperature"):
        RESPONSES.render([UserText(text="hi")], [], MODEL, options=RequestOptions(temperature=0.2))
    body = RESPONSES.render(
        [UserText(text="hi")], [], "gpt-4.1-mini", options=RequestOptions(temperature=0.2)
    )
    assert body["temperature"] == 0.2
    assert "include" not in body  # a model that does not reason is not asked for reasoning


def test_a_claude_entry_gets_no_prompt_cache_key() -> None:
    """The proxy refuses ``prompt_cache_key`` to an Anthropic entry, so none is sent."""
    body = RESPONSES.render(
        [UserText(text="hi")], [], "claude-opus-4-8", options=RequestOptions(reasoning="high")
    )
    assert "prompt_cache_key" not in body
    assert body["reasoning"] == {"effort": "high", "summary": "auto"}


@pytest.fixture
def json_snapshot(snapshot: SnapshotAssertion) -> SnapshotAssertion:
    return snapshot.use_extension(JSONSnapshotExtension)


@pytest.mark.parametrize("conversation", corpus(), ids=lambda c: c.name)
def test_corpus_bodies_match_their_snapshots(
    conversation: Any, json_snapshot: SnapshotAssertion
) -> None:
    """The corpus rendered for gpt-6-astra on this route, snapshot-locked and officially valid."""
    body = RESPONSES.render(
        conversation.events, conversation.tools, MODEL, conversation.system, max_tokens=1024
    )
    judge_request(body)
    assert body == json_snapshot


def test_the_tool_loop_body_matches_its_snapshot(json_snapshot: SnapshotAssertion) -> None:
    """The tool loop with reasoning, images and options, snapshot-locked."""
    body = RESPONSES.render(
        _tool_loop(), TOOLS, MODEL, "Be brief.", options=RequestOptions(reasoning="high")
    )
    assert body == json_snapshot


def test_records_and_bare_events_render_the_same_bytes_call_after_call() -> None:
    """A log of stored records renders as its bare events do, and a log re-sent grown by a
    turn renders as a fresh render of it would (the per-event memo changes nothing)."""
    from nisse_llm.events.canonical import StoredEvent

    log = _tool_loop()
    records = [StoredEvent.now(seq, event) for seq, event in enumerate(log)]
    expected = RESPONSES.render_request(log, TOOLS, MODEL).model_dump_json(exclude_none=True)
    assert RESPONSES.render_bytes(records, TOOLS, MODEL) == expected.encode()
    assert RESPONSES.render_bytes(log, TOOLS, MODEL) == expected.encode()
    grown = [*log, ToolResult(call_id="call-3", output="docs/a.md")]
    fresh = RESPONSES.render_request(grown, TOOLS, MODEL).model_dump_json(exclude_none=True)
    assert RESPONSES.render_bytes(grown, TOOLS, MODEL) == fresh.encode()


def test_a_compaction_marker_goes_as_user_side_context() -> None:
    """A `Compaction` is sent as its context note, a user message, as on the other routes."""
    from nisse_llm.events.canonical import Compaction

    marker = Compaction(removed=12, summary="Listed the folders.")
    body = RESPONSES.render([marker, UserText(text="Go on.")], [], MODEL)
    judge_request(body)
    first = body["input"][0]
    assert (first["type"], first["role"]) == ("message", "user")
    assert "12 earlier event(s)" in json.dumps(first)
    assert "Listed the folders." in json.dumps(first)
