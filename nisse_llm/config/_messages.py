"""The configuration's error messages: each problem named by TOML key, environment
variable and the layer its value came from (`Load` records what one load saw).

Used by `nisse_llm.config.settings` only. Pure: every input is in `Load`, filled by the loader.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import (
    BaseModel,
    SecretStr,
)
from pydantic_core import ErrorDetails

from nisse_llm.config._file import (
    file_line,
)
from nisse_llm.config._tables import (
    CONFIG_ENV,
    DEFAULT_CONFIG_NAME,
    SEED_ROLES,
    LLMSettings,
    RoleMap,
    env_var,
)
from nisse_llm.config._typos import close_name
from nisse_llm.config.mcp import McpServerSettings, McpSettings
from nisse_llm.config.model_rules import LEVELS
from nisse_llm.config.profiles import (
    PROFILE_KEYS,
)
from nisse_llm.errors import ConfigError

# Tokens shorter than this are not searched for in messages: the search would mangle text.
_MIN_REDACTED_LEN = 6
_REDACTED = "[redacted]"


class BadEnvList(str):
    """A list variable that looks like JSON but is not a JSON array of strings."""

    __slots__ = ()


@dataclass
class Load:
    """What one load saw, kept to say where each offending value came from."""

    path: Path | None
    path_named_by: str
    #: Where a file was looked for when none was found (for messages).
    looked: str = ""
    #: The roles required (``require_roles``: argument, environment, file, else the seeds).
    required: tuple[str, ...] = SEED_ROLES
    #: Whether ``required`` was stated (by any layer) rather than the seeds by default.
    required_stated: bool = False
    arguments: dict[str, Any] = field(default_factory=dict)
    environment: dict[str, Any] = field(default_factory=dict)
    file: dict[str, Any] = field(default_factory=dict)
    file_text: str = ""
    problems: list[str] = field(default_factory=list)


def given_roles(load: Load) -> dict[str, str]:
    """Each role name any layer gives, with the first layer giving it (for messages)."""
    found: dict[str, str] = {}
    for layer in (load.arguments, load.environment, load.file):
        roles = layer.get("roles")
        if isinstance(roles, Mapping):
            for name in roles:
                found.setdefault(str(name), "")
    return found


# --- error messages --------------------------------------------------------------------


def config_error(load: Load, errors: list[ErrorDetails], missing_roles: list[str]) -> ConfigError:
    misspelled = _misspelled_tables(load, errors)
    problems = [
        f"[{typo}]: unknown table in {_origin(load, (typo,)) or 'an unknown source'}; it is "
        f"probably [{table}] misspelled, which is why [{table}]'s keys are missing: rename "
        f"it [{table}]"
        for table, typo in misspelled.items()
    ]
    problems.extend(load.problems)
    for err in errors:
        loc = tuple(str(part) for part in err["loc"])
        if loc and loc[0] in misspelled and err["type"] == "missing":
            continue  # explained by the misspelled table, first in the list
        if len(loc) == 1 and loc[0] in misspelled.values() and err["type"] == "extra_forbidden":
            continue
        problems.extend(_describe(load, err))
    problems.extend(missing_roles)
    if not problems:  # never "0 problems": whatever validation said, in its own words
        problems = [
            f"{'.'.join(str(part) for part in err['loc']) or 'configuration'}: "
            f"{lower_first(err['msg'])}"
            for err in errors
        ] or ["the configuration was refused without a stated reason"]
    secrets = _known_tokens(load)
    problems = [_redact(p, secrets) for p in dict.fromkeys(problems)]
    # Where no file was found, saying so helps only when a file would supply what is missing.
    wanted = bool(missing_roles) or any(err["type"] == "missing" for err in errors)
    if load.path is not None:
        where = f" (file {load.path})"
    else:
        where = f" ({load.looked})" if wanted else ""
    noun = "problem" if len(problems) == 1 else "problems"
    message = f"invalid configuration{where}, {len(problems)} {noun}:\n" + "\n".join(
        f"  - {p}" for p in problems
    )
    return ConfigError(message, problems=tuple(problems))


def _unquotes(value: str, kind: str) -> bool:
    """Whether the quoted ``value`` is what the field wants once its quotes are dropped."""
    text = value.strip()
    if kind.startswith("bool"):
        return text in ("true", "false")
    try:
        (int if kind.startswith("int") else float)(text)
    except ValueError:
        return False
    return True


def _misspelled_tables(load: Load, errors: list[ErrorDetails]) -> dict[str, str]:
    """Known table -> the unknown table that is probably it misspelled, for each known
    table reported missing (whole or key by key) beside a close unknown table."""
    missing = {str(e["loc"][0]) for e in errors if e["type"] == "missing" and e["loc"]}
    unknown = [
        str(e["loc"][0])
        for e in errors
        if e["type"] == "extra_forbidden"
        and len(e["loc"]) == 1
        and isinstance((load.arguments | load.file).get(str(e["loc"][0])), Mapping)
    ]
    given_badly = {p.split(":", 1)[0] for p in load.problems}
    found: dict[str, str] = {}
    for table in sorted((missing & set(_TABLES)) - given_badly):
        close = difflib.get_close_matches(table, unknown, n=1, cutoff=0.6)
        if close:
            found[table] = close[0]
    return found


def _describe(load: Load, err: ErrorDetails) -> Iterator[str]:
    loc = tuple(str(part) for part in err["loc"])
    if loc[0] == "roles" and len(loc) > 2 and loc[2] in ("string", "table"):
        loc = loc[:2] + loc[3:]  # the role form's union tag
    kind = err["type"]
    if kind == "missing":
        if loc == ("roles",) and not load.required:
            yield (
                "roles: no role is set, and a configuration needs one; set roles.NAME = "
                '"MODEL" in a TOML file or NISSE_ROLE_<NAME>, or pass roles={...}'
            )
        elif len(loc) == 1 and loc[0] in _TABLES:
            yield from (missing_key(load, key) for key in _required_keys(load, loc[0]))
        else:
            yield missing_key(load, ".".join(loc[:2]))
    elif kind == "extra_forbidden":
        yield _unknown(load, loc)
    elif loc[0] == "mcp" and loc[3:4] == ("[key]",):
        origin = _origin(load, loc[:3]) or "an unknown source"
        yield (
            f"mcp.servers.{loc[2]}: not a server name; use lowercase letters, digits and _, "
            f"starting with a letter (it names the server's NISSE_MCP_<NAME>_ variables); "
            f"from {origin}"
        )
    elif kind == "role_name":
        name = str(err.get("ctx", {}).get("name"))
        origin = _origin(load, ("roles", name)) or "an unknown source"
        yield f"roles.{name}: not a role name; {err['ctx']['problem']}; from {origin}"
    elif len(loc) == 1 and loc[0] in _TABLES:
        keys = err.get("ctx", {}).get("keys")
        if keys:
            yield explain(load, tuple(f"{loc[0]}.{k}" for k in keys), err["msg"])
        else:
            origin = _origin(load, loc) or "an unknown source"
            yield f"{loc[0]}: must be a table ([{loc[0]}]); from {origin}"
    else:
        key, rest = _split_key(loc)
        option = key.split(".")[2] if key.count(".") == 2 else ""
        if option in _OPTION_REASONS and rest and not rest[0].isdecimal():
            reason = _OPTION_REASONS[option]  # one line for all of a union's branches
            rest = ()
        else:
            reason = _reason(load, loc, err)
        item = f" (item {rest[0]})" if rest else ""
        if key != "llm.token" and not _holds_userinfo(key, err.get("input")):
            reason += f", got {_show(err.get('input'))}"
        yield explain(load, (key,), reason + item)


# What a union-typed option accepts, said once rather than once per branch.
_OPTION_REASONS: Mapping[str, str] = {
    "reasoning": "must be "
    + ", ".join(f'"{level}"' for level in ("off", *LEVELS))
    + " or a thinking budget in tokens (>= 1)",
    "tool_choice": 'must be "auto", "none", "required" or a tool name '
    "(1 to 64 letters, digits, _ or -)",
}


def _split_key(loc: tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
    """The config key an error location names (``roles.planner.reasoning``; a role's
    ``model`` is the role's own key) and what follows it (an item index, a union branch)."""
    if loc[0] not in _TABLES:  # a top-level key: require_roles
        return loc[0], loc[1:]
    if loc[0] == "roles" and len(loc) >= 3:
        if loc[2] in PROFILE_KEYS:
            return ".".join(loc[:3]), loc[3:]
        if loc[2] == "model":
            return ".".join(loc[:2]), loc[3:]
    if loc[0] == "mcp" and len(loc) >= 5 and loc[3] in ("env", "headers"):
        return ".".join(loc[:5]), loc[5:]  # mcp.servers.NAME.env.VAR
    if loc[0] == "mcp" and len(loc) >= 3:  # mcp.servers.NAME.KEY
        return ".".join(loc[:4]), loc[4:]
    return ".".join(loc[:2]), loc[2:]


def _reason(load: Load, loc: tuple[str, ...], err: ErrorDetails) -> str:
    """The problem in the operator's words: what was written, and how to write it."""
    kind, value = err["type"], err.get("input")
    from_text = not holds(load.environment, loc)  # environment values are all strings
    if isinstance(value, BadEnvList):
        return (
            "looks like a JSON array but is not one of strings; write a JSON array of "
            'strings (["claude-", "anthropic/"]) or a comma-separated list (claude-,anthropic/)'
        )
    if from_text and isinstance(value, str) and kind in _QUOTED and _unquotes(value, kind):
        return f"is a string, not {_QUOTED[kind]}; drop the quotes"
    return _PLAIN.get(kind) or lower_first(err["msg"])


_TABLES: Mapping[str, type[BaseModel]] = {"llm": LLMSettings, "roles": RoleMap, "mcp": McpSettings}
#: The keys of the file outside its tables.
TOP_LEVEL_KEYS: tuple[str, ...] = ("require_roles", "task_store", "task_schema")

# Pydantic's wording where it speaks of regexes rather than of what the operator wrote.
_PLAIN: Mapping[str, str] = {
    "string_pattern_mismatch": "must be one word: no spaces",
    "string_too_short": "must not be empty",
    "tuple_type": 'must be an array of strings, such as ["claude-", "anthropic/"]',
    "list_type": "must be an array",
}

#: Types a quoted value was meant to be (``max_output_tokens = "8192"``).
_QUOTED: Mapping[str, str] = {
    "int_type": "an integer",
    "int_parsing": "an integer",
    "float_type": "a number",
    "float_parsing": "a number",
    "bool_type": "a boolean (true or false)",
    "bool_parsing": "a boolean (true or false)",
}


def _required_keys(load: Load, table: str) -> list[str]:
    if table == "roles":
        return [f"roles.{role}" for role in load.required]
    model = _TABLES[table]
    return [f"{table}.{name}" for name, info in model.model_fields.items() if info.is_required()]


def missing_key(load: Load, key: str) -> str:
    env = env_var(key)
    if load.path is not None:
        text = f"{key} (env {env}): missing; set it in {load.path} or set {env}"
    else:
        text = (
            f"{key} (env {env}): missing; set {env}, or set {key} in a TOML file "
            f"(named by --config or {CONFIG_ENV}, or ./{DEFAULT_CONFIG_NAME})"
        )
    table, _, name = key.partition(".")
    if table == "roles":
        others = [r for r in given_roles(load) if r not in load.required]
        close = close_name(name, others)
        if close is not None:
            text += f" (roles.{close} is set: is it roles.{name} misspelled?)"
    return text


def _unknown(load: Load, loc: tuple[str, ...]) -> str:
    origin = _origin(load, loc) or "an unknown source"
    if len(loc) == 1:
        known = list(_TABLES)
        tables = ", ".join(f"[{t}]" for t in known)
        if isinstance((load.arguments | load.file).get(loc[0]), Mapping):
            hint = _did_you_mean(loc[0], known, template="[{}]")
            return f"[{loc[0]}]: unknown table in {origin}{hint}; the tables are {tables}"
        hint = _did_you_mean(loc[0], list(TOP_LEVEL_KEYS), template="{}")
        return (
            f"{loc[0]}: unknown top-level key in {origin}{hint}; keys live in the tables "
            f"{tables} (only {', '.join(TOP_LEVEL_KEYS[:-1])} and {TOP_LEVEL_KEYS[-1]} stand outside them)"
        )
    if loc[0] == "roles" and len(loc) >= 3:  # a key inside a role's table
        table, name = f"roles.{loc[1]}", loc[2]
        known = ["model", *PROFILE_KEYS]
        hint = _did_you_mean(name, known, template=table + ".{}")
        return f"{table}.{name}: unknown key in {origin}{hint}; [{table}] holds " + ", ".join(known)
    if loc[0] == "mcp" and len(loc) >= 4:  # a key inside a server's table
        table, name = f"mcp.servers.{loc[2]}", loc[3]
        known = list(McpServerSettings.model_fields)
        hint = _did_you_mean(name, known, template=table + ".{}")
        return f"{table}.{name}: unknown key in {origin}{hint}; [{table}] holds " + ", ".join(known)
    table, name = loc[0], loc[1]
    known = list(_TABLES[table].model_fields) if table in _TABLES else []
    hint = _did_you_mean(name, known, template=table + ".{}")
    return f"{table}.{name}: unknown key in {origin}{hint}; [{table}] holds " + ", ".join(known)


def _did_you_mean(name: str, known: list[str], *, template: str) -> str:
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    return f" (did you mean {template.format(close[0])}?)" if close else ""


def explain(load: Load, keys: tuple[str, ...], reason: str) -> str:
    names = ", ".join(f"{key} (env {env_var(key)})" for key in keys)
    origins = [_origin(load, tuple(key.split("."))) for key in keys]
    if len(keys) == 1:
        return f"{names}: {reason}; from {origins[0] or 'the default'}"
    froms = ", ".join(
        f"{key} from {origin or 'the default'}" for key, origin in zip(keys, origins, strict=True)
    )
    return f"{names}: {reason}; {froms}"


def _origin(load: Load, loc: tuple[str, ...]) -> str | None:
    """Where the value at ``loc`` came from: the highest-precedence layer holding it."""
    key, _ = _split_key(loc)
    path = tuple(key.split("."))
    paths = [(*path, "model"), path] if path[0] == "roles" and len(path) == 2 else [path]
    if loc[0] == "roles" and len(loc) == 3 and len(path) == 2:  # an unknown key in a role table
        paths = [loc]
    for layer, source in (
        (load.arguments, f"the argument {loc[0]}="),
        (load.environment, f"environment variable {env_var(key)}"),
        (load.file, f"file {load.path}"),
    ):
        if any(holds(layer, p) for p in paths):
            return source
    return None


def sources_of(load: Load) -> dict[str, str]:
    """Every key's source: each key any layer set, and every table field's default."""
    keys: dict[tuple[str, ...], None] = {(key,): None for key in TOP_LEVEL_KEYS}
    for table, model in _TABLES.items():
        if table != "mcp":  # its keys are each server's, listed where a layer sets them
            keys.update(((table, name), None) for name in model.model_fields)
    for layer in (load.arguments, load.environment, load.file):
        keys.update(dict.fromkeys(_flat_keys(layer)))
    found = {}
    for loc in keys:
        # A role's model is the role's own key, whether written as a string or in its table.
        key = ".".join(loc[:2] if loc[0] == "roles" and loc[2:] == ("model",) else loc)
        origin = _origin(load, loc)
        if origin is None:
            found[key] = "default"
        elif origin.startswith("file "):
            line = file_line(load.file_text, loc) or file_line(load.file_text, loc[:2])
            found[key] = f"{origin}, line {line}" if line else origin
        elif origin.startswith("environment variable "):
            found[key] = "env " + origin.removeprefix("environment variable ")
        else:
            found[key] = origin.removeprefix("the ")
    return dict(sorted(found.items()))


def _flat_keys(data: Mapping[str, Any], prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    depth = 4 if prefix[:1] == ("mcp",) else 2  # mcp.servers.NAME.env.VAR
    for key, value in data.items():
        if isinstance(value, Mapping) and len(prefix) < depth:
            yield from _flat_keys(value, (*prefix, str(key)))
        elif prefix:
            yield (*prefix, str(key))


def holds(data: Mapping[str, Any], loc: tuple[str, ...]) -> bool:
    """Whether ``data`` holds ``loc``, down to the first value that is not a table (an
    error's location may go on into a list's items)."""
    node: Any = data
    for part in loc:
        if not isinstance(node, Mapping):
            return True
        if part not in node:
            return False
        node = node[part]
    return True


def _known_tokens(load: Load) -> set[str]:
    found: set[str] = set()
    for layer in (load.arguments, load.environment, load.file):
        table = layer.get("llm")
        value = table.get("token") if isinstance(table, Mapping) else None
        if isinstance(value, SecretStr):
            value = value.get_secret_value()
        if isinstance(value, str):
            # An invalid token (say, with a stray space) still holds the real one in a piece.
            pieces = {value.strip(), *value.split()}
            found.update(p for p in pieces if len(p) >= _MIN_REDACTED_LEN)
    return found


def _redact(text: str, secrets: set[str]) -> str:
    for secret in sorted(secrets, key=len, reverse=True):
        text = text.replace(secret, _REDACTED)
    return text


def _holds_userinfo(key: str, value: Any) -> bool:
    # A base URL with user:password@ is not echoed: the password would be in the message.
    # Nor an MCP server's env or headers (credentials), nor a whole server's table.
    if key.startswith("mcp."):
        return isinstance(value, Mapping) or ".env." in key or ".headers." in key
    return key == "llm.base_url" and "@" in str(value)


def _show(value: Any) -> str:
    shown = repr(value)
    return shown if len(shown) <= 80 else shown[:77] + "..."


def lower_first(text: str) -> str:
    return text[:1].lower() + text[1:]


def toml_type(value: Any) -> str:
    names = {
        bool: "a boolean",
        int: "an integer",
        float: "a float",
        str: "a string",
        list: "an array",
    }
    return names.get(type(value), type(value).__name__)


def copy_tables(data: dict[str, Any]) -> dict[str, Any]:
    return {k: dict(v) if isinstance(v, dict) else v for k, v in data.items()}
