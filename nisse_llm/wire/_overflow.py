"""Recognise a context-window refusal and read its token counts (pure: text in, numbers out).

Nothing in the status or the error type tells an overflow from any other bad request
(the proxy answers 400 ``invalid_request_error`` for both): only the wording does. The
proxy marks the ones LiteLLM recognised with ``litellm.ContextWindowExceededError`` and
keeps the provider's own words after it; the wordings below are the providers' own (see
``tests/fixtures/overflow/bodies.json``) and those LiteLLM 1.108's exception mapping
matches, so a plain OpenAI-compatible server's refusal is recognised too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

__all__ = ["Overflow", "read_overflow"]


@dataclass(frozen=True, slots=True)
class Overflow:
    """A context-window refusal: the window and the request's size, where the text said."""

    limit_tokens: int | None = None
    requested_tokens: int | None = None


_N = r"(\d[\d,]*)"
# Signals that need no count: LiteLLM's class name, OpenAI's code, llama.cpp's type.
_MARKERS: Final = ("contextwindowexceedederror", "context_length_exceeded")
_TYPES: Final = frozenset({"exceed_context_size_error", "context_exceeded"})
# Wordings without counts (each one a provider's, or one LiteLLM's mapping matches).
_PHRASES: Final = (
    "maximum context length",  # OpenAI, Azure, vLLM, DeepSeek, OpenRouter, Mistral
    "prompt is too long",  # Anthropic, Bedrock
    "exceed context limit",  # Anthropic: input plus max_tokens
    "input tokens exceed the configured limit",  # OpenAI GPT-5
    "exceeds the maximum number of tokens allowed",  # Gemini
    "exceeds the available context size",  # llama.cpp
    "is longer than the model's context length",
    "model's maximum context limit",
    "maximum prompt length is",  # xAI
    "input is too long",  # Bedrock, Replicate
    "`inputs` tokens + `max_new_tokens` must be",  # TGI, Together, SageMaker
    "too many tokens: total number of tokens",  # Cohere
    "prompt has too many tokens",  # AI21
    "string too long. expected a string with maximum length",  # OpenAI: one huge message
    "request payload size exceeds",  # Vertex AI
)
_PATTERNS: Final = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        r"current length is \d+ while limit is \d+",  # Cerebras
        r"maximum input length is \d+ tokens",
        r"input too long: \d+ input tokens, limit is \d+",
        r"prompt tokens \(\d+\) exceed model maximum \(\d+\)",  # Bedrock Mantle
    )
)
# LiteLLM's own exclusions: a parameter (such as ``user``) over its length is no overflow.
_NOT_OVERFLOW: Final = ("string_above_max_length", "invalid 'user'")

# (pattern, which groups are the limit, which are summed into the request)
_COUNTS: Final[tuple[tuple[re.Pattern[str], tuple[int, ...], tuple[int, ...]], ...]] = tuple(
    (re.compile(pattern, re.IGNORECASE | re.DOTALL), limit, requested)
    for pattern, limit, requested in (
        # OpenAI: "maximum context length is N tokens. However, your messages resulted in M
        # tokens" / "you requested M tokens (X in the messages, Y in the completion)";
        # vLLM: "your request has M input tokens"; OpenRouter: "you requested about M".
        (
            rf"maximum context length is {_N} tokens.{{0,80}}?"
            rf"(?:resulted in|requested(?: about)?|request has) {_N}",
            (1,),
            (2,),
        ),
        (rf"prompt is too long: {_N} tokens > {_N} maximum", (2,), (1,)),  # Anthropic
        (rf"exceed context limit: {_N} \+ {_N} > {_N}", (3,), (1, 2)),  # Anthropic
        (
            rf"exceed the configured limit of {_N} tokens.{{0,20}}?resulted in {_N} tokens",
            (1,),
            (2,),
        ),  # OpenAI GPT-5
        (
            rf"input token count \({_N}\) exceeds the maximum number of tokens allowed \({_N}\)",
            (2,),
            (1,),
        ),  # Gemini
        (
            rf"request \({_N} tokens\) exceeds the available context size \({_N} tokens\)",
            (2,),
            (1,),
        ),  # llama.cpp
        (
            rf"must be <= {_N}\. given: {_N} `inputs` tokens and {_N} `max_new_tokens`",
            (1,),
            (2, 3),
        ),  # TGI
        (rf"current length is {_N} while limit is {_N}", (2,), (1,)),  # Cerebras
        (rf"cannot exceed {_N} - received {_N}", (1,), (2,)),  # Cohere
        (rf"maximum prompt length is {_N} but the request contains {_N}", (1,), (2,)),  # xAI
        (
            rf"prompt contains {_N} tokens and {_N} draft tokens, too large for model with "
            rf"{_N} maximum context length",
            (3,),
            (1, 2),
        ),  # Mistral
        (rf"prompt tokens \({_N}\) exceed model maximum \({_N}\)", (2,), (1,)),  # Bedrock
        (rf"input too long: {_N} input tokens, limit is {_N}", (2,), (1,)),
        (rf"maximum input length is {_N} tokens", (1,), ()),
    )
)


def _int(text: str) -> int:
    return int(text.replace(",", ""))


def _counts(text: str) -> Overflow:
    for pattern, limit, requested in _COUNTS:
        found = pattern.search(text)
        if found is not None:
            return Overflow(
                limit_tokens=sum(_int(found.group(i)) for i in limit),
                requested_tokens=(
                    sum(_int(found.group(i)) for i in requested) if requested else None
                ),
            )
    return Overflow()


def read_overflow(text: str, *, error_type: str | None, code: str | None) -> Overflow | None:
    """The overflow ``text`` (an error's message, or its whole body) reports, else ``None``.

    ``error_type`` and ``code`` are the body's ``error.type`` and ``error.code``.
    """
    lowered = text.lower()
    if any(mark in lowered for mark in _NOT_OVERFLOW) or (code or "").lower() in _NOT_OVERFLOW:
        return None
    recognised = (
        any(mark in lowered for mark in _MARKERS)
        or (code or "").lower() == "context_length_exceeded"
        or (error_type or "").lower() in _TYPES
        or any(phrase in lowered for phrase in _PHRASES)
        or any(pattern.search(text) for pattern in _PATTERNS)
    )
    return _counts(text) if recognised else None
