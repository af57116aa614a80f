"""A real MCP server for the tests, written with the official SDK's server side.

``python -m tests.mcp.server stdio`` serves it over stdin/stdout;
``python -m tests.mcp.server http PORT`` over streamable HTTP at ``/mcp``. Each tool
answers one kind of result the client must map, or misbehaves in one way it must survive.
"""

from __future__ import annotations

import base64
import os
import sys
import time
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp_types import (
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    TextContent,
    TextResourceContents,
    ToolAnnotations,
)

from nisse_llm.testing.images import png

server = MCPServer("nisse-test")
#: What `describe` says about itself: an escape sequence and a bell a terminal would obey.
HOSTILE_DESCRIPTION = "Reads \x1b[31mred\x1b[0m text\x07 aloud."


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def echo(text: str) -> str:
    """Say the text back."""
    return text


@server.tool(annotations=ToolAnnotations(idempotent_hint=True))
def add(a: int, b: int) -> CallToolResult:
    """Add two numbers, answered as text and as structured content."""
    return CallToolResult(
        content=[TextContent(text=f"{a} + {b} = {a + b}")], structured_content={"sum": a + b}
    )


@server.tool()
def picture(caption: str) -> CallToolResult:
    """A tiny PNG and a caption."""
    data = base64.b64encode(png(4, 3, seed=7)).decode()
    return CallToolResult(
        content=[TextContent(text=caption), ImageContent(data=data, mime_type="image/png")]
    )


@server.tool()
def readme() -> CallToolResult:
    """An embedded text resource."""
    resource = TextResourceContents(uri="file:///repo/README.md", text="# Hello", mime_type=None)
    return CallToolResult(content=[EmbeddedResource(resource=resource)])


@server.tool()
def refuse(reason: str) -> CallToolResult:
    """An error result, as a tool reports its own failure."""
    return CallToolResult(content=[TextContent(text=f"refused: {reason}")], is_error=True)


@server.tool()
def sleep(seconds: float) -> str:
    """Sleep, then answer."""
    time.sleep(seconds)
    return f"slept {seconds}"


@server.tool()
def big(megabytes: int) -> str:
    """A text of ``megabytes`` MiB."""
    return "x" * (megabytes * 1024 * 1024)


@server.tool()
def crash() -> str:
    """Exit the server process in the middle of the call."""
    sys.stderr.write("about to crash\n")
    sys.stderr.flush()
    os._exit(3)


@server.tool()
def shout(kilobytes: int) -> str:
    """Write ``kilobytes`` KiB to stderr, ending in a marker line."""
    sys.stderr.write("e" * (kilobytes * 1024) + "\nlast words\n")
    sys.stderr.flush()
    return "shouted"


@server.tool()
def environment() -> dict[str, Any]:
    """The server's own environment variables."""
    return dict(os.environ)


@server.tool()
def pid() -> int:
    """The server's process id."""
    return os.getpid()


@server.tool(name="repo.status/long" + "x" * 70, description=HOSTILE_DESCRIPTION)
def dotted() -> str:
    return "dotted answered"


if __name__ == "__main__":
    if sys.argv[1] == "stdio":
        server.run("stdio")
    else:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
