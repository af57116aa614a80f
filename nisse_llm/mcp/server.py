"""`McpServer`: how to reach one MCP tool server (a command over stdio, or a streamable HTTP URL).

A value, nothing started: `Toolbox.from_mcp` (or `McpServer.connect`) starts the servers.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Self
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, model_validator

from nisse_llm import defaults

if TYPE_CHECKING:
    from nisse_llm.config.settings import Pin, Settings
    from nisse_llm.mcp.connection import McpConnection

__all__ = ["McpServer"]


class McpServer(BaseModel):
    """One MCP server: `stdio` (a command the toolbox starts) or `http` (a URL it calls).

    ``tools`` names the server's tools to expose (None: all of them); ``timeout_s`` bounds
    each call. The server's environment holds only the operator's ``env`` over a few safe
    variables (``PATH``, ``HOME``...): never the proxy token or a store's credentials unless
    ``env`` names them.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1, description="How the tools and logs name this server.")
    transport: Literal["stdio", "http"]
    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] = Field(default_factory=dict, repr=False)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict, repr=False)
    timeout_s: float = Field(default=defaults.MCP_TIMEOUT_S, gt=0)
    tools: tuple[str, ...] | None = None
    max_result_bytes: int = Field(default=defaults.MCP_MAX_RESULT_BYTES, gt=0)

    @model_validator(mode="after")
    def _check(self) -> Self:
        if self.transport == "stdio" and not self.command:
            raise ValueError("a stdio MCP server needs a command")
        if self.transport == "http" and not self.url:
            raise ValueError("an http MCP server needs a url")
        return self

    @classmethod
    def stdio(
        cls,
        command: str | os.PathLike[str],
        args: Sequence[str] = (),
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        name: str | None = None,
        timeout_s: float = defaults.MCP_TIMEOUT_S,
        tools: Iterable[str] | None = None,
        max_result_bytes: int = defaults.MCP_MAX_RESULT_BYTES,
    ) -> McpServer:
        """A server the toolbox starts as ``command args...`` and talks to over stdin/stdout.

        ``name`` defaults to the command's file name (``mcp-server-git``).
        """
        command = os.fspath(command)
        return cls(
            name=name or Path(command).name,
            transport="stdio",
            command=command,
            args=tuple(args),
            env=dict(env or {}),
            cwd=None if cwd is None else os.fspath(cwd),
            timeout_s=timeout_s,
            tools=None if tools is None else tuple(tools),
            max_result_bytes=max_result_bytes,
        )

    @classmethod
    def http(
        cls,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        name: str | None = None,
        timeout_s: float = defaults.MCP_TIMEOUT_S,
        tools: Iterable[str] | None = None,
        max_result_bytes: int = defaults.MCP_MAX_RESULT_BYTES,
    ) -> McpServer:
        """A server reached over streamable HTTP at ``url`` (``headers`` on every request).

        ``name`` defaults to the URL's host.
        """
        return cls(
            name=name or urlsplit(url).hostname or url,
            transport="http",
            url=url,
            headers=dict(headers or {}),
            timeout_s=timeout_s,
            tools=None if tools is None else tuple(tools),
            max_result_bytes=max_result_bytes,
        )

    @classmethod
    def from_settings(cls, settings: Settings) -> tuple[McpServer, ...]:
        """Every server the configuration's ``[mcp.servers.NAME]`` tables declare, in order:
        ``Toolbox.from_mcp(*McpServer.from_settings(settings))``."""
        return tuple(
            cls(
                name=name,
                transport="stdio" if entry.command is not None else "http",
                **entry.model_dump(),
            )
            for name, entry in settings.mcp.servers.items()
        )

    @classmethod
    def from_pin(cls, pin: Pin, settings: Settings | None = None) -> tuple[McpServer, ...]:
        """The servers the task of ``pin`` started with, whatever the file says now: what
        the pin recorded, with the values of its ``env`` and ``headers`` from the pin when
        it was taken here, else from ``settings`` (else the environment's
        ``NISSE_MCP_<NAME>_ENV_<VAR>``), as the token comes back on resume.

        Raises `ConfigError` naming each value a pinned server needs and none of them holds.
        """
        servers = []
        for name, pinned in pin.mcp_servers.items():
            env, headers = pin.mcp_values(name, settings=settings)
            fields = pinned.model_dump(exclude={"env", "headers"})
            servers.append(cls(name=name, env=env, headers=headers, **fields))
        return tuple(servers)

    def connect(self, *more: McpServer) -> McpConnection:
        """Start this server and ``more``, list their tools, and hold the sessions open until
        the connection's ``close()`` (`Toolbox.from_mcp` does this for you).

        Raises `UpstreamUnavailable` when a server does not start or list its tools, and
        `ConfigError` when ``tools`` names a tool a server does not have.
        """
        return _connection_class()((self, *more))

    async def aconnect(self, *more: McpServer) -> McpConnection:
        """`connect` for asyncio: the servers start without blocking the running loop."""
        return await _connection_class().astart((self, *more))


def _connection_class() -> type[McpConnection]:
    """The SDK-backed connection, or an `ImportError` saying which extra to install."""
    try:
        from nisse_llm.mcp.connection import McpConnection
    except ModuleNotFoundError as exc:
        if exc.name not in _SDK_MODULES:
            raise
        raise ImportError(
            f"MCP servers need the mcp extra ({exc.name} is missing): pip install 'nisse-llm[mcp]'"
        ) from exc
    return McpConnection


#: What the ``mcp`` extra installs that the connection imports.
_SDK_MODULES = frozenset({"mcp", "mcp_types", "httpx2"})
