"""Configuration: typed settings from arguments, environment, a TOML file and defaults.

Precedence, highest first: explicit arguments, environment, TOML file, defaults
(`Settings.settings_customise_sources`). The environment names are a compatibility
contract with the seeds and follow no single prefix, so `ENV_VARS` maps each TOML key to
its variable explicitly. Every failure is one `ConfigError` naming each offending key as
TOML key and environment variable, with where its value came from; the token is never
echoed. `Settings.pin()` freezes what a task runs with (spec A11).
"""

from __future__ import annotations

import contextvars
import difflib
import hashlib
import json
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, TypeAlias

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    PrivateAttr,
    SecretStr,
    Tag,
    TypeAdapter,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import ErrorDetails, PydanticCustomError
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from nisse_llm._config_file import (
    InsecureConfigFileWarning,
    file_line,
    read_toml,
    warn_if_exposed,
    warn_if_writable,
)
from nisse_llm._egress import check_base_url
from nisse_llm.canonical import DEFAULT_MAX_OUTPUT_TOKENS
from nisse_llm.errors import ConfigError, UnknownRoleError
from nisse_llm.options import RequestOptions
from nisse_llm.profiles import (
    PROFILE_KEYS,
    ModelName,
    RoleProfile,
    decode_option_env,
    option_env_var,
    profile_violations,
)
from nisse_llm.routing import DEFAULT_PASSTHROUGH_PREFIXES, Route, route_for

__all__ = [
    "CONFIG_ENV",
    "ENV_VARS",
    "RECORD_FORMAT",
    "InsecureConfigFileWarning",
    "LLMSettings",
    "Pin",
    "RoleMap",
    "Settings",
    "load_settings",
]

#: The environment variable naming the TOML file when no path is passed.
CONFIG_ENV = "NISSE_CONFIG"

#: TOML key -> environment variable, for every key the file may hold.
ENV_VARS: Mapping[str, str] = {
    "llm.base_url": "NISSE_LLM_BASE_URL",
    "llm.token": "NISSE_LLM_TOKEN",
    "llm.max_output_tokens": "NISSE_MAX_OUTPUT_TOKENS",
    "llm.timeout_s": "NISSE_TIMEOUT_S",
    "llm.passthrough_timeout_s": "NISSE_PASSTHROUGH_TIMEOUT_S",
    "llm.connect_timeout_s": "NISSE_CONNECT_TIMEOUT_S",
    "llm.stream_idle_timeout_s": "NISSE_STREAM_IDLE_TIMEOUT_S",
    "llm.rate_limit_retries": "NISSE_RATE_LIMIT_RETRIES",
    "llm.rate_limit_wait_s": "NISSE_RATE_LIMIT_WAIT_S",
    "llm.rate_limit_wait_cap_s": "NISSE_RATE_LIMIT_WAIT_CAP_S",
    "llm.passthrough_prefixes": "NISSE_PASSTHROUGH_PREFIXES",
    "llm.prompt_cache": "NISSE_PROMPT_CACHE",
    "llm.prompt_cache_ttl": "NISSE_PROMPT_CACHE_TTL",
    "llm.preflight": "NISSE_PREFLIGHT",
    "llm.max_response_bytes": "NISSE_MAX_RESPONSE_BYTES",
    "llm.call_deadline_s": "NISSE_CALL_DEADLINE_S",
    "llm.stream_deadline_s": "NISSE_STREAM_DEADLINE_S",
    "roles.executor": "NISSE_ROLE_EXECUTOR",
    "roles.planner": "NISSE_ROLE_PLANNER",
    "roles.delegate": "NISSE_ROLE_DELEGATE",
    "roles.consultant": "NISSE_ROLE_CONSULTANT",
    # A role table's options and route: NISSE_ROLE_<ROLE>_<OPTION> (nisse_llm.profiles).
    **{
        f"roles.{role}.{option}": option_env_var(role, option)
        for role in ("executor", "planner", "delegate", "consultant")
        for option in PROFILE_KEYS
    },
}

#: Version of the `Pin.record` layout; a record of another format is refused.
RECORD_FORMAT = 1

