"""Configuration: typed settings from arguments, environment, a TOML file and defaults.

Precedence, highest first: explicit arguments, environment, TOML file, defaults
(`Settings.settings_customise_sources`). The tables and every key's environment variable
are in `nisse_llm.config._tables`, the messages in `nisse_llm.config._messages`. Every
failure is one `ConfigError` naming each offending key as TOML key and environment
variable, with where its value came from; the token is never echoed. `Settings.pin()` freezes what a task runs with (spec A11).
"""

from __future__ import annotations

import contextvars
import hashlib
import json
import os
import re
import warnings
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pydantic import (
    ConfigDict,
    Field,
    PrivateAttr,
    SecretStr,
    TypeAdapter,
    ValidationError,
    field_validator,
)
from pydantic_core import ErrorDetails, PydanticCustomError
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from nisse_llm.config._egress import check_base_url
from nisse_llm.config._file import (
    InsecureConfigFileWarning,
    read_toml,
    warn_if_exposed,
    warn_if_writable,
)
from nisse_llm.config._messages import (
    TOP_LEVEL_KEYS,
    BadEnvList,
    Load,
    config_error,
    copy_tables,
    explain,
    given_roles,
    holds,
    lower_first,
    missing_key,
    sources_of,
    toml_type,
)
from nisse_llm.config._tables import (
    BASE_URL_PATTERN,
    CONFIG_ENV,
    DEFAULT_CONFIG_NAME,
    ENV_VARS,
    ROLE_NAME_PATTERN,
    SEED_ROLES,
    LLMSettings,
    RoleMap,
    env_var,
    misread_option,
    role_env,
    role_name_problem,
)
from nisse_llm.config._typos import model_typo, role_typos
from nisse_llm.config.mcp import (
    McpServerSettings,
    McpSettings,
    PinnedMcpServer,
    mcp_env,
    pinned_values,
)
from nisse_llm.config.options import RequestOptions
from nisse_llm.config.profiles import (
    RoleProfile,
    decode_option_env,
    profile_violations,
)
from nisse_llm.config.routing import Route, route_for
from nisse_llm.errors import ConfigError, ConfigTypoWarning

__all__ = [
    "CONFIG_ENV",
    "DEFAULT_CONFIG_NAME",
    "ENV_VARS",
    "RECORD_FORMAT",
    "ROLE_NAME_PATTERN",
    "SEED_ROLES",
    "ConfigTypoWarning",
    "InsecureConfigFileWarning",
    "LLMSettings",
    "Pin",
    "RoleMap",
    "Settings",
    "env_var",
    "load_settings",
    "load_task_store",
    "record_fingerprint",
    "role_name_problem",
]

#: Version of the `Pin.record` layout; a record of another format is refused.
RECORD_FORMAT = 1


