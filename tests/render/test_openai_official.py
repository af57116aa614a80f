"""Official judges of the chat route's bodies: the openai SDK's request types and OpenAI's schema.

The SDK's ``CompletionCreateParamsNonStreaming`` is a TypedDict tree; wrapped in a model
with ``extra="forbid"``, that config reaches every nested TypedDict that has none of its
own, so an unknown key anywhere fails. Its ``Iterable`` fields validate lazily, so the
result is drained to make every nested item validate.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]  # no stubs in the dev extras
import pytest
from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming
from pydantic import BaseModel, ConfigDict, ValidationError

from nisse_llm.render.openai_chat import OpenAIChatRenderer
from tests.corpus import CORPUS, Conversation, corpus

CONFORMANCE = Path(__file__).parent.parent / "fixtures" / "conformance"
SCHEMA = json.loads((CONFORMANCE / "openai_create_chat_completion_request.schema.json").read_text())
CHAT = OpenAIChatRenderer()


class _OfficialJudge(BaseModel):
    model_config = ConfigDict(extra="forbid")

    body: CompletionCreateParamsNonStreaming


def _drain(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _drain(item) for key, item in value.items()}
    if isinstance(value, str | bytes | int | float | bool) or value is None:
        return value
    return [_drain(item) for item in value]  # lists and lazy ValidatorIterators alike


def judge_official(body: dict[str, Any]) -> None:
    """Validate ``body`` against the openai SDK's request type, unknown keys forbidden."""
    _drain(_OfficialJudge.model_validate({"body": body}).body)


_SCHEMA_VALIDATOR = jsonschema.validators.validator_for(SCHEMA)(SCHEMA)


def judge_schema(body: dict[str, Any]) -> None:
    """Validate ``body`` against OpenAI's published CreateChatCompletionRequest schema."""
    _SCHEMA_VALIDATOR.validate(body)


def _body(conversation: Conversation) -> dict[str, Any]:
    return CHAT.render(
        conversation.events,
        conversation.tools,
        conversation.model,
        conversation.system,
        max_tokens=1024,
    )


@pytest.mark.parametrize("conversation", corpus(), ids=lambda c: c.name)
def test_corpus_bodies_validate_against_the_official_types(conversation: Conversation) -> None:
    """Every corpus body is a valid openai ``CompletionCreateParamsNonStreaming``, no unknown key."""
    judge_official(_body(conversation))


@pytest.mark.parametrize("conversation", corpus(), ids=lambda c: c.name)
def test_corpus_bodies_validate_against_the_published_schema(conversation: Conversation) -> None:
    """Every corpus body validates against OpenAI's published request schema."""
    judge_schema(_body(conversation))


@pytest.mark.parametrize(
    "path",
    [
        ("messages", 0),
        ("messages", 1),
        ("messages", 2),
        ("messages", 2, "tool_calls", 0),
        ("messages", 2, "tool_calls", 0, "function"),
        ("tools", 0, "function"),
        (),
    ],
    ids=lambda path: ".".join(map(str, path)) or "top",
)
def test_the_official_judge_rejects_an_unknown_key_at_any_depth(path: tuple[Any, ...]) -> None:
    """The official-type judge is strict: one unknown key anywhere in a valid body fails it."""
    body = _body(CORPUS["multi_round_agent_loop"])
    judge_official(body)
    bad = copy.deepcopy(body)
    target = bad
    for key in path:
        target = target[key]
    target["surprise"] = 1
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        judge_official(bad)


def test_the_official_judge_rejects_a_tool_message_without_its_id() -> None:
    """The official-type judge catches a missing required field inside a message."""
    body = _body(CORPUS["single_tool_call"])
    del body["messages"][2]["tool_call_id"]
    with pytest.raises(ValidationError):
        judge_official(body)


@pytest.mark.parametrize(
    "name", ["req_oai_parallel_tool_roundtrip_200", "req_oai_system_role_rejected_by_model_400"]
)
def test_control_requests_pass_both_judges(name: str) -> None:
    """Real request bodies the API accepted (or rejected only for the model) pass both judges."""
    body = json.loads((CONFORMANCE / "requests" / f"{name}.json").read_text())
    judge_schema(body)
    judge_official(body)


def test_the_schema_judge_rejects_a_tool_message_without_its_id() -> None:
    """The schema judge is not vacuous: a tool message with no tool_call_id fails it."""
    body = _body(CORPUS["single_tool_call"])
    del body["messages"][2]["tool_call_id"]
    with pytest.raises(jsonschema.ValidationError):
        judge_schema(body)
