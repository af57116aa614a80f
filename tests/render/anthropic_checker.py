"""The Anthropic messages API's structural rules, as a checker of request bodies (dicts).

Each rule is one the live API enforces with a 400 (its text quoted where known). The
checker returns every violation it finds, so a failing test shows all of them at once.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["anthropic_violations"]

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
    if block.get("is_error") is True and content in (None, "", []):
        problems.append(f"{where}: an error tool_result has no content")


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
