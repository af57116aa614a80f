"""Tools the model calls, run for it: `Toolbox` holds Python functions and the tools of MCP
servers, and answers a reply's tool calls with `ToolResult`s. It sits above `mcp`, whose
servers it starts and stops; the specs and results it deals in are the log's."""

from __future__ import annotations

from nisse_llm.tools.toolbox import Toolbox

__all__ = ["Toolbox"]