BASE_URL_PATTERN = r"^https?://[^\s/?#]+[^\s?#]*$"
#: Paths the SDK appends to ``llm.base_url`` (longest first): a base URL ending in one is
#: a pasted endpoint, and every request would go to a doubled path. A real mount prefix
#: (``https://gw.example/litellm``) is kept.
_APPENDED_PATHS = ("/v1/chat/completions", "/chat/completions", "/v1/messages", "/v1")
# Printable ASCII without spaces: anything else cannot travel in an HTTP header.
_TOKEN_PATTERN = re.compile(r"[\x21-\x7e]+")
# Longest wait, timeout or retry wait accepted: beyond an hour a value is a typo.
_MAX_SECONDS = 3600.0
# Tokens shorter than this are not searched for in messages: the search would mangle text.
_MIN_REDACTED_LEN = 6
_REDACTED = "[redacted]"

Seconds: TypeAlias = Annotated[float, Field(gt=0, le=_MAX_SECONDS, allow_inf_nan=False)]
WaitSeconds: TypeAlias = Annotated[float, Field(ge=0, le=_MAX_SECONDS, allow_inf_nan=False)]
Prefix: TypeAlias = Annotated[str, Field(min_length=1, max_length=256, pattern=r"^\S+$")]


class LLMSettings(BaseModel):
    """The ``[llm]`` table: where the proxy is, how to authenticate, and the request knobs."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True, title="llm table")

    base_url: str = Field(
        description="Base URL of the LiteLLM proxy, http:// or https://; required, from the file or the environment. "
        "Requests go to {base_url}/chat/completions and {base_url}/v1/messages.",
        json_schema_extra={"pattern": BASE_URL_PATTERN},
    )
    token: SecretStr = Field(
        min_length=1,
        description="Proxy token (a LiteLLM virtual key), a secret; required, from the file or the environment. Prefer the "
        "environment variable; a file holding it should be readable by its owner only.",
    )
    max_output_tokens: int = Field(
        DEFAULT_MAX_OUTPUT_TOKENS,
        gt=0,
        le=1_000_000,
        description="Output ceiling per request, in tokens; a reply cut off at it raises "
        "TruncatedResponse.",
    )
    timeout_s: Seconds = Field(
        120.0, description="Read timeout in seconds for one request on the chat completions route."
    )
    passthrough_timeout_s: Seconds = Field(
        300.0,
        description="Read timeout in seconds for one request on the Anthropic messages "
        "passthrough (longer: delegations run long turns).",
    )
    connect_timeout_s: Seconds = Field(
        10.0, description="Seconds to wait for a connection to the proxy."
    )
    stream_idle_timeout_s: Seconds = Field(
        120.0,
        description="Seconds a streamed reply may stay silent between chunks before the "
        "request counts as failed (UpstreamUnavailable).",
    )
    rate_limit_retries: int = Field(
        1, ge=0, le=10, description="How many times a 429 is retried after a wait; 0 never retries."
    )
    rate_limit_wait_s: WaitSeconds = Field(
        20.0,
        description="Seconds to wait before retrying a 429 that names no Retry-After.",
    )
    rate_limit_wait_cap_s: WaitSeconds = Field(
        60.0,
        description="Longest server-requested wait (Retry-After) honoured; a longer one raises "
        "UpstreamUnavailable at once, carrying the wait.",
    )
    passthrough_prefixes: tuple[Prefix, ...] = Field(
        DEFAULT_PASSTHROUGH_PREFIXES,
        strict=False,
        description="Model-string prefixes that take the Anthropic messages passthrough; "
        "every other model takes chat completions. In the environment: comma-separated.",
    )
    prompt_cache: bool = Field(
        True, description="Mark each request's stable prefix for provider prompt caching."
    )
    prompt_cache_ttl: Literal["5m", "1h"] = Field(
        "5m",
        description="Lifetime of prompt cache entries: 5m or 1h (1h cache writes cost more).",
    )
    preflight: bool = Field(
        False,
        description="Count each request's tokens at the proxy before sending it and raise "
        "ContextWindowExceeded, sending nothing, when it cannot fit the model's window.",
    )
    max_response_bytes: int = Field(
        64 * 1024 * 1024,
        ge=1024,
        le=4 * 1024**3,
        description="Largest reply body read, in bytes after decompression (complete and "
        "stream, 2xx bodies); past it the call raises UpstreamUnavailable (StreamInterrupted "
        "mid-stream) and nothing more is read. Error bodies are read to 64 KiB at most.",
    )
    call_deadline_s: Seconds = Field(
        600.0,
        description="Total seconds one attempt of complete() may take, from sending the "
        "request to the last byte of the reply, however the server trickles it; past it "
        "the call raises UpstreamUnavailable. Each 429 retry is a new attempt.",
    )
    stream_deadline_s: Seconds = Field(
        3600.0,
        description="Total seconds one attempt of stream() may take, from sending the "
        "request to the reply's final event, keepalives and pings included; past it the "
        "stream raises StreamInterrupted (UpstreamUnavailable before the first byte).",
    )

    @field_validator("base_url")
    @classmethod
    def _check_base_url(cls, value: str) -> str:
        if not re.fullmatch(BASE_URL_PATTERN, value):
            raise PydanticCustomError(
                "base_url", "must be an http:// or https:// URL with a host and no query"
            )
        try:
            check_base_url(value)
        except ConfigError as exc:
            raise PydanticCustomError("base_url", "{reason}", {"reason": exc.message}) from None
        value = value.rstrip("/")
        for suffix in _APPENDED_PATHS:
            if value.lower().endswith(suffix):
                raise PydanticCustomError(
                    "base_url_path",
                    "ends with {suffix}, which the SDK appends itself (requests would go to "
                    "{doubled}); use {fixed}",
                    {
                        "suffix": suffix,
                        "doubled": value + "/v1/messages",
                        "fixed": value[: -len(suffix)] or "the URL without it",
                    },
                )
        return value

    @field_validator("token")
    @classmethod
    def _check_token(cls, value: SecretStr) -> SecretStr:
        if not _TOKEN_PATTERN.fullmatch(value.get_secret_value()):
            raise PydanticCustomError("token", "must be printable ASCII without spaces")
        return value

    @model_validator(mode="after")
    def _check_waits(self) -> LLMSettings:
        if self.rate_limit_wait_s > self.rate_limit_wait_cap_s:
            raise PydanticCustomError(
                "wait_order",
                "the wait {wait} exceeds the cap {cap}; the wait must lie within the cap",
                {
                    "wait": self.rate_limit_wait_s,
                    "cap": self.rate_limit_wait_cap_s,
                    "keys": ("rate_limit_wait_s", "rate_limit_wait_cap_s"),
                },
            )
        return self


def _role_form(value: Any) -> str:
    return "string" if isinstance(value, str) else "table"


#: A role: its model string, or a table with ``model`` and request options.
Role: TypeAlias = Annotated[
    Annotated[ModelName, Tag("string")] | Annotated[RoleProfile, Tag("table")],
    Discriminator(_role_form),
]


class RoleMap(BaseModel):
    """The ``[roles]`` table: each role's model string, or its profile (spec A11).

    A role is a model string, or a table with ``model`` and request options
    (`nisse_llm.profiles`); either way it is held as a `RoleProfile`.
    """

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True, title="roles table")

    ROLES: ClassVar[tuple[str, ...]] = ("executor", "planner", "delegate", "consultant")

    executor: Role = Field(
        description="Model that runs the agent's own turns; required, from the file or the environment.",
    )
    planner: Role = Field(
        description="Model that writes plans; required, from the file or the environment.",
    )
    delegate: Role = Field(
        description="Model that runs delegated work; required, from the file or the environment.",
    )
    consultant: Role = Field(
        description="Model asked for a second opinion; required, from the file or the environment.",
    )

    @field_validator("executor", "planner", "delegate", "consultant", mode="before")
    @classmethod
    def _model_string_or_table(cls, value: Any) -> Any:
        """A table that sets only ``model`` is the plain model string (one form per meaning)."""
        if isinstance(value, RoleProfile):
            value = value.model_dump(exclude_none=True)
        if isinstance(value, Mapping) and set(value) == {"model"}:
            return value["model"]
        if isinstance(value, str | Mapping):
            return value
        raise PydanticCustomError(
            "role", "must be a model string or a table with model and request options"
        )

    def resolve(self, role: str) -> str:
        """The model string for ``role``; `UnknownRoleError` (a ``ValueError``) when no such
        role exists: asking for one is the caller's mistake, not a failed call."""
        return self.profile(role).model

    def profile(self, role: str) -> RoleProfile:
        """The model and options of ``role``; `UnknownRoleError` when no such role exists."""
        if role not in self.ROLES:
            raise UnknownRoleError(role, self.ROLES)
        value: str | RoleProfile = getattr(self, role)
        return RoleProfile(model=value) if isinstance(value, str) else value

    def options(self, role: str) -> RequestOptions | None:
        """The request options ``role``'s profile sets (None when it sets none)."""
        return self.profile(role).options

    def pinned(self) -> dict[str, str]:
        """The whole mapping, role -> model, to record at task start."""
        return {role: self.resolve(role) for role in self.ROLES}


