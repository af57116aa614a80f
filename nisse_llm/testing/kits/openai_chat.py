"""How the kit's scripted upstream speaks the chat completions route: its reply body,
the stream that re-tells it, and its kit."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, assert_never

from nisse_llm.stream._sse import ServerSentEvent
from nisse_llm.testing.kits.base import RouteKit, compact_json, pieces, sse_event
from nisse_llm.testing.parts import (
    CREATED,
    Part,
    RedactedThinking,
    Text,
    Thinking,
    Tokens,
    ToolUse,
    arguments_text,
    call_id,
    openai_error_body,
)

__all__ = ["OPENAI_CHAT_KIT", "openai_chat_body", "openai_chat_events"]

_OPENAI_STREAMED = frozenset(
    {"role", "content", "refusal", "reasoning_content", "thinking_blocks", "tool_calls"}
)


def openai_chat_body(
    parts: Sequence[Part],
    *,
    model: str,
    usage: Tokens,
    truncated: bool = False,
    serial: int = 1,
) -> dict[str, Any]:
    """A chat completion as an OpenAI-compatible provider returns it."""
    texts: list[str] = []
    reasoning: list[str] = []
    calls: list[dict[str, Any]] = []
    for index, part in enumerate(parts):
        if isinstance(part, Text):
            texts.append(part.text)
        elif isinstance(part, ToolUse):
            calls.append(
                {
                    "id": call_id(part, "call_scripted_", serial, index),
                    "type": "function",
                    "function": {"name": part.name, "arguments": arguments_text(part)},
                }
            )
        elif isinstance(part, Thinking):
            reasoning.append(part.thinking)
        elif isinstance(part, RedactedThinking):
            pass  # no chat-completions form exists for an opaque block
        else:
            assert_never(part)
    message: dict[str, Any] = {
        "role": "assistant",
        "content": "".join(texts) if texts else None,
        "refusal": None,
    }
    if calls:
        message["tool_calls"] = calls
    if reasoning:
        message["reasoning_content"] = "".join(reasoning)
    finish = "length" if truncated else ("tool_calls" if calls else "stop")
    return {
        "id": f"chatcmpl-scripted-{serial:04d}",
        "object": "chat.completion",
        "created": CREATED + serial,
        "model": model,
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
        "usage": {
            "prompt_tokens": usage.input,
            "completion_tokens": usage.output,
            "total_tokens": usage.input + usage.output,
            "prompt_tokens_details": {"cached_tokens": usage.cache_read, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
        },
        "system_fingerprint": None,
    }


def openai_chat_events(body: Mapping[str, Any], *, chunk_size: int = 8) -> list[ServerSentEvent]:
    """A ``chat.completion`` body as the ``chat.completion.chunk`` events that stream it.

    ``chunk_size`` is the number of characters of text (content, reasoning, arguments)
    per delta.
    """
    base = {k: v for k, v in body.items() if k not in ("choices", "usage", "object")}
    base["object"] = "chat.completion.chunk"
    has_usage = body.get("usage") is not None

    def chunk(choices: list[dict[str, Any]], usage: Any = None) -> ServerSentEvent:
        data = {**base, "choices": choices}
        if has_usage:
            data["usage"] = usage
        return sse_event(data)

    events: list[ServerSentEvent] = []
    for position, choice in enumerate(body.get("choices") or ()):
        index = choice.get("index", position)

        def delta(
            fields: dict[str, Any], finish: Any = None, index: int = index
        ) -> ServerSentEvent:
            return chunk(
                [{"index": index, "delta": fields, "logprobs": None, "finish_reason": finish}]
            )

        message = choice.get("message") or {}
        events.append(delta(_openai_role_delta(message)))
        events.extend(delta(d) for d in _openai_text_deltas(message, chunk_size))
        events.extend(delta({"tool_calls": [d]}) for d in _openai_tool_deltas(message, chunk_size))
        events.append(delta({}, choice.get("finish_reason")))
    if has_usage:
        events.append(chunk([], body["usage"]))
    events.append(ServerSentEvent(data="[DONE]"))
    return events


def _openai_role_delta(message: Mapping[str, Any]) -> dict[str, Any]:
    first: dict[str, Any] = {"role": message.get("role", "assistant")}
    content = message.get("content")
    first["content"] = "" if isinstance(content, str) else content
    for key, value in message.items():
        if key not in _OPENAI_STREAMED or (key != "content" and not isinstance(value, str | list)):
            first[key] = value
    return first


def _openai_text_deltas(message: Mapping[str, Any], size: int) -> list[dict[str, Any]]:
    deltas: list[dict[str, Any]] = []
    reasoning = message.get("reasoning_content")
    if isinstance(reasoning, str):
        deltas.extend({"reasoning_content": piece} for piece in pieces(reasoning, size))
    blocks = message.get("thinking_blocks")
    for at, block in enumerate(blocks if isinstance(blocks, list) else ()):
        # LiteLLM's fragments: the text in pieces, then empty text with the signature.
        if block.get("type") != "thinking":
            deltas.append({"thinking_blocks": [{**block, "index": at}]})
            continue
        for piece in pieces(block.get("thinking") or "", size):
            deltas.append(
                {"thinking_blocks": [{"type": "thinking", "thinking": piece, "index": at}]}
            )
        rest = {k: v for k, v in block.items() if k != "thinking"}
        deltas.append({"thinking_blocks": [{**rest, "thinking": "", "index": at}]})
    content = message.get("content")
    if isinstance(content, str):
        deltas.extend({"content": piece} for piece in pieces(content, size))
    refusal = message.get("refusal")
    if isinstance(refusal, str):
        deltas.extend({"refusal": piece} for piece in pieces(refusal, size))
    return deltas


def _openai_tool_deltas(message: Mapping[str, Any], size: int) -> list[dict[str, Any]]:
    calls = message.get("tool_calls")
    if not isinstance(calls, list):
        return []
    rounds: list[list[dict[str, Any]]] = []
    for index, call in enumerate(calls):
        function = call.get("function") or {}
        arguments = function.get("arguments")
        text = arguments if isinstance(arguments, str) else compact_json(arguments or {})
        first = {k: v for k, v in call.items() if k != "function"}
        first["index"] = index
        first["function"] = {"name": function.get("name"), "arguments": ""}
        steps = [first]
        steps.extend({"index": index, "function": {"arguments": p}} for p in pieces(text, size))
        rounds.append(steps)
    # Round robin: each call's fragments interleave with the others'.
    longest = max((len(steps) for steps in rounds), default=0)
    return [steps[i] for i in range(longest) for steps in rounds if i < len(steps)]


#: LiteLLM's chat route ends a broken stream with a chunk in the OpenAI error shape.
OPENAI_CHAT_KIT = RouteKit(
    reply_body=openai_chat_body,
    error_body=lambda message: openai_error_body(message, type="server_error"),
    events=openai_chat_events,
    error_event=lambda kind, message: sse_event(
        {"error": {"message": message, "type": kind, "param": None, "code": "500"}}
    ),
)
