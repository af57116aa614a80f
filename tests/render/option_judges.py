"""The official judges of a chat body that carries request options.

``thinking`` is LiteLLM's extension of the chat route for Anthropic models (forwarded to
Anthropic as sent): the openai SDK's request type does not know it, so it is judged by the
anthropic SDK's ``ThinkingConfigParam`` (unknown keys forbidden) and the rest of the body by
the openai SDK's request type and OpenAI's published schema.
"""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, TypeAdapter

from tests.render.test_openai_official import judge_official, judge_schema

__all__ = ["judge_chat_body"]

_THINKING: Any = None


def _thinking_judge() -> Any:
    global _THINKING
    if _THINKING is None:
        from anthropic.types.thinking_config_enabled_param import ThinkingConfigEnabledParam

        class Strict(ThinkingConfigEnabledParam):
            pass

        Strict.__pydantic_config__ = ConfigDict(extra="forbid")  # type: ignore[attr-defined]
        _THINKING = TypeAdapter(Strict)
    return _THINKING


def judge_chat_body(body: dict[str, Any]) -> None:
    """Raise unless ``body`` is a valid chat request (``thinking`` judged as Anthropic's)."""
    rest = dict(body)
    thinking = rest.pop("thinking", None)
    if thinking is not None:
        _thinking_judge().validate_python(thinking)
        budget = thinking["budget_tokens"]
        assert 1024 <= budget < body["max_tokens"], (budget, body.get("max_tokens"))
    judge_official(rest)
    judge_schema(rest)