class Pin(LLMSettings):
    """A frozen snapshot of the configuration one task runs with: knobs, token and roles.

    Built by `Settings.pin()` or rebuilt by `Pin.from_record`; the TOML file is never
    read again, so an edit made mid-task cannot reach it.
    """

    model_config = ConfigDict(title="pin")

    roles: RoleMap

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

    def options_for(self, role: str) -> RequestOptions | None:
        """The request options pinned for ``role`` (its profile; None when it sets none)."""
        return self.roles.options(role)

    def record(self) -> dict[str, Any]:
        """A JSON-able record for the task log, with a fingerprint and without the token."""
        body = self._record_body()
        return {**body, "fingerprint": _fingerprint(body)}

    @property
    def fingerprint(self) -> str:
        """``sha256:`` and the hash of the canonical JSON of the record (token excluded)."""
        return _fingerprint(self._record_body())

    def _record_body(self) -> dict[str, Any]:
        body: dict[str, Any] = {"format": RECORD_FORMAT}
        body.update(self.model_dump(mode="json", exclude={"token", "roles"}))
        body["roles"] = {role: self._role_record(role) for role in self.roles.ROLES}
        return body

    def _role_record(self, role: str) -> dict[str, Any]:
        """``{model, route}``, and ``options`` when the role's profile sets any."""
        entry: dict[str, Any] = {"model": self.roles.resolve(role), "route": self.route(role)}
        options = self.roles.options(role)
        if options is not None:
            entry["options"] = options.model_dump(mode="json", exclude_none=True)
        return entry

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
            actual = _fingerprint(body)
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
                f"{'.'.join(str(p) for p in err['loc'])}: {_lower_first(err['msg'])}"
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
    env = ENV_VARS["llm.base_url"]
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


