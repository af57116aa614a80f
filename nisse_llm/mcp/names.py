"""MCP tool names as the providers accept them, and text cleaned for a model or a terminal (pure).

The providers take tool names of ``[a-zA-Z0-9_-]{1,64}``; MCP allows dots, slashes and any
length. A name the providers accept and no other server uses stays as it is. Otherwise:

- a name that clashes between servers is prefixed by its server's name (``git__status``);
- a character the providers refuse becomes ``_``, and a name so changed, or longer than 64,
  ends in ``_`` and 8 hex digits of a hash of server and name, so two names that read alike
  once changed stay apart (and the same server and name map alike in every process).

The mapping is a table both ways (`ToolNames`): the provider's name leads back to the server
and the MCP name, so a resumed task's calls reach the same tool.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from nisse_llm.events.tools import TOOL_NAME_PATTERN

__all__ = ["ToolNames", "clean_text", "provider_names"]

_LIMIT = 64
_VALID = re.compile(TOOL_NAME_PATTERN)
_REFUSED = re.compile(r"[^a-zA-Z0-9_-]")
_DIGEST = 8
# ANSI escape sequences (CSI, OSC) go whole; other control characters one by one.
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?")


def _digest(server: str, tool: str) -> str:
    return hashlib.sha256(f"{server}\0{tool}".encode()).hexdigest()[:_DIGEST]


def _fit(name: str, server: str, tool: str) -> str:
    """``name`` within the providers' rules: as it is when they accept it, else changed
    characters and a hash of (server, tool)."""
    if _VALID.match(name):
        return name
    head = _REFUSED.sub("_", name)[: _LIMIT - _DIGEST - 1]
    return f"{head}_{_digest(server, tool)}"


@dataclass(frozen=True, slots=True)
class ToolNames:
    """Provider names of MCP tools, both ways: ``provider[(server, tool)]`` and
    ``original[provider_name]``."""

    provider: Mapping[tuple[str, str], str]
    original: Mapping[str, tuple[str, str]]


def provider_names(tools: Iterable[tuple[str, str]]) -> ToolNames:
    """A unique provider name for each ``(server, MCP tool name)`` (see the module docstring)."""
    keys = list(dict.fromkeys(tools))
    servers_of: dict[str, set[str]] = {}
    for server, tool in keys:
        servers_of.setdefault(tool, set()).add(server)
    first: dict[tuple[str, str], str] = {}
    for server, tool in keys:
        name = tool if len(servers_of[tool]) == 1 else f"{server}__{tool}"
        first[(server, tool)] = _fit(name, server, tool)
    # Different MCP names can still meet once fitted (``a.b`` and ``a_b`` both fit to a
    # name ending in a hash only when changed): the later ones are told apart by a count.
    seen = Counter(first.values())
    taken: set[str] = set()
    provider: dict[tuple[str, str], str] = {}
    for key, name in first.items():
        if seen[name] > 1 or name in taken:
            count = 2
            candidate = name
            while candidate in taken or (candidate != name and candidate in seen):
                suffix = f"_{count}"
                candidate = name[: _LIMIT - len(suffix)] + suffix
                count += 1
            name = candidate
        taken.add(name)
        provider[key] = name
    return ToolNames(provider, {name: key for key, name in provider.items()})


def clean_text(text: str) -> str:
    """``text`` without terminal escapes and control characters (newlines and tabs kept)."""
    text = _ESCAPES.sub("", text)
    return "".join(
        char
        for char in text
        if char in "\n\t" or not unicodedata.category(char).startswith(("Cc", "Cf"))
    )
