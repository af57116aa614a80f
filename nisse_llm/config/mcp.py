"""The ``[mcp.servers.NAME]`` tables: the MCP tool servers an operator gives every agent.

A server is a command started over stdio (``command``, ``args``, ``env``, ``cwd``) or a
streamable HTTP endpoint (``url``, ``headers``); ``timeout_s`` bounds each call and
``tools`` names the tools exposed (all of them when absent). The environment overrides a
server's keys as it does every other setting: ``NISSE_MCP_<NAME>_<KEY>`` (``COMMAND``,
``ARGS``, ``CWD``, ``URL``, ``TIMEOUT_S``, ``TOOLS``; lists comma-separated or a JSON
array), ``NISSE_MCP_<NAME>_ENV_<VAR>`` one variable of ``env``, and
``NISSE_MCP_<NAME>_HEADER_<HEADER>`` one header (``..._HEADER_X_API_KEY`` sets ``X-Api-Key``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Annotated, Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from nisse_llm import defaults
from nisse_llm.config._tables import BASE_URL_PATTERN, MCP_ENV_PREFIX, Seconds, mcp_env_var
from nisse_llm.errors import ConfigError

__all__ = [
    "MCP_ENV_PREFIX",
    "SERVER_NAME_PATTERN",
    "McpServerSettings",
    "McpSettings",
    "PinnedMcpServer",
    "looks_secret",
    "mcp_env",
    "mcp_env_var",
    "pinned_values",
]

#: A server's name: it is a TOML key and, upper-cased, part of its environment variables.
SERVER_NAME_PATTERN = r"^[a-z][a-z0-9_]{0,31}$"
_SCALARS = ("command", "args", "cwd", "url", "timeout_s", "tools")
_LISTS = frozenset({"args", "tools"})
_ENTRY = re.compile(r"^(?P<name>[A-Z][A-Z0-9_]*?)_(?P<kind>ENV|HEADER)_(?P<key>.+)$")
_SECRET_NAME = re.compile(r"auth(?!or)|token|secret|passw|key|cookie|credential|session", re.I)
_SECRET_VALUE = re.compile(r"^(bearer |basic |sk-|ghp_|github_pat_|xox[abp]-)", re.I)


class McpServerSettings(BaseModel):
    """One ``[mcp.servers.NAME]`` table: a command (stdio) or a URL (streamable HTTP)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    command: str | None = Field(
        default=None, min_length=1, description="The server's executable (stdio)."
    )
    args: tuple[str, ...] = Field(default=(), description="The command's arguments.")
    env: dict[str, str] = Field(
        default_factory=dict,
        description="Variables the server gets beyond PATH, HOME and a few safe ones: the "
        "proxy token and the task store's credentials only when named here.",
    )
    cwd: str | None = Field(default=None, description="The command's working folder.")
    url: str | None = Field(
        default=None, pattern=BASE_URL_PATTERN, description="The server's URL (streamable HTTP)."
    )
    headers: dict[str, str] = Field(
        default_factory=dict,
        description="Headers sent on every request to the URL.",
    )
    timeout_s: Seconds = Field(
        default=defaults.MCP_TIMEOUT_S, description="Seconds one tool call may take."
    )
    tools: tuple[str, ...] | None = Field(
        default=None, description="The server's tools to expose (all when absent)."
    )

    @model_validator(mode="after")
    def _one_transport(self) -> Self:
        if (self.command is None) == (self.url is None):
            raise ValueError("set either command (a stdio server) or url (an HTTP server)")
        if self.url is not None and (self.args or self.env or self.cwd is not None):
            raise ValueError("args, env and cwd belong to a command, not to a url")
        if self.command is not None and self.headers:
            raise ValueError("headers belong to a url, not to a command")
        return self


ServerName = Annotated[str, Field(pattern=SERVER_NAME_PATTERN)]


