"""The messages route's tool and result blocks: tool definitions, a result as its block
(typed or encoded), and the interrupted result answering a call that has none (pure)."""

from __future__ import annotations

from pydantic_core import to_json

from nisse_llm.events.canonical import ToolCall, ToolResult, ToolSpec
from nisse_llm.render._images import anthropic_image, anthropic_image_json
from nisse_llm.render._walk import object_schema
from nisse_llm.render._wording import INTERRUPTED_TEXT, STUB_TOOL_DESCRIPTION
from nisse_llm.wire.anthropic_messages import (
    AnthropicTextBlock,
    AnthropicTool,
    AnthropicToolResultBlock,
    AnthropicToolResultContent,
)

__all__ = [
    "EMPTY_ERROR_CONTENT",
    "EMPTY_ERROR_OUTPUT",
    "INTERRUPTED_RESULT",
    "encode_result_with_images",
    "interrupted",
    "map_result",
    "map_tool",
    "stub_tool",
]

INTERRUPTED_RESULT = INTERRUPTED_TEXT
EMPTY_ERROR_OUTPUT = "(The tool failed without output.)"


def map_tool(spec: ToolSpec) -> AnthropicTool:
    schema = object_schema(spec.parameters)
    return AnthropicTool(name=spec.name, description=spec.description or None, input_schema=schema)


def stub_tool(name: str) -> AnthropicTool:
    return AnthropicTool(
        name=name, description=STUB_TOOL_DESCRIPTION, input_schema={"type": "object"}
    )


def map_result(result: ToolResult) -> AnthropicToolResultBlock:
    content: str | list[AnthropicToolResultContent] | None = result.output
    if not result.output.strip():
        content = EMPTY_ERROR_OUTPUT if result.is_error else None
    if result.images:
        # Text first, then the images, as the tool gave them.
        parts: list[AnthropicToolResultContent] = []
        if content is not None:
            parts.append(AnthropicTextBlock(text=content))
        parts.extend(anthropic_image(image) for image in result.images)
        content = parts
    return AnthropicToolResultBlock(
        tool_use_id=result.call_id, content=content, is_error=result.is_error
    )


def interrupted(call: ToolCall) -> AnthropicToolResultBlock:
    return AnthropicToolResultBlock(
        tool_use_id=call.call_id, content=INTERRUPTED_RESULT, is_error=True
    )


EMPTY_ERROR_CONTENT = b',"content":' + to_json(EMPTY_ERROR_OUTPUT)


def encode_result_with_images(result: ToolResult) -> bytes:
    """A result carrying images: its content is a list, its text (if any) then each image."""
    parts: list[bytes] = []
    if result.output.strip():
        parts.append(b'{"type":"text","text":' + to_json(result.output) + b"}")
    elif result.is_error:
        parts.append(b'{"type":"text","text":' + to_json(EMPTY_ERROR_OUTPUT) + b"}")
    parts.extend(anthropic_image_json(image) for image in result.images)
    flag = b'],"is_error":true}' if result.is_error else b'],"is_error":false}'
    return (
        b'{"type":"tool_result","tool_use_id":'
        + to_json(result.call_id)
        + b',"content":['
        + b",".join(parts)
        + flag
    )
