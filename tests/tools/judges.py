"""Official judges of a tool spec: both SDKs' request types and OpenAI's published schema.

A spec is rendered into a request on each route (one user turn, the tool declared) and
the body judged as the render tests judge theirs; its parameters are also checked to be a
valid JSON Schema (Draft 2020-12) with an object at the root.
"""

from __future__ import annotations

from typing import Any

import jsonschema  # type: ignore[import-untyped]  # no stubs in the dev extras

from nisse_llm.events.canonical import ToolSpec, UserText
from nisse_llm.render.anthropic_messages import AnthropicMessagesRenderer
from nisse_llm.render.openai_chat import OpenAIChatRenderer
from tests.render.anthropic_checker import anthropic_violations, official_violations
from tests.render.test_openai_official import judge_official, judge_schema

__all__ = ["judge_spec"]

_LOG = [UserText(text="Go.")]


def judge_spec(spec: ToolSpec) -> None:
    """Raise unless ``spec`` passes every judge on both routes."""
    jsonschema.Draft202012Validator.check_schema(spec.parameters)
    assert spec.parameters["type"] == "object"
    chat = OpenAIChatRenderer().render(_LOG, [spec], "gpt-5.4-mini", max_tokens=256)
    judge_official(chat)
    judge_schema(chat)
    assert chat["tools"][0]["function"]["parameters"] == spec.parameters
    messages: dict[str, Any] = AnthropicMessagesRenderer().render(
        _LOG, [spec], "claude-sonnet-4-6", max_tokens=256
    )
    assert official_violations(messages) == []
    assert anthropic_violations(messages) == []
    assert messages["tools"][0]["input_schema"] == spec.parameters
