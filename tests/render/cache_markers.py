"""Readers of prompt-cache markers in rendered bodies (dicts), shared by the prompt-cache tests.

A marker is a ``cache_control`` key. `unmark` removes the markers themselves: the keys, and
on the chat route the one-part text list a marked message's string became (on the
messages route, the one-block list a marked system prompt became), so an unmarked body
compares equal to the body rendered with caching off.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "chat_marker_problems",
    "marker_paths",
    "messages_marker_problems",
    "prefix_through_last_marker",
    "strip_markers",
    "unmark",
]

Path = tuple[str | int, ...]


def marker_paths(value: Any, path: Path = ()) -> list[Path]:
    """The path of every object in ``value`` that holds a ``cache_control`` key, in body order."""
    found: list[Path] = []
    if isinstance(value, dict):
        if "cache_control" in value:
            found.append(path)
        for key, item in value.items():
            if key != "cache_control":
                found.extend(marker_paths(item, (*path, key)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found.extend(marker_paths(item, (*path, index)))
    return found


def strip_markers(value: Any) -> Any:
    """``value`` without any ``cache_control`` key, at any depth (a new object)."""
    if isinstance(value, dict):
        return {k: strip_markers(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [strip_markers(item) for item in value]
    return value


def _collapse(content: Any) -> Any:
    only = content[0] if isinstance(content, list) and len(content) == 1 else None
    if isinstance(only, dict) and only.keys() == {"type", "text"} and only["type"] == "text":
        return only["text"]
    return content


def unmark(body: dict[str, Any], *, route: str) -> dict[str, Any]:
    """``body`` with its markers removed, as the renderer sends it with caching off."""
    plain: dict[str, Any] = strip_markers(body)
    if "system" in plain:
        plain["system"] = _collapse(plain["system"])
    if route == "chat":
        for message in plain["messages"]:
            if "content" in message:
                message["content"] = _collapse(message["content"])
    return plain


def _at(body: Any, path: Path) -> Any:
    for key in path:
        body = body[key]
    return body


def messages_marker_problems(body: dict[str, Any]) -> list[str]:
    """Markers on the messages route that are not on the last tool, the system text or a
    non-empty text, tool_use or tool_result block (never on thinking), or more than 4."""
    paths = marker_paths(body)
    problems = [f"{len(paths)} breakpoints, the API allows 4"] if len(paths) > 4 else []
    for path in paths:
        block = _at(body, path)
        where = ".".join(map(str, path))
        if path[0] == "tools":
            if path != ("tools", len(body["tools"]) - 1):
                problems.append(f"{where}: a marker on a tool other than the last")
        elif path[0] == "system":
            if path != ("system", 0) or not block["text"].strip():
                problems.append(f"{where}: a marker off the one system text block")
        elif path[0] == "messages" and len(path) == 4 and path[2] == "content":
            kind = block["type"]
            if kind == "text" and not block["text"].strip():
                problems.append(f"{where}: a marker on an empty text block")
            elif kind == "tool_result" and not str(block.get("content", "")).strip():
                problems.append(f"{where}: a marker on a tool_result without content")
            elif kind not in ("text", "tool_use", "tool_result"):
                problems.append(f"{where}: a marker on a {kind} block")
        else:
            problems.append(f"{where}: a marker where the API reads none")
    return problems


def chat_marker_problems(body: dict[str, Any]) -> list[str]:
    """Markers on the chat route that are not where LiteLLM forwards them to Anthropic: on
    the last tool object itself, or on a non-blank text part of a message's content list."""
    paths = marker_paths(body)
    problems = [f"{len(paths)} breakpoints, Anthropic allows 4"] if len(paths) > 4 else []
    for path in paths:
        part = _at(body, path)
        where = ".".join(map(str, path))
        if path[0] == "tools":
            if path != ("tools", len(body["tools"]) - 1):
                problems.append(f"{where}: a marker off the last tool object")
        elif path[0] == "messages" and len(path) == 4 and path[2] == "content":
            if part.get("type") != "text" or not part["text"].strip():
                problems.append(f"{where}: a marker on a part that is not non-blank text")
        else:
            problems.append(f"{where}: a marker where LiteLLM reads none")
    return problems


def prefix_through_last_marker(body: dict[str, Any], *, route: str) -> list[Any] | None:
    """The unmarked message list up to and including the last marked message block."""
    marked = [p for p in marker_paths(body) if p[0] == "messages"]
    if not marked:
        return None
    _, message, _, block = marked[-1]
    assert isinstance(message, int)
    assert isinstance(block, int)
    return prefix_at(unmark(body, route=route), message, block, route=route)


def prefix_at(plain: dict[str, Any], message: int, block: int, *, route: str) -> list[Any]:
    """An unmarked body's messages before ``message``, then that message cut after ``block``."""
    messages = plain["messages"]
    if route == "chat" or message >= len(messages):
        return list(messages[: message + 1])
    last = dict(messages[message])
    last["content"] = last["content"][: block + 1]
    return [*messages[:message], last]
