"""The messages route's parser: real response bodies, each outcome rule, and fuzzed bodies."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nisse_llm.errors import LLMError, ModelRefusal, TruncatedResponse
from nisse_llm.events.canonical import (
    CALL_ID_PATTERN,
    AssistantText,
    Completion,
    Reasoning,
    ToolCall,
    ToolResult,
    Usage,
    UserText,
)
from nisse_llm.render.anthropic_messages import AnthropicMessagesRenderer
from tests.strategies import json_values

ANT = AnthropicMessagesRenderer()
RESPONSES = Path(__file__).parent.parent / "fixtures" / "conformance" / "responses"
MANIFEST = {
    entry["name"]: entry for entry in json.loads((RESPONSES / "manifest.json").read_bytes())
}
ANT_200 = sorted(
    name
    for name, entry in MANIFEST.items()
    if name.startswith("ant_") and entry["http_status"] == 200
)
REQUESTED = "claude-requested"


def _raw(name: str) -> bytes:
    return (RESPONSES / MANIFEST[name]["file"]).read_bytes()


def _parse(body: Any, **options: Any) -> Completion:
    return ANT.parse(body, requested_model=REQUESTED, **options)


def _message(*content: dict[str, Any], **fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5-20250929",
        "content": list(content),
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }
    body.update(fields)
    return body


def _plain_outcome(name: str) -> bool:
    derived = MANIFEST[name]["derived"]
    return not derived.get("partial") and derived["stop_reason"] not in (
        "max_tokens",
        "pause_turn",
    )


@pytest.mark.parametrize("name", [n for n in ANT_200 if _plain_outcome(n)])
def test_real_bodies_parse_to_the_manifest_facts(name: str) -> None:
    """Each real 200 body yields the manifest's text, calls, reasoning blocks, usage and stop."""
    derived = MANIFEST[name]["derived"]
    raw = json.loads(_raw(name))
    completion = _parse(_raw(name))
    texts = [e.text for e in completion.events if isinstance(e, AssistantText)]
    assert "".join(texts) == derived["text"]
    assert all(e.model == raw["model"] for e in completion.events if isinstance(e, AssistantText))
    calls = [e for e in completion.events if isinstance(e, ToolCall)]
    assert [(c.tool, c.arguments) for c in calls] == [
        (call["name"], call["arguments"]) for call in derived["tool_calls"]
    ]
    assert all(re.fullmatch(CALL_ID_PATTERN, c.call_id) for c in calls)
    assert not {c.call_id for c in calls} & {call["id"] for call in derived["tool_calls"]}
    assert len({c.call_id for c in calls}) == len(calls)
    kinds = {"text": "assistant_text", "tool_use": "tool_call"}
    kinds |= {"thinking": "reasoning", "redacted_thinking": "reasoning"}
    assert [e.kind for e in completion.events] == [kinds[t] for t in derived["block_types"]]
    usage = derived["usage"]
    assert completion.usage == Usage(
        input=usage["input_tokens"]
        + usage["cache_creation_input_tokens"]
        + usage["cache_read_input_tokens"],
        output=usage["output_tokens"],
        cache_read=usage["cache_read_input_tokens"],
        cache_write=usage["cache_creation_input_tokens"],
    )
    assert completion.stop_reason == derived["stop_reason"]
    assert completion.response_model == raw["model"]


@pytest.mark.parametrize(
    "name", ["ant_thinking_signature", "ant_thinking_text_tool_use", "ant_redacted_thinking"]
)
def test_reasoning_blocks_are_stored_exactly_as_received(name: str) -> None:
    """Thinking and redacted thinking become Reasoning with the verbatim block, tagged with both models."""
    raw = json.loads(_raw(name))
    reasoning = [e for e in _parse(_raw(name)).events if isinstance(e, Reasoning)]
    received = [b for b in raw["content"] if b["type"] in ("thinking", "redacted_thinking")]
    assert [r.block for r in reasoning] == received
    assert all(r.model == REQUESTED and r.response_model == raw["model"] for r in reasoning)
    assert all(r.replayable for r in reasoning)


