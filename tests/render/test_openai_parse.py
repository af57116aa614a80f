"""The chat route's parser: real response bodies, crafted LiteLLM shapes, and hostile input."""

from __future__ import annotations

import contextlib
import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nisse_llm.errors import LLMError, ModelRefusal, TruncatedResponse
from nisse_llm.events.canonical import CALL_ID_PATTERN, AssistantText, Reasoning, ToolCall, Usage
from nisse_llm.render.openai_chat import OpenAIChatRenderer
from tests.strategies import json_values

RESPONSES = Path(__file__).parent.parent / "fixtures" / "conformance" / "responses"
MANIFEST = {entry["name"]: entry for entry in json.loads((RESPONSES / "manifest.json").read_text())}
CHAT_NAMES = sorted(
    name for name in MANIFEST if name.startswith(("oai_", "compat_", "litellm_", "malformed_"))
)
OK_NAMES = [
    name
    for name in CHAT_NAMES
    if not MANIFEST[name]["derived"]["is_error"]
    and not MANIFEST[name]["derived"].get("malformed")
    and not MANIFEST[name]["derived"]["choices"][0]["truncated"]
    and MANIFEST[name]["derived"]["choices"][0]["refusal"] is None
]
ERROR_NAMES = [name for name in CHAT_NAMES if MANIFEST[name]["derived"]["is_error"]]
REQUESTED = "executor-model"
CHAT = OpenAIChatRenderer()


def _raw(name: str) -> bytes:
    return (RESPONSES / str(MANIFEST[name]["file"])).read_bytes()