class Pin(LLMSettings):
    """A frozen snapshot of the configuration one task runs with: knobs, token and roles.

    Built by `Settings.pin()` or rebuilt by `Pin.from_record`; the TOML file is never
    read again, so an edit made mid-task cannot reach it.
    """

    model_config = ConfigDict(title="pin")

    roles: RoleMap
    #: The MCP servers of the configuration, by name, their secret values left out; in the
    #: record only when there are some, so a pin without servers records what it always did.
    mcp_servers: dict[str, PinnedMcpServer] = Field(default_factory=dict)

    #: The server tables the pin was taken from, values and all; never part of the record.
    _mcp_tables: dict[str, McpServerSettings] = PrivateAttr(default_factory=dict)
    #: Where the token came from (``"env NISSE_LLM_TOKEN"``), for hints on a refused token;
    #: never part of the record.
    _token_source: str = PrivateAttr(default="")

    def __eq__(self, other: object) -> bool:
        # Where the token came from is the operator's view, not part of what a task runs
        # with: two pins with the same settings are equal wherever their token was read.
        if not isinstance(other, Pin):
            return NotImplemented
        return dict(self) == dict(other)

    __hash__ = LLMSettings.__hash__

    @property
    def token_source(self) -> str:
        """Where this pin's token came from: a settings source, or the caller of
        `from_record`."""
        return self._token_source or "the token passed to Pin.from_record"

    def model_for(self, role: str) -> str:
        """The model string pinned for ``role``."""
        return self.roles.resolve(role)

    def route(self, role: str) -> Route:
        """The proxy route ``role``'s requests take: its profile's ``route``, else its
        model's (or its ``like``'s)."""
        profile = self.roles.profile(role)
        return profile.route or route_for(profile.like or profile.model, self.passthrough_prefixes)

    def mcp_values(
        self, server: str, *, settings: Settings | None = None
    ) -> tuple[dict[str, str], dict[str, str]]:
        """The values of the ``env`` and ``headers`` entries the pinned ``server`` names:
        those the pin was taken with, else ``settings``' (else the environment's
        ``NISSE_MCP_<NAME>_ENV_<VAR>`` / ``_HEADER_<HEADER>``), as a resumed task gets its
        token again. `ConfigError` names each value none of them holds."""
        held = self._mcp_tables.get(server)
        if settings is None:
            current = mcp_env(os.environ)[0].get(server, {})
        else:
            current = dict(settings.mcp.servers.get(server) or {})
        tables = (current,) if held is None else (dict(held), current)
        return pinned_values(server, self.mcp_servers[server], tables)

    def options_for(self, role: str) -> RequestOptions | None:
        """The request options pinned for ``role`` (its profile; None when it sets none)."""
        return self.roles.options(role)

    def record(self) -> dict[str, Any]:
        """A JSON-able record for the task log, with a fingerprint and without the token."""
        body = self._record_body()
        return {**body, "fingerprint": record_fingerprint(body)}

    @property
    def fingerprint(self) -> str:
        """``sha256:`` and the hash of the canonical JSON of the record (token excluded)."""
        return record_fingerprint(self._record_body())

    def _record_body(self) -> dict[str, Any]:
        body: dict[str, Any] = {"format": RECORD_FORMAT}
        body.update(self.model_dump(mode="json", exclude={"token", "roles", "mcp_servers"}))
        body["roles"] = {role: self._role_record(role) for role in self.roles.names}
        if self.mcp_servers:
            body["mcp_servers"] = {
                name: server.model_dump(mode="json") for name, server in self.mcp_servers.items()
            }
        return body

    def _role_record(self, role: str) -> dict[str, Any]:
        """``{model, route}``, and ``options`` when the role's profile sets any."""
        entry: dict[str, Any] = {"model": self.roles.resolve(role), "route": self.route(role)}
        options = self.roles.options(role)
        if options is not None:
            entry["options"] = options.model_dump(mode="json", exclude_none=True)
        return entry

    def restored(self, record: Mapping[str, Any]) -> Pin:
        """The pin a task's stored ``record`` describes, with this pin's token and base URL
        (`from_record`: `ConfigError` if the record names another URL or is damaged), and
        this pin's MCP values for each server both pins record alike: what a task begun
        with ``record`` runs with when this pin reopens it."""
        pin = Pin.from_record(record, self.token, base_url=self.base_url)
        pin._token_source = self._token_source
        pin._mcp_tables = {
            name: table
            for name, table in self._mcp_tables.items()
            if pin.mcp_servers.get(name) == self.mcp_servers.get(name)
        }
        return pin

    @classmethod
    def from_record(
        cls,
        record: Mapping[str, Any],
        token: str | SecretStr,
        *,
        base_url: str | None = None,
    ) -> Pin:
        """The pin a record was made from, given the token and the operator's base URL.

        The token goes only where the operator points it: ``base_url`` (else the current
        ``NISSE_LLM_BASE_URL``) must be the record's, or `ConfigError` names both. The
        record's fingerprint is an unkeyed hash: it detects damage, not tampering, since
        whoever can edit the record can recompute it. `ConfigError` if it is not a record.
        """
        if not isinstance(record, Mapping):
            raise ConfigError(f"a pin record must be a mapping, got {type(record).__name__}")
        body = dict(record)
        if "fingerprint" not in body:
            raise ConfigError(
                "pin record has no fingerprint: it was not written by Pin.record() (or the "
                "key was removed); store the whole record"
            )
        stated = body.pop("fingerprint")
        if body.get("format") != RECORD_FORMAT:
            raise ConfigError(
                f"not a pin record of format {RECORD_FORMAT} (format is {body.get('format')!r})"
            )
        try:
            actual = record_fingerprint(body)
        except (TypeError, ValueError):
            actual = None
        if stated != actual:
            raise ConfigError(
                "pin record fingerprint does not match its content: the record was edited "
                "or damaged"
            )
        roles = body.pop("roles", None)
        body.pop("format")
        if not isinstance(roles, Mapping) or not all(
            isinstance(v, Mapping) for v in roles.values()
        ):
            raise ConfigError("malformed pin record: roles must map each role to {model, route}")
        try:
            pin = cls.model_validate(
                {
                    **body,
                    "token": token,
                    "roles": {r: _profile_of(v, body) for r, v in roles.items()},
                }
            )
        except ValidationError as exc:
            problems = tuple(
                f"{'.'.join(str(p) for p in err['loc'])}: {lower_first(err['msg'])}"
                for err in exc.errors(include_url=False, include_input=False)
            )
        else:
            if pin._record_body()["roles"] != roles:
                raise ConfigError("malformed pin record: a role's route does not match its model")
            operator_url = _operator_base_url(base_url)
            if pin.base_url != operator_url:
                raise ConfigError(
                    f"the pin record's base URL {pin.base_url!r} is not the operator's "
                    f"{operator_url!r}: the token is not sent to a URL read from a task "
                    "file; resume with the record's URL configured, or start a new pin"
                )
            return pin
        raise ConfigError(
            "malformed pin record:\n" + "\n".join(f"  - {p}" for p in problems),
            problems=problems,
        )


