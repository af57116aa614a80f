"""An MCP tool's result as the toolbox's `ToolResult`, cut to a size the model can take (pure).

- text content: joined by newlines;
- image content: `Image`s beside the text (one the log would refuse is named in the text);
- an embedded resource: its text under a line naming its URI (a binary one: named only);
- a resource link, audio: a line naming them (a model cannot open either);
- ``structuredContent``: its JSON when the content holds no text (when it does, the text is
  the server's own rendering of it, as the protocol asks servers to send);
- ``isError``: an error result.

Text and images together are kept under ``max_bytes``: the text is cut at a character
boundary and images past the limit are dropped, with a note saying how much went.
"""

from __future__ import annotations

import binascii
from typing import Any

from pydantic import ValidationError
from pydantic_core import to_json

from nisse_llm.events.canonical import ToolResult, mint_call_id
from nisse_llm.events.images import Image

__all__ = ["tool_result"]


def _content_part(block: Any) -> str | Image:
    kind = getattr(block, "type", None)
    if kind == "text":
        return str(block.text)
    if kind == "image":
        try:
            return Image(media_type=block.mime_type, data=block.data)
        except (ValidationError, binascii.Error) as exc:
            problem = exc.errors()[0]["msg"] if isinstance(exc, ValidationError) else str(exc)
            return f"[image {block.mime_type} not shown: {problem}]"
    if kind == "resource":
        resource = block.resource
        text = getattr(resource, "text", None)
        if text is not None:
            return f"[resource {resource.uri}]\n{text}"
        kind_of = resource.mime_type or "binary"
        return f"[resource {resource.uri}: {kind_of} content not shown]"
    if kind == "resource_link":
        return f"[resource link {block.uri}]"
    if kind == "audio":
        return f"[audio {block.mime_type} not shown]"
    return f"[{kind} content not shown]"


def _cut(text: str, limit: int) -> tuple[str, int]:
    """``text`` within ``limit`` UTF-8 bytes, and how many bytes were removed."""
    raw = text.encode()
    if len(raw) <= limit:
        return text, 0
    kept = raw[:limit].decode("utf-8", "ignore")
    return kept, len(raw) - len(kept.encode())


def tool_result(result: Any, *, max_bytes: int) -> ToolResult:
    """``result`` (the SDK's ``CallToolResult``) as a `ToolResult` (see the module docstring).

    Its ``call_id`` is a placeholder: the toolbox answers the call it ran with it.
    """
    parts = [_content_part(block) for block in result.content]
    images = [part for part in parts if isinstance(part, Image)]
    texts = [part for part in parts if isinstance(part, str)]
    if result.structured_content is not None and not any(
        getattr(block, "type", None) == "text" for block in result.content
    ):
        texts.insert(0, to_json(result.structured_content).decode())
    text, removed = _cut("\n".join(texts), max_bytes)
    budget = max_bytes - len(text.encode())
    kept: list[Image] = []
    dropped = 0
    for image in images:
        size = len(image.data or "")
        if size <= budget:
            kept.append(image)
            budget -= size
        else:
            dropped += 1
    notes = []
    if removed:
        notes.append(f"{removed} bytes of text removed")
    if dropped:
        notes.append(f"{dropped} of {len(images)} images removed")
    if notes:
        text += f"\n[result cut to {max_bytes} bytes: {', '.join(notes)}]"
    return ToolResult(
        call_id=mint_call_id(), output=text, is_error=result.is_error, images=tuple(kept)
    )
