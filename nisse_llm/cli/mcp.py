"""``config check`` and ``config show`` for the ``[mcp.servers.NAME]`` tables: each key's value
(credentials as ``(set)``) and source, and with ``--online`` each server started and asked
for its tools."""

from __future__ import annotations

from nisse_llm.cli._terminal import printable
from nisse_llm.config.mcp import looks_secret
from nisse_llm.config.settings import Settings
from nisse_llm.errors import LLMError

__all__ = ["mcp_online_rows", "mcp_rows"]

#: A secret-looking ``env`` or ``headers`` value, as the tables show it.
SET = "(set)"


def mcp_rows(settings: Settings) -> list[tuple[str, str, str]]:
    """``(key, value, source)`` for every MCP key a layer set, in key order."""
    rows = []
    for key, source in settings.sources.items():
        parts = key.split(".", 4)
        if parts[0] != "mcp" or len(parts) < 4:
            continue
        server = settings.mcp.servers[parts[2]]
        field = parts[3]
        value = getattr(server, field)
        if len(parts) == 5:  # one entry of env or headers
            entry = str(value.get(parts[4], ""))
            shown = SET if looks_secret(parts[4], entry) else entry
        elif isinstance(value, tuple):
            shown = " ".join(value)
        else:
            shown = "(none)" if value is None else str(value)
        rows.append((f"  {key}", printable(shown), source))
    return rows


def mcp_online_rows(settings: Settings) -> tuple[list[tuple[str, str, str]], bool]:
    """Start each server, ``initialize`` it and list its tools: one row per server, and
    whether every one answered."""
    from nisse_llm.mcp.server import McpServer

    rows = [("  server", "verdict", "tools")]
    ok = True
    for server in McpServer.from_settings(settings):
        try:
            with server.connect() as connection:
                names = [tool.spec.name for tool in connection.tools]
        except LLMError as exc:
            ok = False
            rows.append((f"  {server.name}", "failed", printable(exc.message)))
        else:
            rows.append((f"  {server.name}", "ok", printable(", ".join(names) or "(none)")))
    return rows, ok
