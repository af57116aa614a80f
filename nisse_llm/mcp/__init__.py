"""Tools from MCP servers: `McpServer` says how to reach one, `Toolbox.from_mcp` serves its tools.

Needs the ``mcp`` extra (``pip install 'nisse-llm[mcp]'``, the official SDK) once a server
is started; describing one (`McpServer`) does not.
"""

from __future__ import annotations

from nisse_llm.mcp.server import McpServer

__all__ = ["McpServer"]