def _completion(**message: Any) -> dict[str, Any]:
    """A minimal chat completion whose only choice carries ``message``."""
    return {
        "id": "chatcmpl-1",
        "model": "claude-sonnet-4-5-20250929",
        "choices": [
            {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", **message}}
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12},
    }


def test_the_fixture_selection_covers_every_chat_body() -> None:
    """Every chat-route body of the conformance set is parsed by one of the tests below."""
    assert len(CHAT_NAMES) == 22
    assert len(OK_NAMES) == 12
    assert len(ERROR_NAMES) == 7


@pytest.mark.parametrize("name", OK_NAMES)
@pytest.mark.parametrize("shape", ["bytes", "str", "dict"])
def test_real_bodies_parse_to_the_expected_events_and_usage(name: str, shape: str) -> None:
    """Each real completion gives its text, its calls with minted ids, its usage and stop reason."""
    raw = _raw(name)
    body: bytes | str | dict[str, Any] = {
        "bytes": raw,
        "str": raw.decode(),
        "dict": json.loads(raw),
    }[shape]
    facts = MANIFEST[name]["derived"]
    choice = facts["choices"][0]
    response_model = json.loads(raw)["model"]

    completion = CHAT.parse(body, requested_model=REQUESTED)

    texts = [e for e in completion.events if isinstance(e, AssistantText)]
    expected_texts = [choice["text"]] if choice["text"] else []
    assert [t.text for t in texts] == expected_texts
    assert all(t.model == response_model for t in texts)
    calls = [e for e in completion.events if isinstance(e, ToolCall)]
    assert [(c.tool, c.arguments) for c in calls] == [
        (call["name"], call["arguments"]) for call in choice["tool_calls"]
    ]
    provider_ids = {call["id"] for call in choice["tool_calls"]}
    assert all(re.match(CALL_ID_PATTERN, c.call_id) for c in calls)
    assert not provider_ids & {c.call_id for c in calls}
    assert len({c.call_id for c in calls}) == len(calls)
    usage = facts["usage"]
    assert completion.usage == Usage(
        input=usage["input_tokens"],
        output=usage["output_tokens"],
        cache_read=usage["cached_tokens"] or 0,
        cache_write=0,
    )
    assert completion.stop_reason == choice["finish_reason"]
    assert completion.response_model == response_model


def test_deepseek_reasoning_content_becomes_a_reasoning_event_first() -> None:
    """``reasoning_content`` is kept as one Reasoning block, tagged with both model names."""
    completion = CHAT.parse(
        _raw("compat_deepseek_reasoning_content_parallel_tools"), requested_model=REQUESTED
    )
    assert [e.kind for e in completion.events] == [
        "reasoning",
        "assistant_text",
        "tool_call",
        "tool_call",
    ]
    assert completion.events[0] == Reasoning(
        model=REQUESTED,
        response_model="deepseek-v4-flash",
        block={
            "type": "reasoning_content",
            "reasoning_content": "Great, now I have access to the dice roll tool. "
            "Let me first get the player's name and then roll the die.",
        },
    )


def test_a_tool_call_with_an_empty_provider_id_parses() -> None:
    """Gemini's empty tool-call id is no problem: ids are minted locally anyway."""
    completion = CHAT.parse(_raw("compat_gemini_tool_call_empty_id"), requested_model=REQUESTED)
    (call,) = completion.events
    assert isinstance(call, ToolCall)
    assert call.tool == "get_current_time"
    assert call.call_id.startswith("call_")


def test_length_finish_raises_truncated_response_naming_model_and_ceiling() -> None:
    """``finish_reason: length`` is a TruncatedResponse that names the model and the ceiling."""
    with pytest.raises(TruncatedResponse) as caught:
        CHAT.parse(_raw("oai_finish_length"), requested_model=REQUESTED, max_tokens=1)
    assert str(caught.value) == (
        "gpt-4o-2024-08-06 hit its output ceiling (max_tokens=1) mid-answer; "
        "raise max_tokens or retry the turn"
    )
    with pytest.raises(TruncatedResponse, match=r"^gpt-4o-2024-08-06 hit its output ceiling mid"):
        CHAT.parse(_raw("oai_finish_length"), requested_model=REQUESTED)


def test_a_refusal_raises_model_refusal_with_its_text() -> None:
    """A non-null ``refusal`` is a ModelRefusal carrying the model's words, never an empty success."""
    with pytest.raises(ModelRefusal) as caught:
        CHAT.parse(_raw("oai_refusal"), requested_model=REQUESTED)
    assert caught.value.server_message == "I'm very sorry, but I can't assist with that."
    assert str(caught.value) == (
        "gpt-4o-2024-08-06 refused: I'm very sorry, but I can't assist with that."
    )


def test_a_content_filter_stop_raises_model_refusal() -> None:
    """``finish_reason: content_filter`` is a ModelRefusal too."""
    body = _completion(content=None)
    body["choices"][0]["finish_reason"] = "content_filter"
    with pytest.raises(ModelRefusal, match="content filter") as caught:
        CHAT.parse(body, requested_model=REQUESTED)
    assert type(caught.value) is ModelRefusal


@pytest.mark.parametrize("name", ERROR_NAMES)
def test_error_bodies_raise_llm_error_with_the_server_type_and_message(name: str) -> None:
    """An error envelope is an LLMError carrying the server's type and message, not a crash."""
    facts = MANIFEST[name]["derived"]
    with pytest.raises(LLMError) as caught:
        CHAT.parse(_raw(name), requested_model=REQUESTED)
    assert type(caught.value) is LLMError
    expected_type = None if facts["error_type"] == "None" else facts["error_type"]
    assert caught.value.error_type == expected_type
    assert caught.value.server_message == facts["error_message"][:500]


def test_a_body_that_is_not_a_completion_raises_llm_error() -> None:
    """A 200 body with no choices is an LLMError that says what is missing."""
    with pytest.raises(LLMError) as caught:
        CHAT.parse(_raw("malformed_200_not_a_chat_completion"), requested_model=REQUESTED)
    assert type(caught.value) is LLMError
    assert str(caught.value) == "malformed chat completion: choices: Field required"


def test_several_choices_use_the_first() -> None:
    """With n > 1 choices, the first is the answer."""
    completion = CHAT.parse(_raw("oai_multiple_choices"), requested_model=REQUESTED)
    assert completion.events == [
        AssistantText(
            text='{"city":"San Francisco","temperature":64,"units":"f"}',
            model="gpt-4o-2024-08-06",
        )
    ]


def test_litellm_thinking_blocks_become_verbatim_reasoning_events() -> None:
    """LiteLLM's ``thinking_blocks`` win over ``reasoning_content`` and are kept verbatim, in order."""
    # Shape of LiteLLM's Anthropic -> chat translation (litellm/llms/anthropic/chat/transformation.py).
    thinking = {"type": "thinking", "thinking": "Check the file.", "signature": "EqQBCkgIARAB"}
    redacted = {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3p"}
    body = _completion(
        content="Reading it.",
        reasoning_content="Check the file.",
        thinking_blocks=[thinking, redacted],
    )
    completion = CHAT.parse(body, requested_model=REQUESTED)
    assert completion.events == [
        Reasoning(model=REQUESTED, response_model="claude-sonnet-4-5-20250929", block=thinking),
        Reasoning(model=REQUESTED, response_model="claude-sonnet-4-5-20250929", block=redacted),
        AssistantText(text="Reading it.", model="claude-sonnet-4-5-20250929"),
    ]


def test_litellm_cache_fields_map_to_cache_read_and_write() -> None:
    """LiteLLM's Anthropic usage: prompt_tokens counts all input; cache read and write are kept."""
    body = _completion(content="ok")
    body["usage"] = {
        "prompt_tokens": 2120,
        "completion_tokens": 7,
        "total_tokens": 2127,
        "prompt_tokens_details": {
            "cached_tokens": 2000,
            "cache_creation_tokens": 100,
            "text_tokens": 20,
        },
        "cache_creation_input_tokens": 100,
        "cache_read_input_tokens": 2000,
    }
    usage = CHAT.parse(body, requested_model=REQUESTED).usage
    assert usage == Usage(input=2120, output=7, cache_read=2000, cache_write=100)


def test_absent_usage_is_zero_usage() -> None:
    """A completion without usage parses with all counts zero."""
    body = _completion(content="ok")
    body["usage"] = None
    assert CHAT.parse(body, requested_model=REQUESTED).usage == Usage()


def test_text_falls_back_to_the_requested_model_and_list_content_is_joined() -> None:
    """Text is tagged with the response's model or else the requested one; text parts are joined."""
    body = _completion(content=[{"type": "text", "text": "a"}, {"type": "text", "text": "b"}])
    body["model"] = None
    completion = CHAT.parse(body, requested_model=REQUESTED)
    assert completion.events == [AssistantText(text="ab", model=REQUESTED)]
    assert completion.response_model is None


def _call(name: str, arguments: Any) -> dict[str, Any]:
    return {"id": "x", "type": "function", "function": {"name": name, "arguments": arguments}}


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [("", {}), (None, {}), ({"a": 1}, {"a": 1}), ('{"a": [1, 2]}', {"a": [1, 2]})],
    ids=["empty_string", "null", "object", "json_text"],
)
def test_tool_arguments_in_tolerated_shapes(arguments: Any, expected: dict[str, Any]) -> None:
    """Empty or null arguments mean no arguments; an object sent as such is taken as is."""
    body = _completion(content=None, tool_calls=[_call("read_file", arguments)])
    (call,) = CHAT.parse(body, requested_model=REQUESTED).events
    assert isinstance(call, ToolCall)
    assert call.arguments == expected


@pytest.mark.parametrize(
    ("name", "arguments", "message"),
    [
        (
            "read_file",
            '{"path": "a',
            "tool call 'read_file' had non-JSON arguments: '{\"path\": \"a'",
        ),
        ("read_file", "NaN", "tool call 'read_file' had non-JSON arguments: 'NaN'"),
        ("run_tests", "[1, 2]", "tool call 'run_tests' arguments were list, expected an object"),
        ("run_tests", '"x"', "tool call 'run_tests' arguments were str, expected an object"),
        (
            "bad name!",
            "{}",
            "tool call 'bad name!' names no valid tool (names match ^[a-zA-Z0-9_-]{1,64}$)",
        ),
    ],
    ids=["truncated_json", "nan", "array", "string", "bad_name"],
)
def test_bad_tool_calls_raise_llm_error_naming_the_tool(
    name: str, arguments: str, message: str
) -> None:
    """Arguments that are not a JSON object, or a malformed tool name, fail the turn by name."""
    body = _completion(content=None, tool_calls=[_call(name, arguments)])
    with pytest.raises(LLMError) as caught:
        CHAT.parse(body, requested_model=REQUESTED)
    assert type(caught.value) is LLMError
    assert str(caught.value) == message


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"id": "x", "choices": []}, "malformed chat completion: it has no choices"),
        (b"\xff\xfe not utf-8", "malformed chat completion: body: Invalid JSON"),
        (b"", "malformed chat completion: body: Invalid JSON"),
        ([1, 2], "a chat completion must be bytes, str or a mapping, not list"),
        (
            {"choices": [{"message": {"content": 5}}]},
            "malformed chat completion: choices.0.message.content.str: Input should be a valid string",
        ),
    ],
    ids=["no_choices", "not_utf8", "empty", "not_a_mapping", "content_not_text"],
)
def test_malformed_bodies_raise_llm_error(body: Any, message: str) -> None:
    """Malformed bodies raise LLMError with a short reason, never a decoding or lookup error."""
    with pytest.raises(LLMError) as caught:
        CHAT.parse(body, requested_model=REQUESTED)
    assert type(caught.value) is LLMError
    assert str(caught.value).startswith(message)


