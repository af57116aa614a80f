"""Structured answers asked natively: ``output_config.format`` for Claude on the messages
route, a strict ``response_format`` for OpenAI models on the chat route, with thinking on;
the answer is the reply's text, repaired like any other."""

from __future__ import annotations

from typing import Literal

import pytest
from pydantic import BaseModel, Field

from nisse_llm.config.model_rules import rules_for
from nisse_llm.config.options import AnswerOptions, RequestOptions
from nisse_llm.errors import OutputValidationError
from nisse_llm.events.canonical import AssistantText, Reasoning, UserText
from nisse_llm.render.typed import TypedExchange, closed_schema
from nisse_llm.testing import Script, ScriptedTransport, Thinking, reply
from nisse_llm.transport.clients import AnthropicPassthroughClient, LiteLLMClient

BASE = "http://proxy.test"
LOG = [UserText(text="Plan the fix.")]


class Plan(BaseModel):
    """A plan of work."""

    steps: list[str] = Field(min_length=1)
    risk: Literal["low", "high"]


class Loose(BaseModel):
    """A model with an optional field, which OpenAI's strict mode cannot take."""

    note: str
    score: int = 0


PLAN_SCHEMA = {
    "description": "A plan of work.",
    "properties": {
        "steps": {"items": {"type": "string"}, "minItems": 1, "title": "Steps", "type": "array"},
        "risk": {"enum": ["low", "high"], "title": "Risk", "type": "string"},
    },
    "required": ["steps", "risk"],
    "title": "Plan",
    "type": "object",
    "additionalProperties": False,
}


def test_the_messages_route_asks_a_thinking_claude_model_through_output_config() -> None:
    """claude-opus-5-5 with reasoning gets adaptive thinking, the effort and the format in one
    ``output_config``, no answer tool; its text answer validates."""
    script = Script().messages(
        reply(Thinking("Low risk.", "sig-1"), '{"steps": ["fix"], "risk": "low"}')
    )
    with AnthropicPassthroughClient(BASE, "sk-test", transport=ScriptedTransport(script)) as client:
        result = client.complete_as(
            Plan, LOG, None, "claude-opus-5-5", options=RequestOptions(reasoning="high")
        )
    assert result.value == Plan(steps=["fix"], risk="low")
    assert [type(event) for event in result.events] == [Reasoning, AssistantText]
    [request] = script.requests
    body = request.json
    assert body["thinking"] == {"type": "adaptive"}
    assert body["output_config"] == {
        "effort": "high",
        "format": {"type": "json_schema", "schema": PLAN_SCHEMA},
    }
    assert "tools" not in body
    assert "tool_choice" not in body


def test_the_chat_route_asks_an_openai_model_through_a_strict_response_format() -> None:
    """gpt-5.5 gets a strict ``response_format`` named after the answer type beside its tools."""
    script = Script().chat(reply('{"steps": ["read", "fix"], "risk": "high"}'))
    with LiteLLMClient(BASE, "sk-test", transport=ScriptedTransport(script)) as client:
        result = client.complete_as(
            Plan, LOG, None, "gpt-5.5", options=RequestOptions(reasoning="medium")
        )
    assert result.value.steps == ["read", "fix"]
    [request] = script.requests
    body = request.json
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "Plan", "schema": PLAN_SCHEMA, "strict": True},
    }
    assert body["reasoning_effort"] == "medium"
    assert "tool_choice" not in body


def test_an_answer_that_does_not_validate_is_sent_back_and_repaired() -> None:
    """The reply and what was wrong with it go back as a user turn; the second answer is taken."""
    script = Script().chat(
        reply('{"steps": [], "risk": "medium"}'), reply('{"steps": ["a"], "risk": "low"}')
    )
    with LiteLLMClient(BASE, "sk-test", transport=ScriptedTransport(script)) as client:
        result = client.complete_as(Plan, LOG, None, "gpt-5.4-mini", repair_attempts=1)
    assert result.attempts == 2
    first, feedback, second = result.events
    assert first == AssistantText(text='{"steps": [], "risk": "medium"}', model="gpt-5.4-mini")
    assert isinstance(feedback, UserText)
    assert feedback.text.startswith("Your answer does not validate as Plan: steps: List should")
    assert isinstance(second, AssistantText)
    sent = script.requests[1].json["messages"]
    assert sent[-1] == {"role": "user", "content": feedback.text}


def test_out_of_repairs_the_native_answer_raises_with_the_raw_text() -> None:
    """No repairs left: `OutputValidationError` with the raw text and pydantic's errors."""
    script = Script().messages(reply("not json"))
    with (
        AnthropicPassthroughClient(BASE, "sk-test", transport=ScriptedTransport(script)) as client,
        pytest.raises(OutputValidationError) as caught,
    ):
        client.complete_as(Plan, LOG, None, "claude-haiku-5-5")
    assert caught.value.raw == "not json"
    assert caught.value.errors[0]["type"] == "json_invalid"


def _plan(
    output_type: type[BaseModel], model: str, route: str, options: RequestOptions | None = None
) -> TypedExchange[BaseModel]:
    """How ``complete_as`` would ask ``model`` on ``route``."""
    family = "anthropic" if model.startswith("claude-") else "openai"
    return TypedExchange.begin(
        output_type,
        LOG,
        None,
        None,
        options=options,
        repair_attempts=0,
        rules=rules_for(model, family),
        route=route,
    )


def test_a_schema_strict_mode_cannot_take_falls_back_to_the_forced_tool() -> None:
    """An optional field: OpenAI's strict mode needs every property required, so the answer
    goes through the forced tool instead."""
    exchange = _plan(Loose, "gpt-5.5", "openai_chat")
    assert exchange.mode == "forced"
    assert closed_schema(Loose.model_json_schema(), require_all=False) is not None
    assert closed_schema(Loose.model_json_schema(), require_all=True) is None


def test_claude_on_the_chat_route_is_asked_by_a_tool() -> None:
    """The proxy cannot carry Claude's native format on the chat route: a tool it is."""
    exchange = _plan(Plan, "claude-opus-4-8", "openai_chat", RequestOptions(reasoning="high"))
    assert exchange.mode == "auto"
    assert not isinstance(exchange.options, AnswerOptions)


def test_a_model_that_refuses_a_forced_tool_is_offered_it() -> None:
    """claude-sonnet-5-5 refuses a forced tool even without thinking: on the chat route the
    answer tool is offered with ``auto``."""
    exchange = _plan(Plan, "claude-sonnet-5-5", "openai_chat")
    assert exchange.mode == "auto"
    assert exchange.options.tool_choice == "auto"