def _fingerprint(body: Mapping[str, Any]) -> str:
    canonical = json.dumps(
        body, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )
    return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()


# --- loading ---------------------------------------------------------------------------


@dataclass
class _Load:
    """What one load saw, kept to say where each offending value came from."""

    path: Path | None
    path_named_by: str
    arguments: dict[str, Any] = field(default_factory=dict)
    environment: dict[str, Any] = field(default_factory=dict)
    file: dict[str, Any] = field(default_factory=dict)
    file_text: str = ""
    problems: list[str] = field(default_factory=list)


_LOAD: contextvars.ContextVar[_Load] = contextvars.ContextVar("nisse_llm_config_load")


class _EnvSource(PydanticBaseSettingsSource):
    """The environment variables in `ENV_VARS`; an empty variable counts as unset."""

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False  # unused: __call__ reads every variable itself

    def __call__(self) -> dict[str, Any]:
        load = _LOAD.get()
        data: dict[str, Any] = {}
        for key, env in ENV_VARS.items():
            raw = os.environ.get(env, "").strip()
            if raw:
                table, name, *option = key.split(".")
                if option:  # a role's option: NISSE_ROLE_<ROLE>_<OPTION>
                    role = data.setdefault(table, {}).setdefault(name, {})
                    role[option[0]] = decode_option_env(option[0], raw)
                elif table == "roles":  # the role's model, beside any options
                    data.setdefault(table, {}).setdefault(name, {})["model"] = raw
                else:
                    data.setdefault(table, {})[name] = _decode_env(table, name, raw)
        load.environment = data
        return _copy(data)


