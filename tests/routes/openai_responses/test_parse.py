"""Parsing Responses replies: real recorded bodies against the official SDK, and failures."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from nisse_llm.errors import ContextWindowExceeded, LLMError, ModelRefusal, TruncatedResponse
from nisse_llm.events.canonical import AssistantText, Reasoning, ToolCall, UserText
from nisse_llm.render.openai_responses import OpenAIResponsesRenderer
from tests.routes.openai_responses.judges import official_reply

FIXTURES = Path(__file__).parents[2] / "fixtures" / "responses"
RECORDED = sorted(path.name for path in FIXTURES.glob("*.json"))
RESPONSES = OpenAIResponsesRenderer()


def _load(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / name).read_text())


@pytest.mark.parametrize("name", RECORDED)
def test_a_recorded_reply_parses_as_the_official_sdk_reads_it(name: str) -> None:
    """Text, calls, reasoning items and usage of each recorded reply are what the SDK's own
    parse holds; reasoning items are kept exactly as received."""
    raw = _load(name)
    official = official_reply(raw)
    completion = RESPONSES.parse((FIXTURES / name).read_bytes(), requested_model="m")
    texts = [e.text for e in completion.events if isinstance(e, AssistantText)]
    assert "".join(texts) == official.output_text
    calls = [(e.tool, e.arguments) for e in completion.events if isinstance(e, ToolCall)]
    assert calls == [
        (item.name, json.loads(item.arguments))
        for item in official.output
        if item.type == "function_call"
    ]
    blocks = [e.block for e in completion.events if isinstance(e, Reasoning)]
    assert [block["id"] for block in blocks] == [
        item.id for item in official.output if item.type == "reasoning"
    ]
    assert blocks == [item for item in raw["output"] if item["type"] == "reasoning"]
    assert all(e.model == "m" for e in completion.events if isinstance(e, Reasoning))
    usage = official.usage
    assert usage is not None
    assert completion.usage.input == usage.input_tokens
    assert completion.usage.output == usage.output_tokens
    assert completion.usage.cache_read == usage.input_tokens_details.cached_tokens
    assert completion.reasoning_tokens == usage.output_tokens_details.reasoning_tokens
    assert completion.response_model == official.model
    assert completion.response_id == official.id


def test_a_reasoning_item_parsed_is_replayed_unchanged() -> None:
    """A parsed reasoning item goes back in the next request exactly as it arrived."""
    raw = _load("vercel_reasoning_encrypted_content.json")
    completion = RESPONSES.parse(json.dumps(raw), requested_model="gpt-6-astra")
    log = [UserText(text="Compute it."), *completion.events, UserText(text="Thanks.")]
    body = RESPONSES.render(log, [], "gpt-6-astra")
    assert body["input"][1] == raw["output"][0]
    assert list(body["input"][1]) == list(raw["output"][0])


def _reply(**fields: Any) -> dict[str, Any]:
    return {"id": "resp_1", "model": "gpt-6-astra", "status": "completed", "output": [], **fields}


def test_incomplete_at_the_ceiling_is_truncated() -> None:
    """``status: incomplete`` for ``max_output_tokens`` is a TruncatedResponse."""
    body = _reply(status="incomplete", incomplete_details={"reason": "max_output_tokens"})
    with pytest.raises(TruncatedResponse, match="output ceiling"):
        RESPONSES.parse(body, requested_model="m", max_tokens=64)


def test_incomplete_by_the_content_filter_is_a_refusal() -> None:
    """``status: incomplete`` for ``content_filter`` is a ModelRefusal."""
    body = _reply(status="incomplete", incomplete_details={"reason": "content_filter"})
    with pytest.raises(ModelRefusal):
        RESPONSES.parse(body, requested_model="m")


def test_a_refusal_part_is_a_refusal() -> None:
    """A ``refusal`` content part is a ModelRefusal carrying the model's words."""
    body = _reply(
        output=[
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "refusal", "refusal": "I can't help with that."}],
            }
        ]
    )
    with pytest.raises(ModelRefusal, match="can't help") as caught:
        RESPONSES.parse(body, requested_model="m")
    assert caught.value.server_message == "I can't help with that."


@pytest.mark.parametrize("arguments", ["{not json", "[1, 2]", '"text"'])
def test_function_call_arguments_that_are_no_json_object_are_an_llm_error(
    arguments: str,
) -> None:
    """Arguments that are not a JSON object are a failed turn (LLMError), not a crash."""
    body = _reply(
        output=[{"type": "function_call", "call_id": "c", "name": "ls", "arguments": arguments}]
    )
    with pytest.raises(LLMError, match="ls"):
        RESPONSES.parse(body, requested_model="m")


def test_a_failed_overflow_is_a_context_window_error() -> None:
    """``status: failed`` with ``context_length_exceeded`` is ContextWindowExceeded."""
    body = _reply(
        status="failed",
        error={
            "code": "context_length_exceeded",
            "message": "Your input exceeds the context window of this model.",
        },
    )
    with pytest.raises(ContextWindowExceeded):
        RESPONSES.parse(body, requested_model="m")


def test_another_failure_is_an_llm_error_with_its_code() -> None:
    """Any other ``failed`` response is an LLMError naming the error's code."""
    body = _reply(status="failed", error={"code": "server_error", "message": "boom"})
    with pytest.raises(LLMError, match="server_error") as caught:
        RESPONSES.parse(body, requested_model="m")
    assert not isinstance(caught.value, ContextWindowExceeded)
    assert caught.value.error_type == "server_error"


@pytest.mark.parametrize(
    "body",
    [
        b"not json",
        b"[]",
        b'{"id": "x"}',
        b'{"output": [{"type": "message", "content": "nope"}]}',
        b'{"output": [], "usage": {"input_tokens": "9"}}',
        b'{"error": {"type": "invalid_request_error", "message": "bad"}}',
    ],
)
def test_a_malformed_body_is_an_llm_error(body: bytes) -> None:
    """Anything that is not a valid Responses reply is an LLMError, never a raw exception."""
    with pytest.raises(LLMError):
        RESPONSES.parse(body, requested_model="m")


def test_calls_get_minted_ids_and_unknown_items_are_skipped() -> None:
    """A provider call id is replaced by a minted one; a server tool's item is skipped."""
    body = _reply(
        output=[
            {"type": "web_search_call", "id": "ws_1", "status": "completed"},
            {"type": "function_call", "call_id": "call_X", "name": "ls", "arguments": "{}"},
        ]
    )
    completion = RESPONSES.parse(body, requested_model="m")
    (call,) = completion.events
    assert isinstance(call, ToolCall)
    assert call.call_id != "call_X"
    assert completion.stop_reason == "tool_calls"
