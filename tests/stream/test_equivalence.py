"""Streamed and unstreamed replies agree: for every 200 body in the corpus, the same outcome."""

from __future__ import annotations

from typing import Any

import pytest

from nisse_llm.testing.sse import split_bytes, sse_stream
from tests.stream._support import (
    accumulator,
    feed_all,
    load_body,
    manifest,
    outcome,
    parse_body,
    route_of,
)

# Error bodies never stream: a failed request is answered before the first byte, and
# its classification is the client's, shared with complete().
ERROR_BODIES = {
    "oai_error_404_model_not_found",
    "oai_error_400_unsupported_value",
    "oai_error_400_tool_role_orphan",
    "compat_groq_error_400_tool_use_failed",
    "litellm_error_429_rate_limit",
    "litellm_error_429_budget_exceeded",
    "litellm_error_400_wrapped_anthropic",
    "ant_error_400_orphan_tool_result",
    "ant_error_429_rate_limit",
    "ant_error_404_not_found",
    "ant_error_400_unsupported_effort",
    "ant_error_529_overloaded",
    "ant_error_400_tool_use_unanswered",
    "ant_error_400_empty_text_block",
    "ant_error_400_tool_use_id_pattern",
}
# A 200 that is not a chat completion (no id, no choices) has no stream form to compare.
NOT_A_REPLY = {"malformed_200_not_a_chat_completion"}

ENTRIES = manifest()
REPLIES = [entry for entry in ENTRIES if entry["name"] not in ERROR_BODIES | NOT_A_REPLY]


def test_every_fixture_is_either_compared_or_excluded_by_name() -> None:
    """No conformance body escapes the equivalence test unnoticed: the skipped are named."""
    assert {entry["name"] for entry in ENTRIES if entry["http_status"] != 200} == ERROR_BODIES
    assert {entry["name"] for entry in ENTRIES if entry["kind"] == "malformed"} == NOT_A_REPLY
    assert len(REPLIES) == 28
    assert all(entry["http_status"] == 200 for entry in REPLIES)


def _streamed(route: Any, body: dict[str, Any], chunk_size: int, byte_size: int | None) -> Any:
    def run() -> Any:
        stream = sse_stream(route, body, chunk_size=chunk_size)
        acc = accumulator(route)
        feed_all(acc, [stream] if byte_size is None else split_bytes(stream, byte_size))
        return acc.finish()

    return run


@pytest.mark.parametrize(("chunk_size", "byte_size"), [(1, None), (7, 1), (64, 13)])
@pytest.mark.parametrize("entry", REPLIES, ids=lambda entry: entry["name"])
def test_a_streamed_reply_equals_the_same_reply_unstreamed(
    entry: dict[str, Any], chunk_size: int, byte_size: int | None
) -> None:
    """Events (ids normalised), usage, stop reason and model, or the error class and message, agree."""
    route = route_of(entry)
    body = load_body(entry["name"])
    if byte_size == 1 and len(str(body)) > 50_000:
        byte_size = 997  # the 260 KB server-tool body: one byte at a time adds nothing but time
    expected = outcome(lambda: parse_body(route, body))
    assert outcome(_streamed(route, body, chunk_size, byte_size)) == expected


def test_the_rebuilt_body_of_a_thinking_reply_keeps_the_signature() -> None:
    """The body rebuilt from a thinking stream carries each block verbatim, signature intact."""
    body = load_body("ant_thinking_text_tool_use")
    acc = accumulator("anthropic_messages")
    feed_all(acc, split_bytes(sse_stream("anthropic_messages", body, chunk_size=3), 5))
    acc.finish()
    assert acc.response_body() == body


@pytest.mark.parametrize(
    "name",
    [
        "oai_tool_calls_parallel",
        "compat_deepseek_reasoning_content_parallel_tools",
        "oai_usage_cached_tokens",
        "litellm_chat_azure_via_proxy",
    ],
)
def test_the_rebuilt_chat_body_matches_the_original(name: str) -> None:
    """The chat body rebuilt from chunks has the original's fields (bar stream-only ``logprobs``)."""
    body = load_body(name)
    acc = accumulator("openai_chat")
    feed_all(acc, [sse_stream("openai_chat", body, chunk_size=4)])
    rebuilt = acc.response_body()
    for choice in rebuilt["choices"]:
        assert choice.pop("logprobs") is None
    for choice in body["choices"]:
        choice.pop("logprobs", None)
        # DeepSeek numbers its tool calls in the body too; a stream spends the number on routing.
        for call in choice["message"].get("tool_calls") or ():
            call.pop("index", None)
    assert rebuilt == body