class _TomlSource(PydanticBaseSettingsSource):
    """The TOML file named by the path argument or `NISSE_CONFIG`, if any."""

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False  # unused: __call__ reads the whole file

    def __call__(self) -> dict[str, Any]:
        load = _LOAD.get()
        if load.path is None:
            return {}
        data, load.file_text = read_toml(load.path, load.path_named_by)
        for table in ("llm", "roles"):
            if table in data and not isinstance(data[table], dict):
                load.problems.append(
                    f"{table}: must be a table ([{table}]), got {_toml_type(data.pop(table))}; "
                    f"from file {load.path}"
                )
        llm = data.get("llm")
        if isinstance(llm, dict) and "token" in llm:
            warn_if_exposed(load.path)
        warn_if_writable(load.path)
        _role_tables(data)
        load.file = data
        return _copy(data)


class Settings(BaseSettings):
    """The whole configuration: the ``[llm]`` and ``[roles]`` tables.

    Build it with `load_settings`; ``Settings(config_file, llm=..., roles=...)`` does the
    same. Every failure is a `ConfigError`.
    """

    model_config = SettingsConfigDict(
        extra="forbid", frozen=True, case_sensitive=True, title="nisse-llm configuration"
    )

    llm: LLMSettings = Field(description="The proxy and the request knobs.")
    roles: RoleMap = Field(description="The model string each role resolves to.")

    _config_file: Path | None = PrivateAttr(default=None)
    _sources: dict[str, str] = PrivateAttr(default_factory=dict)

    def __init__(self, config_file: str | os.PathLike[str] | None = None, **tables: Any) -> None:
        load = _start_load(config_file, tables)
        reset = _LOAD.set(load)
        try:
            super().__init__(**load.arguments)
        except ValidationError as exc:
            errors = exc.errors(include_url=False)
        else:
            errors = []
        finally:
            _LOAD.reset(reset)
        if not errors:
            load.problems.extend(_profile_problems(load, self))
        # Raised outside the handler so the error carries no context holding input values.
        if errors or load.problems:
            raise _config_error(load, errors)
        self._config_file = load.path
        self._sources = _sources(load)

    @property
    def config_file(self) -> Path | None:
        """The TOML file this was loaded from, if any."""
        return self._config_file

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
        pin = Pin.model_validate({**dict(self.llm), "roles": self.roles})
        pin._token_source = self._sources.get("llm.token", "")
        return pin


def load_settings(path: str | os.PathLike[str] | None = None, **overrides: Any) -> Settings:
    """Settings from ``overrides`` (tables: ``llm={...}``, ``roles={...}``), the environment,
    the TOML file at ``path`` (else `NISSE_CONFIG`) and defaults, in that precedence.

    A ``None`` value inside an override table counts as not given.
    """
    return Settings(path, **overrides)


def _start_load(config_file: str | os.PathLike[str] | None, tables: Mapping[str, Any]) -> _Load:
    if config_file is not None:
        load = _Load(path=Path(config_file).expanduser(), path_named_by="the config path argument")
    elif env_path := os.environ.get(CONFIG_ENV, "").strip():
        load = _Load(path=Path(env_path).expanduser(), path_named_by=CONFIG_ENV)
    else:
        load = _Load(path=None, path_named_by="")
    for name, table in tables.items():
        if isinstance(table, Mapping):
            load.arguments[name] = {k: v for k, v in table.items() if v is not None}
        elif table is not None:
            load.problems.append(
                f"{name}: the argument {name}= must be a table (a dict), got {type(table).__name__}"
            )
    _role_tables(load.arguments)
    return load


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