def test_negative_token_counts_raise_llm_error() -> None:
    """Usage with a negative count is a malformed body, not a crash."""
    body = _completion(content="ok")
    body["usage"]["prompt_tokens"] = -1
    with pytest.raises(
        LLMError, match=r"usage\.prompt_tokens: Input should be greater than or equal to 0"
    ):
        CHAT.parse(body, requested_model=REQUESTED)


def _parse_only_llm_errors(body: Any) -> None:
    with contextlib.suppress(LLMError):
        CHAT.parse(body, requested_model=REQUESTED)


FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(json_values)
def test_arbitrary_json_raises_nothing_but_llm_error(value: Any) -> None:
    """Any JSON value, as bytes, text or a Python object, parses or raises LLMError."""
    encoded = json.dumps(value)
    _parse_only_llm_errors(encoded.encode())
    _parse_only_llm_errors(encoded)
    _parse_only_llm_errors(value)


@FUZZ
@given(st.binary(max_size=200) | st.text(max_size=200))
def test_arbitrary_bytes_and_text_raise_nothing_but_llm_error(raw: bytes | str) -> None:
    """Any bytes or text (also lone surrogates) parse or raise LLMError."""
    _parse_only_llm_errors(raw)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            found.extend(_paths(item, (*prefix, key)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found.extend(_paths(item, (*prefix, index)))
    return found


@st.composite
def mutated_bodies(draw: st.DrawFn) -> Any:
    """A real chat body with one node deleted or replaced by arbitrary JSON."""
    body = json.loads(_raw(draw(st.sampled_from(CHAT_NAMES))))
    for _ in range(draw(st.integers(1, 3))):
        paths = _paths(body)
        path = draw(st.sampled_from(paths))
        replacement = draw(json_values)
        if not path:
            body = replacement
            continue
        parent = body
        for key in path[:-1]:
            parent = parent[key]
        if draw(st.booleans()):
            parent[path[-1]] = replacement
        elif isinstance(parent, dict):
            del parent[path[-1]]
        else:
            parent.pop(path[-1])
    return body


@FUZZ
@given(mutated_bodies())
def test_mutated_real_bodies_raise_nothing_but_llm_error(body: Any) -> None:
    """Real bodies with nodes deleted or replaced parse or raise LLMError, as dicts and as bytes."""
    _parse_only_llm_errors(copy.deepcopy(body))
    _parse_only_llm_errors(json.dumps(body).encode())