def _operator_base_url(base_url: str | None) -> str:
    """The operator's base URL, normalised as settings normalise it; `ConfigError` if none."""
    env = env_var("llm.base_url")
    given = base_url if base_url is not None else os.environ.get(env, "").strip()
    if not given:
        raise ConfigError(
            f"Pin.from_record needs the operator's base URL: pass base_url= (for example "
            f"settings.llm.base_url) or set {env}; the record's own URL is never trusted"
        )
    if not re.fullmatch(BASE_URL_PATTERN, given):
        raise ConfigError(f"base_url={given[:200]!r} is not an http:// or https:// URL")
    return check_base_url(given).rstrip("/")


def _profile_of(entry: Mapping[str, Any], body: Mapping[str, Any]) -> dict[str, Any]:
    """A record's role entry as a role table: its model, its options, and its route where
    that is not the one the model takes by today's rules (the route recorded wins)."""
    options = entry.get("options", {})
    table = {"model": entry.get("model"), **(options if isinstance(options, Mapping) else {})}
    prefixes = body.get("passthrough_prefixes")
    if isinstance(table["model"], str) and isinstance(prefixes, list):
        like = table.get("like")
        named = like if isinstance(like, str) else table["model"]
        if entry.get("route") != route_for(named, prefixes):
            table["route"] = entry.get("route")
    return table


def record_fingerprint(body: Mapping[str, Any]) -> str:
    """``sha256:`` and the hash of the canonical JSON of a pin record's body (all but its
    fingerprint): what `Pin.record` stamps and `Pin.from_record` checks."""
    canonical = json.dumps(
        body, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )
    return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()


# --- loading ---------------------------------------------------------------------------


_LOAD: contextvars.ContextVar[Load] = contextvars.ContextVar("nisse_llm_config_load")