def _profile_problems(load: _Load, settings: Settings) -> list[str]:
    """Each role profile's invalid option combination, named by its keys (checked once the
    tables validate: the rules need the model, the ceiling and the passthrough prefixes)."""
    llm, problems = settings.llm, []
    for role in RoleMap.ROLES:
        found = profile_violations(
            settings.roles.profile(role),
            default_ceiling=llm.max_output_tokens,
            prefixes=llm.passthrough_prefixes,
        )
        for violation in found:
            keys = tuple(
                f"roles.{role}.{name}"
                if _holds(load.arguments, ("roles", role, name))
                or _holds(load.environment, ("roles", role, name))
                or _holds(load.file, ("roles", role, name))
                or name != "max_output_tokens"
                else "llm.max_output_tokens"
                for name in violation.fields
            )
            problems.append(
                _explain(load, keys, f"{violation.reason} (model {settings.roles.resolve(role)!r})")
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


class _BadEnvList(str):
    """A list variable that looks like JSON but is not a JSON array of strings."""

    __slots__ = ()


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
        return _BadEnvList(raw)
    return [part.strip() for part in raw.split(",")]


# --- error messages --------------------------------------------------------------------


def _config_error(load: _Load, errors: list[ErrorDetails]) -> ConfigError:
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
    secrets = _known_tokens(load)
    problems = [_redact(p, secrets) for p in dict.fromkeys(problems)]
    where = f" (file {load.path})" if load.path is not None else ""
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


def _misspelled_tables(load: _Load, errors: list[ErrorDetails]) -> dict[str, str]:
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


def _describe(load: _Load, err: ErrorDetails) -> Iterator[str]:
    loc = tuple(str(part) for part in err["loc"])
    if loc[0] == "roles" and len(loc) > 2 and loc[2] in ("string", "table"):
        loc = loc[:2] + loc[3:]  # the role form's union tag
    kind = err["type"]
    if kind == "missing":
        if len(loc) == 1 and loc[0] in _TABLES:
            yield from (_missing(load, key) for key in _required_keys(loc[0]))
        else:
            yield _missing(load, ".".join(loc[:2]))
    elif kind == "extra_forbidden":
        yield _unknown(load, loc)
    elif len(loc) == 1 and loc[0] in _TABLES:
        keys = err.get("ctx", {}).get("keys")
        if keys:
            yield _explain(load, tuple(f"{loc[0]}.{k}" for k in keys), err["msg"])
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
        yield _explain(load, (key,), reason + item)


# What a union-typed option accepts, said once rather than once per branch.
_OPTION_REASONS: Mapping[str, str] = {
    "reasoning": 'must be "off", "low", "medium", "high" or a thinking budget in tokens (>= 1)',
    "tool_choice": 'must be "auto", "none", "required" or a tool name '
    "(1 to 64 letters, digits, _ or -)",
}


def _split_key(loc: tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
    """The config key an error location names (``roles.planner.reasoning``; a role's
    ``model`` is the role's own key) and what follows it (an item index, a union branch)."""
    if loc[0] == "roles" and len(loc) >= 3:
        if loc[2] in PROFILE_KEYS:
            return ".".join(loc[:3]), loc[3:]
        if loc[2] == "model":
            return ".".join(loc[:2]), loc[3:]
    return ".".join(loc[:2]), loc[2:]


def _reason(load: _Load, loc: tuple[str, ...], err: ErrorDetails) -> str:
    """The problem in the operator's words: what was written, and how to write it."""
    kind, value = err["type"], err.get("input")
    from_text = not _holds(load.environment, loc)  # environment values are all strings
    if isinstance(value, _BadEnvList):
        return (
            "looks like a JSON array but is not one of strings; write a JSON array of "
            'strings (["claude-", "anthropic/"]) or a comma-separated list (claude-,anthropic/)'
        )
    if from_text and isinstance(value, str) and kind in _QUOTED and _unquotes(value, kind):
        return f"is a string, not {_QUOTED[kind]}; drop the quotes"
    return _PLAIN.get(kind) or _lower_first(err["msg"])


_TABLES: Mapping[str, type[BaseModel]] = {"llm": LLMSettings, "roles": RoleMap}

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


def _required_keys(table: str) -> list[str]:
    model = _TABLES[table]
    return [f"{table}.{name}" for name, info in model.model_fields.items() if info.is_required()]


def _missing(load: _Load, key: str) -> str:
    env = ENV_VARS[key]
    if load.path is not None:
        return f"{key} (env {env}): missing; set it in {load.path} or set {env}"
    return (
        f"{key} (env {env}): missing; set {env}, or set {key} in a TOML file "
        f"(named by --config or {CONFIG_ENV})"
    )


def _unknown(load: _Load, loc: tuple[str, ...]) -> str:
    origin = _origin(load, loc) or "an unknown source"
    if len(loc) == 1:
        known = list(_TABLES)
        tables = ", ".join(f"[{t}]" for t in known)
        if isinstance((load.arguments | load.file).get(loc[0]), Mapping):
            hint = _did_you_mean(loc[0], known, template="[{}]")
            return f"[{loc[0]}]: unknown table in {origin}{hint}; the tables are {tables}"
        return f"{loc[0]}: unknown top-level key in {origin}; keys live in the tables {tables}"
    if loc[0] == "roles" and len(loc) >= 3:  # a key inside a role's table
        table, name = f"roles.{loc[1]}", loc[2]
        known = ["model", *PROFILE_KEYS]
        hint = _did_you_mean(name, known, template=table + ".{}")
        return f"{table}.{name}: unknown key in {origin}{hint}; [{table}] holds " + ", ".join(known)
    table, name = loc[0], loc[1]
    known = list(_TABLES[table].model_fields) if table in _TABLES else []
    hint = _did_you_mean(name, known, template=table + ".{}")
    return f"{table}.{name}: unknown key in {origin}{hint}; [{table}] holds " + ", ".join(known)


def _did_you_mean(name: str, known: list[str], *, template: str) -> str:
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    return f" (did you mean {template.format(close[0])}?)" if close else ""


def _explain(load: _Load, keys: tuple[str, ...], reason: str) -> str:
    names = ", ".join(f"{key} (env {ENV_VARS[key]})" for key in keys)
    origins = [_origin(load, tuple(key.split("."))) for key in keys]
    if len(keys) == 1:
        return f"{names}: {reason}; from {origins[0] or 'the default'}"
    froms = ", ".join(
        f"{key} from {origin or 'the default'}" for key, origin in zip(keys, origins, strict=True)
    )
    return f"{names}: {reason}; {froms}"


def _origin(load: _Load, loc: tuple[str, ...]) -> str | None:
    """Where the value at ``loc`` came from: the highest-precedence layer holding it."""
    key, _ = _split_key(loc)
    path = tuple(key.split("."))
    paths = [(*path, "model"), path] if path[0] == "roles" and len(path) == 2 else [path]
    if loc[0] == "roles" and len(loc) == 3 and len(path) == 2:  # an unknown key in a role table
        paths = [loc]
    for layer, source in (
        (load.arguments, f"the argument {loc[0]}="),
        (load.environment, f"environment variable {ENV_VARS.get(key, key)}"),
        (load.file, f"file {load.path}"),
    ):
        if any(_holds(layer, p) for p in paths):
            return source
    return None


def _sources(load: _Load) -> dict[str, str]:
    """Every key's source: each key any layer set, and every table field's default."""
    keys: dict[tuple[str, ...], None] = {}
    for table, model in _TABLES.items():
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
    for key, value in data.items():
        if isinstance(value, Mapping) and len(prefix) < 2:
            yield from _flat_keys(value, (*prefix, str(key)))
        elif prefix:
            yield (*prefix, str(key))


def _holds(data: Mapping[str, Any], loc: tuple[str, ...]) -> bool:
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


def _known_tokens(load: _Load) -> set[str]:
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
    return key == "llm.base_url" and "@" in str(value)


def _show(value: Any) -> str:
    shown = repr(value)
    return shown if len(shown) <= 80 else shown[:77] + "..."


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:]


def _toml_type(value: Any) -> str:
    names = {
        bool: "a boolean",
        int: "an integer",
        float: "a float",
        str: "a string",
        list: "an array",
    }
    return names.get(type(value), type(value).__name__)


def _copy(data: dict[str, Any]) -> dict[str, Any]:
    return {k: dict(v) if isinstance(v, dict) else v for k, v in data.items()}