class McpSettings(BaseModel):
    """The ``[mcp]`` table: ``[mcp.servers.NAME]``, one table per server."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    servers: dict[ServerName, McpServerSettings] = Field(
        default_factory=dict, description="The MCP servers, by name."
    )


class PinnedMcpServer(BaseModel):
    """One MCP server as a pin records it: everything but the values of ``env`` and
    ``headers``, which are secrets like the token and are named only (`pinned_values`
    finds them again when the task resumes)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    transport: Literal["stdio", "http"]
    command: str | None = None
    args: tuple[str, ...] = ()
    env: tuple[str, ...] = ()
    cwd: str | None = None
    url: str | None = None
    headers: tuple[str, ...] = ()
    timeout_s: float
    tools: tuple[str, ...] | None = None
    max_result_bytes: int = Field(gt=0)

    @classmethod
    def of(cls, entry: McpServerSettings) -> PinnedMcpServer:
        """The pinned form of a ``[mcp.servers.NAME]`` table (the result cap: today's default)."""
        return cls(
            transport="stdio" if entry.command is not None else "http",
            command=entry.command,
            args=entry.args,
            env=tuple(entry.env),
            cwd=entry.cwd,
            url=entry.url,
            headers=tuple(entry.headers),
            timeout_s=entry.timeout_s,
            tools=entry.tools,
            max_result_bytes=defaults.MCP_MAX_RESULT_BYTES,
        )


def pinned_values(
    name: str, pinned: PinnedMcpServer, tables: Iterable[Mapping[str, Any]]
) -> tuple[dict[str, str], dict[str, str]]:
    """The values of the ``env`` and ``headers`` entries ``pinned`` names, each from the
    first of ``tables`` (the server ``name``'s keys: ``{"env": {...}, "headers": {...}}``)
    holding it; `ConfigError` naming every one none holds. Header names match whatever
    their case (HTTP's rule)."""
    tables = list(tables)
    env: dict[str, str] = {}
    headers: dict[str, str] = {}
    problems = []
    for key, names, found in (("env", pinned.env, env), ("headers", pinned.headers, headers)):
        for entry in names:
            value = _first_value(key, entry, tables)
            if value is None:
                problems.append(
                    f"mcp.servers.{name}.{key}.{entry}: the task's pin names it, but no value "
                    f"is set now; set it in the file or {mcp_env_var(name, key, entry)}"
                )
            else:
                found[entry] = value
    if problems:
        raise ConfigError(
            f"the pinned MCP server {name!r} needs values no longer available:\n"
            + "\n".join(f"  - {p}" for p in problems),
            problems=tuple(problems),
        )
    return env, headers


def _first_value(key: str, entry: str, tables: Iterable[Mapping[str, Any]]) -> str | None:
    for table in tables:
        for name, value in table.get(key, {}).items():
            if name == entry or (key == "headers" and name.lower() == entry.lower()):
                return str(value)
    return None


def mcp_env(environ: Mapping[str, str]) -> tuple[dict[str, Any], list[str]]:
    """The ``servers`` the environment sets (``{name: {key: value}}``), and a problem for
    each ``NISSE_MCP_`` variable that names no key."""
    servers: dict[str, dict[str, Any]] = {}
    problems: list[str] = []
    for variable in sorted(environ):
        rest = variable.removeprefix(MCP_ENV_PREFIX)
        raw = environ[variable].strip()
        if rest == variable or not raw:
            continue
        entry = _ENTRY.match(rest)
        if entry is not None:
            key = "env" if entry["kind"] == "ENV" else "headers"
            name = entry["key"] if key == "env" else _header_name(entry["key"])
            server = servers.setdefault(entry["name"].lower(), {})
            server.setdefault(key, {})[name] = raw
            continue
        for key in _SCALARS:
            suffix = "_" + key.upper()
            if rest.endswith(suffix) and len(rest) > len(suffix):
                value = _list(raw) if key in _LISTS else raw
                servers.setdefault(rest[: -len(suffix)].lower(), {})[key] = value
                break
        else:
            keys = ", ".join(k.upper() for k in (*_SCALARS, "ENV_<VAR>", "HEADER_<HEADER>"))
            problems.append(
                f"{variable}: names no key of an MCP server; {MCP_ENV_PREFIX}<NAME>_ takes {keys}"
            )
    return servers, problems


def _header_name(variable: str) -> str:
    """``X_API_KEY`` as the header ``X-Api-Key`` (the form a TOML file writes it in)."""
    return "-".join(part.capitalize() for part in variable.split("_"))


def _list(raw: str) -> Any:
    if raw.startswith("["):
        try:
            return json.loads(raw)
        except ValueError:
            return raw  # validation reports it
    return [part.strip() for part in raw.split(",") if part.strip()]


def looks_secret(name: str, value: str) -> bool:
    """Whether an ``env`` or ``headers`` entry looks like a credential (shown as ``(set)``)."""
    return bool(_SECRET_NAME.search(name) or _SECRET_VALUE.match(value))
