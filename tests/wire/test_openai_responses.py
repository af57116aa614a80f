"""The Responses route's wire models: strict requests, tolerant replies."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from nisse_llm.wire.openai_responses import (
    OpenAIResponsesFunctionCall,
    OpenAIResponsesFunctionCallItem,
    OpenAIResponsesInputMessage,
    OpenAIResponsesMessageItem,
    OpenAIResponsesOtherItem,
    OpenAIResponsesReasoningItem,
    OpenAIResponsesRequest,
    OpenAIResponsesResponse,
)


def test_a_request_dumps_stateless_with_the_reasoning_item_as_received() -> None:
    """A request is sent with ``store: false`` and a reasoning input item goes out as the
    very object received, keys and order kept."""
    item = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAA"}
    request = OpenAIResponsesRequest(
        model="gpt-6-astra",
        input=[
            OpenAIResponsesInputMessage(content="hi"),
            item,
            OpenAIResponsesFunctionCall(call_id="c1", name="ls", arguments="{}"),
        ],
        include=["reasoning.encrypted_content"],
    )
    assert request.model_dump_json(exclude_none=True) == (
        '{"model":"gpt-6-astra","input":[{"type":"message","role":"user","content":"hi"},'
        '{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"gAAA"},'
        '{"type":"function_call","call_id":"c1","name":"ls","arguments":"{}"}],'
        '"store":false,"include":["reasoning.encrypted_content"]}'
    )


@pytest.mark.parametrize(
    "item",
    [
        {"type": "message", "role": "user", "content": "x", "surprise": 1},
        {"type": "function_call", "call_id": "c", "name": "n", "arguments": "{}", "id": "fc"},
        {"type": "function_call_output", "call_id": "c", "output": "x", "status": "done"},
        {"type": "message", "role": "assistant", "content": "x", "phase": "final_answer"},
    ],
)
def test_request_items_forbid_unknown_keys(item: dict[str, object]) -> None:
    """An unknown key in any typed input item is refused."""
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        OpenAIResponsesRequest.model_validate({"model": "m", "input": [item]})


def test_a_plain_input_item_must_be_a_reasoning_item() -> None:
    """Only a reasoning item passes as a plain object; any other untyped item is refused."""
    with pytest.raises(ValidationError, match="web_search_call"):
        OpenAIResponsesRequest.model_validate(
            {"model": "m", "input": [{"type": "web_search_call", "id": "ws"}]}
        )


def test_the_request_forbids_previous_response_id() -> None:
    """The route is stateless: the request model has no ``previous_response_id``."""
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        OpenAIResponsesRequest.model_validate(
            {"model": "m", "input": [], "previous_response_id": "resp_1"}
        )


def test_a_reply_tolerates_new_fields_and_item_types() -> None:
    """Unknown fields are ignored and an unknown output item type is kept by its type."""
    reply = OpenAIResponsesResponse.model_validate_json(
        b'{"id":"resp_1","status":"completed","new_field":{"x":1},"output":['
        b'{"type":"reasoning","id":"rs","summary":[{"type":"summary_text","text":"t"}],'
        b'"encrypted_content":"e","extra":true},'
        b'{"type":"web_search_call","id":"ws"},'
        b'{"type":"message","id":"m","role":"assistant","content":['
        b'{"type":"output_text","text":"hi","annotations":[]}]},'
        b'{"type":"function_call","id":"fc","call_id":"call_1","name":"ls",'
        b'"arguments":"{}"}],'
        b'"usage":{"input_tokens":10,"output_tokens":5,"total_tokens":15,'
        b'"input_tokens_details":{"cached_tokens":4},'
        b'"output_tokens_details":{"reasoning_tokens":3}}}'
    )
    kinds = [type(item) for item in reply.output]
    assert kinds == [
        OpenAIResponsesReasoningItem,
        OpenAIResponsesOtherItem,
        OpenAIResponsesMessageItem,
        OpenAIResponsesFunctionCallItem,
    ]
    assert reply.usage is not None
    assert reply.usage.input_tokens_details is not None
    assert reply.usage.input_tokens_details.cached_tokens == 4


def test_a_reply_refuses_a_negative_token_count() -> None:
    """A token count outside 0..10^12 makes the reply malformed."""
    with pytest.raises(ValidationError):
        OpenAIResponsesResponse.model_validate_json(
            b'{"output":[],"usage":{"input_tokens":-1,"output_tokens":0}}'
        )
