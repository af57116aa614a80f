"""Shared helpers for the configuration tests: a tiny TOML writer and a complete file."""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "config" / "nisse-llm.example.toml"
SCHEMAS = REPO / "schemas"
CONFIG_SCHEMA = SCHEMAS / "nisse-llm.config.schema.json"

#: A token shaped like a LiteLLM key; every secrecy test searches output for it.
TOKEN = "sk-nisse-SECRET-7f3a9c2e1b"

#: Every required key, as the TOML tables would hold them.
COMPLETE: dict[str, dict[str, Any]] = {
    "llm": {"base_url": "http://127.0.0.1:4000", "token": TOKEN},
    "roles": {
        "executor": "claude-sonnet-4-5",
        "planner": "openai/gpt-5",
        "delegate": "claude-opus-4-1",
        "consultant": "openai/gpt-5-mini",
    },
}


def toml_string(text: str) -> str:
    """A TOML basic string: quotes, backslashes and control characters escaped."""
    out = []
    for char in text:
        if char in '"\\':
            out.append("\\" + char)
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def toml_value(value: Any) -> str:
    """One TOML value; tables become inline tables."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return toml_string(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_value(item) for item in value) + "]"
    if isinstance(value, dict):
        pairs = (f"{toml_string(k)} = {toml_value(v)}" for k, v in value.items())
        return "{" + ", ".join(pairs) + "}"
    raise TypeError(f"no TOML form for {type(value).__name__}")


def toml_dumps(document: dict[str, Any]) -> str:
    """A TOML document: top-level tables as ``[table]`` sections, other keys first."""
    plain = [(k, v) for k, v in document.items() if not isinstance(v, dict)]
    tables = [(k, v) for k, v in document.items() if isinstance(v, dict)]
    lines = [f"{toml_string(k)} = {toml_value(v)}" for k, v in plain]
    for name, table in tables:
        lines.append(f"[{toml_string(name)}]")
        lines.extend(f"{toml_string(k)} = {toml_value(v)}" for k, v in table.items())
    return "\n".join(lines) + "\n"


def write_config(path: Path, document: dict[str, Any] | str, *, mode: int = 0o600) -> Path:
    """Write a TOML file (a dict is serialised) with ``mode`` (owner-only by default)."""
    path.write_text(document if isinstance(document, str) else toml_dumps(document))
    os.chmod(path, mode)
    return path


def complete(**changes: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """`COMPLETE` with some keys of its tables changed (a fresh copy)."""
    return {table: {**COMPLETE.get(table, {}), **changes.get(table, {})} for table in COMPLETE} | {
        table: dict(value) for table, value in changes.items() if table not in COMPLETE
    }
