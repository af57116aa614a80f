"""JSON Schema export: the files under ``schemas/``, generated from the models.

Output is deterministic (sorted keys, two-space indent, trailing newline) so a committed
file is current exactly when it equals a fresh render. Models whose module does not
exist yet are left out rather than failing the export.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, TypeAdapter

from nisse_llm.config.settings import ENV_VARS, ROLE_NAME_PATTERN, LLMSettings, RoleMap, Settings
from nisse_llm.events.canonical import CanonicalEvent, StoredEvent
from nisse_llm.routes import ROUTE_TABLE

__all__ = [
    "CONFIG_SCHEMA_FILE",
    "DIALECT",
    "TARGETS",
    "SchemaCheck",
    "SchemaTarget",
    "check_schemas",
    "config_schema",
    "render_schemas",
    "write_schemas",
]

DIALECT = "https://json-schema.org/draft/2020-12/schema"
SUFFIX = ".schema.json"
#: The configuration file's schema: what a TOML's ``#:schema`` line names.
CONFIG_SCHEMA_FILE = "nisse-llm.config" + SUFFIX


@dataclass(frozen=True)
class SchemaTarget:
    """One file under ``schemas/`` and how to build its schema (``None``: not available)."""

    filename: str
    build: Callable[[], dict[str, Any] | None]


def config_schema() -> dict[str, Any]:
    """The TOML file: no key required (any may come from the environment), none unknown."""
    schema = Settings.model_json_schema()
    _drop_required(schema)
    _open_roles(schema["$defs"]["RoleMap"])
    for model, table in ((LLMSettings, "llm"), (RoleMap, "roles")):
        definition = schema["$defs"][model.__name__]
        definition["description"] = (
            f"The [{table}] table. Every key may instead come from its environment variable."
        )
        for key, prop in definition["properties"].items():
            prop["description"] += f" Environment variable: {ENV_VARS[f'{table}.{key}']}."
    required = schema["properties"]["require_roles"]
    required["description"] += f" Environment variable: {ENV_VARS['require_roles']}."
    required["items"]["pattern"] = ROLE_NAME_PATTERN
    for key in ("task_store", "task_schema"):
        schema["properties"][key]["description"] += f" Environment variable: {ENV_VARS[key]}."
    profile = schema["$defs"]["RoleProfile"]
    profile["description"] = (
        "A role as a table: its model and the request options its calls carry by default. "
        "Every key may instead come from its environment variable."
    )
    for key, prop in profile["properties"].items():
        env = "NISSE_ROLE_<ROLE>" if key == "model" else f"NISSE_ROLE_<ROLE>_{key.upper()}"
        prop["description"] += f" Environment variable: {env}."
    server = schema["$defs"]["McpServerSettings"]
    server["description"] = (
        "An [mcp.servers.NAME] table: a command started over stdio, or a streamable HTTP url. "
        "Every key may instead come from its environment variable."
    )
    for key, prop in server["properties"].items():
        env = {"env": "ENV_<VAR>", "headers": "HEADER_<HEADER>"}.get(key, key.upper())
        prop["description"] += f" Environment variable: NISSE_MCP_<NAME>_{env}."
    # A command or a url, never both (neither is required: the environment may give it).
    server["dependentSchemas"] = {
        "url": {"properties": {"command": False, "args": False, "env": False, "cwd": False}},
        "command": {"properties": {"headers": False}},
    }
    schema["$defs"]["McpSettings"]["properties"]["servers"]["additionalProperties"] = False
    schema["description"] = (
        "The nisse-llm TOML configuration file. Precedence, highest first: explicit "
        "arguments, environment variables, this file, defaults."
    )
    return {"$schema": DIALECT, **schema}


def _open_roles(definition: dict[str, Any]) -> None:
    """The roles table: the seeds' four roles described by name, any other role name
    allowed by its pattern, and nothing else."""
    role = definition.pop("additionalProperties")
    seed = "A seed role: required unless the agent names the roles it uses."
    definition["properties"] = {
        name: {
            **role,
            "description": f"{RoleMap.DESCRIPTIONS[name]} {seed}",
            "title": name.capitalize(),
        }
        for name in sorted(RoleMap.ROLES)
    }
    definition["patternProperties"] = {
        ROLE_NAME_PATTERN: {
            **role,
            "description": "A role the operator adds: its model string, or a table with model "
            "and request options. Environment variable: NISSE_ROLE_<ROLE>.",
        }
    }
    definition["additionalProperties"] = False


def _canonical_event_schema() -> dict[str, Any]:
    schema = TypeAdapter(CanonicalEvent).json_schema()
    return {"$schema": DIALECT, "title": "CanonicalEvent", **schema}


def _stored_record_schema() -> dict[str, Any]:
    from nisse_llm.task.records import StoredRecord

    schema = TypeAdapter(StoredRecord).json_schema()
    return {
        "$schema": DIALECT,
        "title": "StoredRecord",
        "description": "One line of a task file: a header (the pin record, first), an "
        "event, or a call record.",
        **schema,
    }


def _model_schema(model: type[BaseModel]) -> dict[str, Any]:
    return {"$schema": DIALECT, **model.model_json_schema()}


def _lazy_model(module: str, name: str) -> Callable[[], dict[str, Any] | None]:
    """A builder for a model in a module that may not have been written yet."""

    def build() -> dict[str, Any] | None:
        try:
            found = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name == module:
                return None
            raise
        model: type[BaseModel] = getattr(found, name)
        return _model_schema(model)

    return build


TARGETS: tuple[SchemaTarget, ...] = (
    SchemaTarget(CONFIG_SCHEMA_FILE, config_schema),
    SchemaTarget("canonical-event" + SUFFIX, _canonical_event_schema),
    SchemaTarget("stored-event" + SUFFIX, lambda: _model_schema(StoredEvent)),
    SchemaTarget("stored-record" + SUFFIX, _stored_record_schema),
    # Each route's request body, by the route table: openai-chat-request.schema.json...
    *(
        SchemaTarget(
            route.name.replace("_", "-") + "-request" + SUFFIX,
            _lazy_model(*route.request_model.split(":")),
        )
        for route in ROUTE_TABLE
        if route.request_model
    ),
)


def render_schemas() -> dict[str, str]:
    """File name -> file text, for every target whose model exists."""
    rendered: dict[str, str] = {}
    for target in TARGETS:
        schema = target.build()
        if schema is not None:
            rendered[target.filename] = (
                json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
            )
    return rendered


def write_schemas(directory: str | Path) -> list[str]:
    """Bring ``directory`` up to date (removing schema files no longer generated);
    the names of the files that changed."""
    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    rendered = render_schemas()
    changed = []
    for name, text in rendered.items():
        path = folder / name
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            changed.append(name)
    for path in sorted(folder.glob("*" + SUFFIX)):
        if path.name not in rendered:
            path.unlink()
            changed.append(path.name)
    return changed


@dataclass(frozen=True)
class SchemaCheck:
    """What `check_schemas` found in one folder, file names sorted in each list."""

    folder: Path
    missing: list[str]
    stale: list[str]
    extra: list[str]

    @property
    def current(self) -> bool:
        """True when every file is present, equal to a fresh render, and none is left over."""
        return not (self.missing or self.stale or self.extra)


def check_schemas(directory: str | Path) -> SchemaCheck:
    """Compare ``directory`` with a fresh render: files missing, stale (different), and
    extra (schema files no longer generated)."""
    folder = Path(directory).absolute()
    rendered = render_schemas()
    missing = sorted(name for name in rendered if not (folder / name).is_file())
    stale = sorted(
        name
        for name, text in rendered.items()
        if name not in missing and (folder / name).read_text(encoding="utf-8") != text
    )
    extra = (
        sorted(path.name for path in folder.glob("*" + SUFFIX) if path.name not in rendered)
        if folder.is_dir()
        else []
    )
    return SchemaCheck(folder=folder, missing=missing, stale=stale, extra=extra)


def _drop_required(node: Any) -> None:
    if isinstance(node, dict):
        node.pop("required", None)
        for value in node.values():
            _drop_required(value)
    elif isinstance(node, list):
        for value in node:
            _drop_required(value)