class _EnvSource(PydanticBaseSettingsSource):
    """The environment variables in `ENV_VARS`; an empty variable counts as unset."""

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False  # unused: __call__ reads every variable itself

    def __call__(self) -> dict[str, Any]:
        load = _LOAD.get()
        data: dict[str, Any] = {}
        for key, env in ENV_VARS.items():
            raw = os.environ.get(env, "").strip()
            if raw and key.startswith("llm."):
                name = key.removeprefix("llm.")
                data.setdefault("llm", {})[name] = _decode_env("llm", name, raw)
            elif raw and key == "require_roles":  # a list
                data[key] = _decode_env_list(raw)
        # Any role's variables, the seeds' and the operator's own: NISSE_ROLE_<ROLE> (its
        # model) and NISSE_ROLE_<ROLE>_<OPTION>.
        for env in sorted(os.environ):
            raw = os.environ[env].strip()
            found = role_env(env) if raw else None
            if found is not None:
                name, option = found
                role = data.setdefault("roles", {}).setdefault(name, {})
                if option is None:
                    role["model"] = raw
                else:
                    role[option] = decode_option_env(option, raw)
        for name in list(data.get("roles", {})):
            problem = misread_option(name, set(data["roles"]) | set(SEED_ROLES))
            if problem is not None:
                load.problems.append(problem)
                del data["roles"][name]
        servers, problems = mcp_env(os.environ)
        load.problems.extend(problems)
        if servers:
            data["mcp"] = {"servers": servers}
        for key in ("task_store", "task_schema"):
            value = os.environ.get(ENV_VARS[key], "").strip()
            if value:
                data[key] = value
        load.environment = data
        return copy_tables(data)


class _TomlSource(PydanticBaseSettingsSource):
    """The TOML file named by the path argument or `NISSE_CONFIG`, if any."""

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False  # unused: __call__ reads the whole file

    def __call__(self) -> dict[str, Any]:
        load = _LOAD.get()
        if load.path is None:
            return {}
        data, load.file_text = read_toml(load.path, load.path_named_by)
        for table in ("llm", "roles", "mcp"):
            if table in data and not isinstance(data[table], dict):
                load.problems.append(
                    f"{table}: must be a table ([{table}]), got {toml_type(data.pop(table))}; "
                    f"from file {load.path}"
                )
        for table in ("llm", "roles"):
            for key in TOP_LEVEL_KEYS:
                if isinstance(data.get(table), dict) and key in data[table]:
                    del data[table][key]
                    load.problems.append(
                        f"{table}.{key}: {key} is a top-level key, but this one is inside "
                        f"[{table}]: move it above the first table; from file {load.path}"
                    )
        llm = data.get("llm")
        if isinstance(llm, dict) and "token" in llm:
            warn_if_exposed(load.path)
        warn_if_writable(load.path)
        _role_tables(data)
        load.file = data
        return copy_tables(data)