def test_parsed_reasoning_replays_unchanged_to_the_requesting_model() -> None:
    """A parsed thinking turn, rendered back to the same model, carries the block byte-for-byte."""
    raw = json.loads(_raw("ant_thinking_text_tool_use"))
    completion = _parse(_raw("ant_thinking_text_tool_use"))
    call = completion.events[-1]
    assert isinstance(call, ToolCall)
    log = [
        UserText(text="Which city?"),
        *completion.events,
        ToolResult(call_id=call.call_id, output="Mexico"),
    ]
    body = ANT.render(log, None, REQUESTED)
    assert body["messages"][1]["content"][0] == raw["content"][0]


def test_cache_usage_counts_every_prompt_token() -> None:
    """Usage.input sums uncached, cache-read and cache-written prompt tokens."""
    completion = _parse(_raw("ant_usage_cache_read_and_write"))
    assert completion.usage == Usage(
        input=3 + 1111 + 418, output=33, cache_read=1111, cache_write=418
    )


def test_max_tokens_stop_is_truncation_naming_model_and_ceiling() -> None:
    """stop_reason max_tokens raises TruncatedResponse naming the model and the ceiling."""
    with pytest.raises(TruncatedResponse) as caught:
        _parse(_raw("ant_max_tokens_haiku_probe"), max_tokens=1)
    assert str(caught.value) == (
        "claude-requested hit the output ceiling of 1 tokens mid-answer "
        "(stop_reason max_tokens); raise llm.max_output_tokens"
    )
    with pytest.raises(TruncatedResponse, match="hit its output ceiling"):
        _parse(_raw("ant_max_tokens_haiku_probe"))


def test_context_window_stop_is_truncation() -> None:
    """stop_reason model_context_window_exceeded raises TruncatedResponse saying so."""
    body = _message(
        {"type": "text", "text": "partial"}, stop_reason="model_context_window_exceeded"
    )
    with pytest.raises(TruncatedResponse, match="ran out of context window"):
        _parse(body)


def test_refusal_raises_model_refusal_with_what_was_said() -> None:
    """stop_reason refusal raises ModelRefusal carrying the explanation and any text."""
    with pytest.raises(ModelRefusal) as caught:
        _parse(_raw("ant_refusal_doc_fragment"))
    assert str(caught.value) == (
        "claude-requested refused to answer (stop_reason refusal): This request was declined "
        "because it could enable cyber harm.; it said: 'Hello..'"
    )
    assert caught.value.error_type == "refusal"


def test_server_tool_blocks_and_pause_turn_are_errors_naming_them() -> None:
    """Blocks the SDK never asks for, and a paused server-tool turn, are LLMErrors naming them."""
    with pytest.raises(LLMError, match="'server_tool_use' block") as caught:
        _parse(_raw("ant_pause_turn_server_tools"))
    assert type(caught.value) is LLMError
    with pytest.raises(LLMError, match="pause_turn"):
        _parse(_message({"type": "text", "text": "searching"}, stop_reason="pause_turn"))
    with pytest.raises(LLMError, match="'container_upload' block"):
        _parse(_message({"type": "container_upload", "file_id": "f"}))


def test_tool_input_that_is_not_an_object_names_the_tool() -> None:
    """A tool_use whose input is not a JSON object is a failed turn naming the tool."""
    for bad in ([1, 2], "{}", None, 3):
        body = _message({"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": bad})
        with pytest.raises(
            LLMError, match="called 'read_file' with input that is not a JSON object"
        ):
            _parse(body)


def test_invalid_tool_name_is_an_llm_error() -> None:
    """A tool name or argument keys the canonical model refuses are a failed turn, not a crash."""
    body = _message({"type": "tool_use", "id": "t", "name": "bad name!", "input": {}})
    with pytest.raises(LLMError, match=r"call of 'bad name!' is not a valid tool call: tool"):
        _parse(body)
    odd_keys = {"content": [{"type": "tool_use", "name": "t", "input": {1: 2}}]}
    with pytest.raises(LLMError, match="call of 't' is not a valid tool call: arguments"):
        _parse(odd_keys)


