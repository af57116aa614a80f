"""Realistic provider bodies: OpenAI chat completions and Responses, Anthropic messages,
errors. The parts are `nisse_llm.testing.parts`'; each route's bodies live in its kit
(`nisse_llm.testing.kits`), gathered here under the names tests import."""

from __future__ import annotations

from nisse_llm.testing.kits.anthropic_messages import anthropic_error_body, anthropic_message_body
from nisse_llm.testing.kits.openai_chat import openai_chat_body
from nisse_llm.testing.kits.openai_responses import (
    openai_responses_body,
    openai_responses_failed_body,
)
from nisse_llm.testing.parts import (
    Part,
    RedactedThinking,
    Text,
    Thinking,
    Tokens,
    ToolUse,
    estimate_tokens,
    openai_error_body,
)

__all__ = [
    "Part",
    "RedactedThinking",
    "Text",
    "Thinking",
    "Tokens",
    "ToolUse",
    "anthropic_error_body",
    "anthropic_message_body",
    "estimate_tokens",
    "openai_chat_body",
    "openai_error_body",
    "openai_responses_body",
    "openai_responses_failed_body",
]