class Settings(BaseSettings):
    """The whole configuration: the ``[llm]``, ``[roles]`` and ``[mcp]`` tables, and the
    roles the configuration must define (``require_roles``).

    Build it with `load_settings`; ``Settings(config_file, llm=..., roles=...)`` does the
    same. Every failure is a `ConfigError`; a name that is probably misspelt (a role a
    small edit from another, a model no rules row covers a small edit from one a row does)
    is a `ConfigTypoWarning`.
    """

    model_config = SettingsConfigDict(
        extra="forbid", frozen=True, case_sensitive=True, title="nisse-llm configuration"
    )

    llm: LLMSettings = Field(description="The proxy and the request knobs.")
    roles: RoleMap = Field(description="The model string each role resolves to.")
    require_roles: tuple[str, ...] = Field(
        SEED_ROLES,
        description="The roles the configuration must define, each missing one an error "
        "(default: the seeds' four); any other role it defines is kept, but one a small "
        "edit from a required role is an error (probably misspelt). The require_roles= "
        "argument and config check --require win over this key. In the environment: "
        "comma-separated.",
    )

    @field_validator("require_roles")
    @classmethod
    def _role_names(cls, names: tuple[str, ...]) -> tuple[str, ...]:
        for name in names:
            problem = role_name_problem(name)
            if problem is not None:
                raise PydanticCustomError(
                    "require_role",
                    "{reason}",
                    {"reason": f"{name!r} is not a role name: {problem}"},
                )
        return names

    mcp: McpSettings = Field(
        default_factory=McpSettings, description="The MCP tool servers agents may use."
    )

    task_store: SecretStr | None = Field(
        default=None,
        description=(
            "Where tasks live: a folder (default: tasks/ beside the config file) or a "
            "postgresql:// URL (its password is a secret)."
        ),
    )

    task_schema: str = Field(
        default="nisse",
        pattern=r"^[a-z_][a-z0-9_]{0,62}$",
        description=(
            "The PostgreSQL schema the task tables live in, when task_store is a database "
            "(a lower-case SQL name)."
        ),
    )

    _config_file: Path | None = PrivateAttr(default=None)
    _config_lookup: str = PrivateAttr(default="")
    _sources: dict[str, str] = PrivateAttr(default_factory=dict)

    def __init__(
        self,
        config_file: str | os.PathLike[str] | None = None,
        *,
        require_roles: Iterable[str] | None = None,
        **tables: Any,
    ) -> None:
        load = _start_load(config_file, tables)
        if require_roles is not None:
            load.arguments["require_roles"] = _required_roles(require_roles)
        reset = _LOAD.set(load)
        try:
            super().__init__(**load.arguments)
        except ValidationError as exc:
            errors = exc.errors(include_url=False)
        else:
            errors = []
        finally:
            _LOAD.reset(reset)
        _stated_roles(load)
        typos = _role_typos(load)
        if not errors:
            load.problems.extend(_profile_problems(load, self))
            typos += _model_typos(load, self)
        missing = _missing_roles(load, errors)
        # Raised outside the handler so the error carries no context holding input values.
        if errors or load.problems or missing:
            raise config_error(load, errors, missing)
        self._config_file = load.path
        if load.path is None:
            self._config_lookup = load.looked
        elif load.path_named_by == _FOUND_HERE:
            self._config_lookup = f"{load.path} (found in the current folder)"
        else:
            self._config_lookup = f"{load.path} (named by {load.path_named_by})"
        self._sources = sources_of(load)
        for typo in typos:
            warnings.warn(ConfigTypoWarning(typo), stacklevel=3)

    @property
    def config_file(self) -> Path | None:
        """The TOML file this was loaded from, if any."""
        return self._config_file

    @property
    def config_lookup(self) -> str:
        """How the file was found (``nisse.toml (found in the current folder)``), or where
        it was looked for when there is none."""
        return self._config_lookup

    @property
    def sources(self) -> dict[str, str]:
        """Where each value came from, by TOML key (``llm.base_url``): ``"default"``,
        ``"file PATH, line N"`` (the line when the parser's text shows it),
        ``"env NAME"`` or ``"argument TABLE="``. For the operator's view only: the pin
        record holds no sources."""
        return dict(self._sources)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Arguments over environment over TOML file (defaults come last by themselves)."""
        return init_settings, _EnvSource(settings_cls), _TomlSource(settings_cls)

    def pin(self) -> Pin:
        """A frozen snapshot for one task: later edits of the file or environment miss it."""
        servers = {name: PinnedMcpServer.of(entry) for name, entry in self.mcp.servers.items()}
        pin = Pin.model_validate({**dict(self.llm), "roles": self.roles, "mcp_servers": servers})
        pin._token_source = self._sources.get("llm.token", "")
        pin._mcp_tables = dict(self.mcp.servers)
        return pin


def load_settings(
    path: str | os.PathLike[str] | None = None,
    *,
    require_roles: Iterable[str] | None = None,
    **overrides: Any,
) -> Settings:
    """Settings from ``overrides`` (tables: ``llm={...}``, ``roles={...}``), the environment,
    the TOML file at ``path`` (else `NISSE_CONFIG`, else ``nisse.toml`` in the current
    folder when it exists) and defaults, in that precedence.

    ``require_roles`` names the roles this agent uses; without it, ``NISSE_REQUIRE_ROLES``
    or the file's top-level ``require_roles`` does, else the seeds' four. Each missing one
    is a problem of the `ConfigError`; any other role the configuration defines is kept,
    unless it is a small edit from a required one stated so (probably misspelt: a problem
    too). A ``None`` value inside an override table counts as not given.
    """
    return Settings(path, require_roles=require_roles, **overrides)


def load_task_store(path: str | os.PathLike[str] | None = None) -> Settings:
    """Settings holding only where tasks live, for what needs nothing else (the task CLI,
    a store opened by key): ``NISSE_TASK_STORE``, else the ``task_store`` key of the TOML
    file at ``path`` (else `NISSE_CONFIG`, else ``./nisse.toml``), else the default folder;
    and a database's schema, ``NISSE_TASK_SCHEMA`` else ``task_schema`` (else ``nisse``).
    No token, no roles; `ConfigError` for a file that cannot be read or a value not a
    string."""
    load = _start_load(path, {})
    found: dict[str, Any] = {}
    toml = read_toml(load.path, load.path_named_by)[0] if load.path is not None else {}
    for key, what in (
        ("task_store", "a folder or a postgresql:// URL"),
        ("task_schema", "a schema's name"),
    ):
        value: Any = os.environ.get(ENV_VARS[key], "").strip() or toml.get(key)
        if value is not None and not isinstance(value, str):
            raise ConfigError(
                f"{key}: must be {what} (a string), got {toml_type(value)}; from file {load.path}"
            )
        found[key] = value
    store, schema = found["task_store"], found["task_schema"]
    settings = Settings.model_construct(
        task_store=None if store is None else SecretStr(store), task_schema=schema or "nisse"
    )
    settings._config_file = load.path
    settings._config_lookup = load.looked or str(load.path)
    return settings


def _required_roles(names: Iterable[str]) -> tuple[str, ...]:
    """``require_roles`` checked: role names, never one string taken letter by letter."""
    if isinstance(names, str):
        raise TypeError(
            f"require_roles must be a collection of role names, got the string {names!r}; "
            f"write require_roles=({names!r},)"
        )
    roles = tuple(names)
    for name in roles:
        problem = role_name_problem(name)
        if problem is not None:
            raise ValueError(f"require_roles: {name!r} is not a role name: {problem}")
    return roles


def _stated_roles(load: Load) -> None:
    """The roles required, from the highest layer stating them (argument, environment,
    file); an invalid statement requires none, its error said by validation."""
    for layer in (load.arguments, load.environment, load.file):
        if "require_roles" in layer:
            names = layer["require_roles"]
            valid = isinstance(names, list | tuple) and all(
                role_name_problem(name) is None for name in names
            )
            load.required = tuple(names) if valid else ()
            load.required_stated = True
            return


def _role_typos(load: Load) -> list[str]:
    """A warning for each added role a small edit from another role; a problem instead when
    that other role is one the configuration was told to require."""
    found = []
    for extra, other in role_typos(given_roles(load), load.required):
        if load.required_stated and other in load.required:
            load.problems.append(
                explain(
                    load,
                    (f"roles.{extra}",),
                    f"not a required role, and a small edit from the required role {other}: "
                    f"is it roles.{other} misspelled? Rename it, or add it to require_roles",
                )
            )
        else:
            found.append(
                explain(
                    load,
                    (f"roles.{extra}",),
                    f"a small edit from the role {other}, also set: is one of them misspelled?",
                )
            )
    return found


def _model_typos(load: Load, settings: Settings) -> list[str]:
    """A warning for each role whose model (or ``like``) no rules row covers while one
    covers a name a small edit from it: the typo would take the fallback rules and route."""
    prefixes, found = settings.llm.passthrough_prefixes, []
    for role in settings.roles.names:
        profile = settings.roles.profile(role)
        named = profile.like or profile.model
        typo = model_typo(named, prefixes)
        if typo is not None:
            meant, route = typo
            key = f"roles.{role}.like" if profile.like else f"roles.{role}"
            # The route the role takes: its profile's ``route`` wins over any model's.
            taken = profile.route or route_for(named, prefixes)
            how = f"{taken}, its profile's route" if profile.route else taken
            found.append(
                explain(
                    load,
                    (key,),
                    f"model {named!r} matches no model-rules row: did you mean {meant}? it "
                    f"would route to {profile.route or route} (as written: {how})",
                )
            )
    return found


def _missing_roles(load: Load, errors: list[ErrorDetails]) -> list[str]:
    """A problem for each required role no layer gives (a wholly missing [roles] table is
    pydantic's own error, described key by key)."""
    if any(e["type"] == "missing" and tuple(e["loc"]) == ("roles",) for e in errors):
        return []
    given = given_roles(load)
    return [missing_key(load, f"roles.{role}") for role in load.required if role not in given]


def _start_load(config_file: str | os.PathLike[str] | None, tables: Mapping[str, Any]) -> Load:
    if config_file is not None:
        load = Load(path=Path(config_file).expanduser(), path_named_by="the config path argument")
    elif env_path := os.environ.get(CONFIG_ENV, "").strip():
        load = Load(path=Path(env_path).expanduser(), path_named_by=CONFIG_ENV)
    elif (local := Path(DEFAULT_CONFIG_NAME)).is_file():
        load = Load(path=local, path_named_by=_FOUND_HERE)
    else:
        load = Load(path=None, path_named_by="", looked=_looked())
    for name, table in tables.items():
        if isinstance(table, Mapping):
            load.arguments[name] = {k: v for k, v in table.items() if v is not None}
        elif name in ("task_store", "task_schema") and table is not None:  # top-level values
            load.arguments[name] = table
        elif table is not None:
            load.problems.append(
                f"{name}: the argument {name}= must be a table (a dict), got {type(table).__name__}"
            )
    _role_tables(load.arguments)
    return load


_FOUND_HERE = "the default name, found in the current folder"


def _looked() -> str:
    """Where a file was looked for and not found: what a message names when there is none."""
    return (
        f"no config file: no path given, {CONFIG_ENV} unset, and no {DEFAULT_CONFIG_NAME} "
        f"in the current folder ({Path.cwd() / DEFAULT_CONFIG_NAME})"
    )


def _role_tables(data: dict[str, Any]) -> None:
    """Each role given as a model string becomes ``{model: ...}`` (in place), so layers merge
    key by key: the environment's model keeps the file's options, and the reverse."""
    roles = data.get("roles")
    if isinstance(roles, dict):
        for role, value in roles.items():
            if isinstance(value, str):
                roles[role] = {"model": value}
            elif isinstance(value, RoleProfile):
                roles[role] = value.model_dump(exclude_none=True)
            elif isinstance(value, Mapping):
                roles[role] = {k: v for k, v in value.items() if v is not None}


def _profile_problems(load: Load, settings: Settings) -> list[str]:
    """Each role profile's invalid option combination, named by its keys (checked once the
    tables validate: the rules need the model, the ceiling and the passthrough prefixes)."""
    llm, problems = settings.llm, []
    for role in settings.roles.names:
        found = profile_violations(
            settings.roles.profile(role),
            default_ceiling=llm.max_output_tokens,
            prefixes=llm.passthrough_prefixes,
        )
        for violation in found:
            keys = tuple(
                f"roles.{role}.{name}"
                if holds(load.arguments, ("roles", role, name))
                or holds(load.environment, ("roles", role, name))
                or holds(load.file, ("roles", role, name))
                or name != "max_output_tokens"
                else "llm.max_output_tokens"
                for name in violation.fields
            )
            problems.append(
                explain(load, keys, f"{violation.reason} (model {settings.roles.resolve(role)!r})")
            )
    return problems


def _decode_env(table: str, name: str, raw: str) -> Any:
    """An environment string as the field's type, or unchanged so validation reports it."""
    if (table, name) == ("llm", "passthrough_prefixes"):
        return _decode_env_list(raw)
    model = LLMSettings if table == "llm" else RoleMap
    annotation = model.model_fields[name].annotation
    if annotation in (int, float, bool):
        try:
            return TypeAdapter(annotation).validate_python(raw)
        except ValidationError:
            return raw
    return raw


def _decode_env_list(raw: str) -> list[str] | str:
    """A list variable: comma-separated, or a JSON array of strings (what it means, never
    one string with brackets and quotes in it)."""
    if raw.startswith("["):
        try:
            value = json.loads(raw)
        except ValueError:
            value = None
        if isinstance(value, list) and all(isinstance(item, str) for item in value):
            return [item.strip() for item in value]
        return BadEnvList(raw)
    return [part.strip() for part in raw.split(",")]
