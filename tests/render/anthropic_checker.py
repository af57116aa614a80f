"""The Anthropic messages API's structural rules, as a checker of request bodies (dicts).

Each rule is one the live API enforces with a 400 (its text quoted where known). The
checker returns every violation it finds, so a failing test shows all of them at once.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

from nisse_llm.events.canonical import AssistantText, Reasoning, ToolCall, ToolResult, UserText
from nisse_llm.render.anthropic_messages import (
    EMPTY_ERROR_OUTPUT,
    INTERRUPTED_RESULT,
    LEADING_PLACEHOLDER,
    TRAILING_PLACEHOLDER,
)

__all__ = ["anthropic_log_violations", "anthropic_violations", "official_violations"]

_ID = re.compile(r"^[a-zA-Z0-9_-]+$")
_THINKING = ("thinking", "redacted_thinking")
_ASSISTANT_ONLY = ("tool_use", *_THINKING)


def _blocks(message: dict[str, Any]) -> list[Any]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return content if isinstance(content, list) else []


def _blank(text: Any) -> bool:
    return not isinstance(text, str) or not text.strip()


def _check_text(block: dict[str, Any], where: str, problems: list[str]) -> None:
    # "messages: text content blocks must be non-empty" (and must hold non-whitespace text).
    if _blank(block.get("text")):
        problems.append(f"{where}: empty or whitespace-only text block")


def _check_result_content(block: dict[str, Any], where: str, problems: list[str]) -> None:
    content = block.get("content")
    if isinstance(content, str) and not content.strip():
        problems.append(f"{where}: tool_result content is blank")
    if isinstance(content, list):
        for index, inner in enumerate(content):
            if isinstance(inner, dict) and inner.get("type") == "text":
                _check_text(inner, f"{where}.content.{index}", problems)
            elif isinstance(inner, dict) and inner.get("type") == "image":
                _check_image(inner, f"{where}.content.{index}", problems)
            else:
                problems.append(f"{where}.content.{index}: not a text or image block")
    if block.get("is_error") is True and content in (None, "", []):
        problems.append(f"{where}: an error tool_result has no content")


_IMAGE_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")


def _check_image(block: dict[str, Any], where: str, problems: list[str]) -> None:
    # The image source kinds the API documents for a request: base64 (with one of four
    # media types) or url.
    source = block.get("source")
    if not isinstance(source, dict):
        problems.append(f"{where}: an image block needs a source")
    elif source.get("type") == "base64":
        if source.get("media_type") not in _IMAGE_TYPES:
            problems.append(f"{where}: image media_type {source.get('media_type')!r}")
        if not isinstance(source.get("data"), str) or not source["data"]:
            problems.append(f"{where}: image data missing")
    elif source.get("type") == "url":
        if not isinstance(source.get("url"), str):
            problems.append(f"{where}: image url missing")
    else:
        problems.append(f"{where}: unknown image source type {source.get('type')!r}")


def anthropic_violations(body: dict[str, Any]) -> list[str]:
    """Every rule of the messages API that ``body`` breaks (empty when it is acceptable)."""
    problems: list[str] = []
    if not isinstance(body.get("model"), str) or not body["model"]:
        problems.append("model: missing or empty")
    max_tokens = body.get("max_tokens")
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
        problems.append("max_tokens: missing or not a positive integer")
    system = body.get("system")
    if isinstance(system, str) and not system.strip():
        problems.append("system: blank system prompt")
    if isinstance(system, list):
        for index, block in enumerate(system):
            _check_text(block, f"system.{index}", problems)
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return [*problems, "messages: at least one message is required"]
    if messages[0].get("role") != "user":
        problems.append("messages.0: the first message must be a user message")
    if messages[-1].get("role") != "user":
        problems.append("messages: the last message must be a user message (no prefill)")

    seen_ids: set[str] = set()
    pending: list[str] = []  # tool_use ids the next message must answer first
    uses_tools = False
    for position, message in enumerate(messages):
        where = f"messages.{position}"
        role = message.get("role")
        if role not in ("user", "assistant"):
            problems.append(f"{where}: role {role!r} is neither user nor assistant")
        if position and role == messages[position - 1].get("role"):
            problems.append(f"{where}: roles must alternate")
        blocks = _blocks(message)
        if not blocks:
            problems.append(f"{where}: all messages must have non-empty content")
        leading_results: list[str] = []
        in_leading = True
        thinking_allowed = True
        uses: list[str] = []
        for index, block in enumerate(blocks):
            at = f"{where}.content.{index}"
            kind = block.get("type") if isinstance(block, dict) else None
            if kind != "tool_result":
                in_leading = False
            if kind not in _THINKING:
                thinking_allowed = False
            if kind == "text":
                _check_text(block, at, problems)
            elif kind == "image":
                if role != "user":
                    problems.append(f"{at}: image outside a user message")
                _check_image(block, at, problems)
            elif kind == "tool_result":
                uses_tools = True
                if role != "user":
                    problems.append(f"{at}: tool_result outside a user message")
                if in_leading:
                    leading_results.append(block.get("tool_use_id"))
                else:
                    problems.append(f"{at}: tool_result after other content in the message")
                _check_result_content(block, at, problems)
            elif kind == "tool_use":
                uses_tools = True
                block_id = block.get("id")
                if not isinstance(block_id, str) or not _ID.match(block_id):
                    problems.append(f"{at}: tool_use.id must match ^[a-zA-Z0-9_-]+$")
                elif block_id in seen_ids:
                    problems.append(f"{at}: tool_use id {block_id!r} is not unique")
                else:
                    seen_ids.add(block_id)
                    uses.append(block_id)
                if not isinstance(block.get("input"), dict):
                    problems.append(f"{at}: tool_use input must be an object")
            elif kind in _THINKING:
                if not thinking_allowed:
                    problems.append(
                        f"{at}: if an assistant message contains any thinking blocks, "
                        "the first block must be thinking or redacted_thinking"
                    )
            else:
                problems.append(f"{at}: unexpected block type {kind!r}")
            if kind in _ASSISTANT_ONLY and role != "assistant":
                problems.append(f"{at}: {kind} outside an assistant message")
        if pending:
            if sorted(leading_results) != sorted(pending):
                problems.append(
                    f"{where}: `tool_use` ids were found without `tool_result` blocks "
                    f"immediately after (expected {sorted(pending)}, found {sorted(leading_results)})"
                )
        elif leading_results:
            problems.append(
                f"{where}: unexpected `tool_use_id` found in `tool_result` blocks: "
                f"{leading_results} (each needs a tool_use in the previous message)"
            )
        pending = uses if role == "assistant" else []
    if pending:
        problems.append("messages: the last assistant message has unanswered tool_use blocks")
    if uses_tools and not body.get("tools"):
        problems.append("tools: requests with tool_use or tool_result blocks must define tools")
    names = [tool.get("name") for tool in body.get("tools") or ()]
    if len(names) != len(set(names)):
        problems.append("tools: tool names must be unique")
    return problems


def anthropic_log_violations(body: dict[str, Any], events: list[Any], model: str) -> list[str]:
    """What of the log ``body`` lost, reordered or leaked (the renderer may drop only blank
    text and reasoning it must not replay)."""
    problems: list[str] = []
    user_texts: list[str] = []
    assistant_items: list[tuple[str, Any]] = []
    results: dict[str, dict[str, Any]] = {}
    thinking: list[dict[str, Any]] = []
    for message in body["messages"]:
        for block in _blocks(message):
            kind = block["type"]
            if kind == "text" and message["role"] == "user":
                user_texts.append(block["text"])
            elif kind == "text":
                assistant_items.append(("text", block["text"]))
            elif kind == "tool_use":
                assistant_items.append(("call", (block["id"], block["name"], block["input"])))
            elif kind == "tool_result":
                results[block["tool_use_id"]] = block
            elif kind in _THINKING:
                thinking.append(block)
    # A placeholder may be the renderer's or the user's own words: either reading may hold.
    messages = body["messages"]
    bare = list(user_texts)
    if messages[0]["content"] == [{"type": "text", "text": LEADING_PLACEHOLDER}]:
        bare = bare[1:]
    if len(messages) > 1 and messages[-1]["content"] == [
        {"type": "text", "text": TRAILING_PLACEHOLDER}
    ]:
        bare = bare[:-1]
    expected_user = [e.text for e in events if isinstance(e, UserText) and e.text.strip()]
    if expected_user not in (user_texts, bare):
        problems.append("user texts lost, added or reordered")
    expected_assistant: list[tuple[str, Any]] = []
    for event in events:
        if isinstance(event, AssistantText) and event.text.strip():
            expected_assistant.append(("text", event.text))
        elif isinstance(event, ToolCall):
            expected_assistant.append(("call", (event.call_id, event.tool, event.arguments)))
    if assistant_items != expected_assistant:
        problems.append("assistant texts or calls lost, added or reordered")
    answered = {e.call_id: e for e in events if isinstance(e, ToolResult)}
    for event in events:
        if not isinstance(event, ToolCall):
            continue
        block = results.get(event.call_id)
        result = answered.get(event.call_id)
        if block is None:
            problems.append(f"call {event.call_id!r} has no tool_result")
        elif result is None:
            if block.get("content") != INTERRUPTED_RESULT or block.get("is_error") is not True:
                problems.append(f"interrupted call {event.call_id!r} lacks the interrupted result")
        else:
            want = result.output if result.output.strip() else None
            if want is None and result.is_error:
                want = EMPTY_ERROR_OUTPUT
            if block.get("content") != want or block.get("is_error") is not result.is_error:
                problems.append(f"result of {event.call_id!r} changed")
    allowed = [
        e.block for e in events if isinstance(e, Reasoning) and e.model == model and e.replayable
    ]
    for block in thinking:
        if block not in allowed:
            problems.append(f"reasoning replayed that the request model did not make: {block}")
    return problems


def official_violations(body: dict[str, Any]) -> list[str]:
    """Why the official SDK's request type rejects ``body`` (unknown keys forbidden everywhere)."""
    try:
        _force(_strict_params().validate_python(body))
    except ValidationError as exc:
        return [f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()]
    except _LooseMatch as exc:
        return [str(exc)]
    return []


