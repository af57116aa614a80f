"""The official judges of a chat body that carries request options.

``thinking``, ``output_config`` and an assistant message's ``thinking_blocks`` are LiteLLM's
extensions of the chat route for Anthropic models (forwarded to Anthropic): the openai SDK's
request type does not know them, so they are judged by the anthropic SDK's
``ThinkingConfigEnabledParam`` / ``ThinkingConfigAdaptiveParam``, ``OutputConfigParam`` and
``ThinkingBlockParam`` / ``RedactedThinkingBlockParam`` (unknown keys forbidden), and the
rest of the body by the openai SDK's request type and OpenAI's published schema.
"""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, TypeAdapter

from tests.render.test_openai_official import judge_official, judge_schema

__all__ = ["judge_chat_body"]

_JUDGES: dict[str, Any] = {}


def _strict(name: str) -> Any:
    """A strict judge of one anthropic SDK param type (unknown keys forbidden)."""
    if name not in _JUDGES:
        from anthropic.types import (
            OutputConfigParam,
            RedactedThinkingBlockParam,
            ThinkingBlockParam,
            ThinkingConfigAdaptiveParam,
            ThinkingConfigEnabledParam,
        )

        kinds = {
            "enabled": ThinkingConfigEnabledParam,
            "adaptive": ThinkingConfigAdaptiveParam,
            "output_config": OutputConfigParam,
            "thinking": ThinkingBlockParam,
            "redacted_thinking": RedactedThinkingBlockParam,
        }

        class Strict(kinds[name]):  # type: ignore[misc,valid-type]
            pass

        Strict.__pydantic_config__ = ConfigDict(extra="forbid")
        _JUDGES[name] = TypeAdapter(Strict)
    return _JUDGES[name]


def judge_chat_body(body: dict[str, Any]) -> None:
    """Raise unless ``body`` is a valid chat request (``thinking`` judged as Anthropic's)."""
    rest = dict(body)
    thinking = rest.pop("thinking", None)
    output_config = rest.pop("output_config", None)
    if thinking is not None:
        _strict(thinking["type"]).validate_python(thinking)
    if thinking is not None and thinking["type"] == "enabled":
        budget = thinking["budget_tokens"]
        assert 1024 <= budget < body["max_tokens"], (budget, body.get("max_tokens"))
    if output_config is not None:
        assert thinking is not None, "an effort sent without adaptive thinking"
        assert thinking["type"] == "adaptive"
        _strict("output_config").validate_python(output_config)
    messages = []
    for message in rest["messages"]:
        if "thinking_blocks" in message:
            assert thinking is not None, "thinking blocks sent with thinking off"
            message = dict(message)
            for block in message.pop("thinking_blocks"):
                _strict(block["type"]).validate_python(block)
        messages.append(message)
    rest["messages"] = messages
    judge_official(rest)
    judge_schema(rest)