def test_bytes_str_and_dict_bodies_parse_alike() -> None:
    """The parser takes bytes, str or a parsed dict and gives the same events."""
    raw = _raw("ant_text_plain")
    texts = [
        [e.text for e in _parse(body).events if isinstance(e, AssistantText)]
        for body in (raw, raw.decode(), json.loads(raw))
    ]
    assert texts[0] == texts[1] == texts[2]


def test_missing_optional_fields_are_tolerated() -> None:
    """No id, model or usage, and unknown fields, still parse; text then names the requested model."""
    completion = _parse(
        {"content": [{"type": "text", "text": "hi", "citations": None}], "extra": 1}
    )
    assert completion.events == [AssistantText(text="hi", model=REQUESTED)]
    assert completion.usage == Usage()
    assert completion.stop_reason is None
    assert _parse(_message({"type": "text", "text": ""})).events == []
    assert _parse(_message(stop_reason="some_future_reason")).stop_reason == "some_future_reason"


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"not json",
        b"[]",
        b"null",
        b"{}",
        b'{"content": null, "stop_reason": "end_turn"}',
        b'{"content": [{"type": "text", "text": 3}]}',
        b'{"content": [{"no_type": true}]}',
        b'{"content": [], "usage": {"input_tokens": -1}}',
        b'{"content": [], "usage": {"input_tokens": "many"}}',
        b'{"content": [{"type": "tool_use", "input": {}}]}',
        b'{"content": [{"type": "thinking"}]}',
        b"\xff\xfe",
    ],
)
def test_malformed_bodies_raise_llm_error(body: bytes) -> None:
    """Anything that is not a messages response is an LLMError, never a foreign exception."""
    with pytest.raises(LLMError) as caught:
        _parse(body)
    assert type(caught.value) is LLMError


def test_error_body_where_a_message_belongs_names_the_error() -> None:
    """An error-shaped body handed to the parser is an LLMError with its type and message."""
    with pytest.raises(LLMError) as caught:
        _parse(_raw("ant_error_400_empty_text_block"))
    assert caught.value.error_type == "invalid_request_error"
    assert caught.value.server_message == "messages: text content blocks must be non-empty"


def _only_llm_errors(body: Any) -> None:
    try:
        completion = _parse(body, max_tokens=100)
    except LLMError:
        return
    assert isinstance(completion, Completion)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=200))
def test_arbitrary_bytes_raise_only_llm_error(body: bytes) -> None:
    """Random bytes never escape as anything but LLMError."""
    _only_llm_errors(body)


@settings(max_examples=300)
@given(json_values)
def test_arbitrary_json_raises_only_llm_error(value: Any) -> None:
    """Any JSON value, as bytes or as a parsed object, never escapes as anything but LLMError."""
    _only_llm_errors(json.dumps(value).encode())
    _only_llm_errors(value)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    paths = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            paths.extend(_paths(item, (*prefix, key)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            paths.extend(_paths(item, (*prefix, index)))
    return paths


_SMALL_200 = [n for n in ANT_200 if len(_raw(n)) < 20_000]


@st.composite
def mutated_bodies(draw: st.DrawFn) -> Any:
    """A real 200 body with one node replaced by arbitrary JSON, or deleted."""
    body = json.loads(_raw(draw(st.sampled_from(_SMALL_200))))
    path = draw(st.sampled_from(_paths(body)))
    if not path:
        return draw(json_values)
    parent = body
    for step in path[:-1]:
        parent = parent[step]
    if draw(st.booleans()):
        parent[path[-1]] = draw(
            json_values | st.sampled_from(["", "tool_use", "thinking", -1, 2**70])
        )
    else:
        del parent[path[-1]]
    return body


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_bodies())
def test_mutated_real_bodies_raise_only_llm_error(body: Any) -> None:
    """A real body with any one node changed or removed parses or raises LLMError, nothing else."""
    _only_llm_errors(body)
    _only_llm_errors(json.dumps(body).encode())