class _LooseMatch(Exception):
    """A block matched only a response model of the SDK, which tolerates unknown keys."""


def _strict_params() -> Any:
    """``MessageCreateParamsNonStreaming`` with ``extra="forbid"``, which nested TypedDicts
    inherit (pydantic applies the outermost TypedDict config to TypedDicts without their own)."""
    global _STRICT
    if _STRICT is None:
        from anthropic.types.message_create_params import MessageCreateParamsNonStreaming

        class StrictParams(MessageCreateParamsNonStreaming):
            pass

        StrictParams.__pydantic_config__ = ConfigDict(extra="forbid")  # type: ignore[attr-defined]
        _STRICT = TypeAdapter(StrictParams)
    return _STRICT


_STRICT: Any = None


def _force(value: Any) -> Any:
    """Validate lazily typed parts: the SDK types use ``Iterable``, which pydantic checks only
    when iterated; and a block the param types refused may still match a tolerant response
    model, which would hide an unknown key."""
    if isinstance(value, BaseModel):
        raise _LooseMatch(
            f"{type(value).__name__} matched only a tolerant response model: {value!r}"[:300]
        )
    if isinstance(value, dict):
        return {key: _force(item) for key, item in value.items()}
    if isinstance(value, list | tuple) or type(value).__name__ == "ValidatorIterator":
        return [_force(item) for item in value]
    return value
