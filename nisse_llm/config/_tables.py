"""The configuration's tables: ``[llm]`` and ``[roles]`` as models, and every key's
environment variable.

The environment names are a compatibility contract with the seeds and follow no single
prefix, so `ENV_VARS` maps each TOML key to its variable explicitly; any role's variables
are ``NISSE_ROLE_<ROLE>`` and ``NISSE_ROLE_<ROLE>_<OPTION>`` (`env_var`). Loading,
precedence and the pin live in `nisse_llm.config.settings`.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Literal, TypeAlias

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    SecretStr,
    Tag,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from nisse_llm import defaults
from nisse_llm.config._bounds import MAX_SECONDS
from nisse_llm.config._egress import check_base_url
from nisse_llm.config.options import RequestOptions
from nisse_llm.config.profiles import (
    PROFILE_KEYS,
    ModelName,
    RoleProfile,
    option_env_var,
)
from nisse_llm.config.routing import DEFAULT_PASSTHROUGH_PREFIXES
from nisse_llm.errors import ConfigError, UnknownRoleError
from nisse_llm.events.canonical import DEFAULT_MAX_OUTPUT_TOKENS

#: The environment variable naming the TOML file when no path is passed.
CONFIG_ENV = "NISSE_CONFIG"
#: The file looked for in the current folder when neither a path nor `CONFIG_ENV` names
#: one; ``nisse-llm config init`` writes it.
DEFAULT_CONFIG_NAME = defaults.CONFIG_NAME

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
    "require_roles": "NISSE_REQUIRE_ROLES",
    "task_store": "NISSE_TASK_STORE",
    "task_schema": "NISSE_TASK_SCHEMA",
    "roles.executor": "NISSE_ROLE_EXECUTOR",
    "roles.planner": "NISSE_ROLE_PLANNER",
    "roles.delegate": "NISSE_ROLE_DELEGATE",
    "roles.consultant": "NISSE_ROLE_CONSULTANT",
    # A role table's options: NISSE_ROLE_<ROLE>_<OPTION> (nisse_llm.config.profiles).
    **{
        f"roles.{role}.{option}": option_env_var(role, option)
        for role in ("executor", "planner", "delegate", "consultant")
        for option in PROFILE_KEYS
    },
}

_ROLE_ENV_PREFIX = "NISSE_ROLE_"
#: An MCP server's variables: ``NISSE_MCP_<NAME>_<KEY>`` (`nisse_llm.config.mcp`).
MCP_ENV_PREFIX = "NISSE_MCP_"


def env_var(key: str) -> str:
    """The environment variable of a TOML key: `ENV_VARS`'s, for any role's key
    ``NISSE_ROLE_<ROLE>`` / ``NISSE_ROLE_<ROLE>_<OPTION>``, for an MCP server's
    ``NISSE_MCP_<NAME>_<KEY>``."""
    known = ENV_VARS.get(key)
    if known is not None:
        return known
    table, *rest = key.split(".")
    if table == "roles" and len(rest) == 1:
        return _ROLE_ENV_PREFIX + rest[0].upper()
    if table == "roles" and len(rest) == 2:
        return option_env_var(rest[0], rest[1])
    if table == "mcp" and len(rest) >= 3:
        return mcp_env_var(*rest[1:4])
    if table == "mcp" and len(rest) == 2:  # a whole server's table
        return f"{MCP_ENV_PREFIX}{rest[1].upper()}_*"
    return key


def mcp_env_var(server: str, key: str, entry: str | None = None) -> str:
    """The environment variable of an MCP server's key (or of one ``env``/``headers`` entry)."""
    name = f"{MCP_ENV_PREFIX}{server.upper()}"
    if key in ("env", "headers") and entry is not None:
        kind = "ENV" if key == "env" else "HEADER"
        return f"{name}_{kind}_{entry.upper().replace('-', '_')}"
    return f"{name}_{key.upper()}"


def misread_option(name: str, roles: set[str]) -> str | None:
    """A problem when the variable of role ``name`` looks like a misspelled option of
    another role (``NISSE_ROLE_PLANNER_REASONIN``), rather than a role of its own."""
    for other in sorted(roles, key=len, reverse=True):
        rest = name.removeprefix(other + "_")
        if rest != name:
            close = difflib.get_close_matches(rest, PROFILE_KEYS, n=1, cutoff=0.75)
            if close:
                return (
                    f"{_ROLE_ENV_PREFIX}{name.upper()}: not an option of role {other!r} (did "
                    f"you mean {option_env_var(other, close[0])}?); a role of its own may "
                    "not be named like a misspelled option"
                )
    return None


def role_env(name: str) -> tuple[str, str | None] | None:
    """The role (and option) a ``NISSE_ROLE_...`` variable sets, or ``None`` if it names none."""
    rest = name.removeprefix(_ROLE_ENV_PREFIX)
    if rest == name or not rest:
        return None
    for option in PROFILE_KEYS:
        suffix = "_" + option.upper()
        if rest.endswith(suffix) and len(rest) > len(suffix):
            return rest[: -len(suffix)].lower(), option
    return rest.lower(), None


BASE_URL_PATTERN = r"^https?://[^\s/?#]+[^\s?#]*$"
#: Paths the SDK appends to ``llm.base_url`` (longest first): a base URL ending in one is
#: a pasted endpoint, and every request would go to a doubled path. A real mount prefix
#: (``https://gw.example/litellm``) is kept.
_APPENDED_PATHS = ("/v1/chat/completions", "/chat/completions", "/v1/messages", "/v1")
# Printable ASCII without spaces: anything else cannot travel in an HTTP header.
_TOKEN_PATTERN = re.compile(r"[\x21-\x7e]+")
# Longest wait, timeout or retry wait accepted: the clients' keywords take the same.
_MAX_SECONDS = MAX_SECONDS

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
        defaults.CHAT_TIMEOUT_S,
        description="Read timeout in seconds for one request on the chat completions route.",
    )
    passthrough_timeout_s: Seconds = Field(
        defaults.PASSTHROUGH_TIMEOUT_S,
        description="Read timeout in seconds for one request on the Anthropic messages "
        "passthrough (longer: delegations run long turns).",
    )
    connect_timeout_s: Seconds = Field(
        defaults.CONNECT_TIMEOUT_S, description="Seconds to wait for a connection to the proxy."
    )
    stream_idle_timeout_s: Seconds = Field(
        defaults.STREAM_IDLE_TIMEOUT_S,
        description="Seconds a streamed reply may stay silent between chunks before the "
        "request counts as failed (UpstreamUnavailable).",
    )
    rate_limit_retries: int = Field(
        defaults.RATE_LIMIT_RETRIES,
        ge=0,
        le=10,
        description="How many times a 429 is retried after a wait; 0 never retries.",
    )
    rate_limit_wait_s: WaitSeconds = Field(
        defaults.RATE_LIMIT_WAIT_S,
        description="Seconds to wait before retrying a 429 that names no Retry-After.",
    )
    rate_limit_wait_cap_s: WaitSeconds = Field(
        defaults.RATE_LIMIT_WAIT_CAP_S,
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
        defaults.PROMPT_CACHE,
        description="Mark each request's stable prefix for provider prompt caching.",
    )
    prompt_cache_ttl: Literal["5m", "1h"] = Field(
        defaults.PROMPT_CACHE_TTL,
        description="Lifetime of prompt cache entries: 5m or 1h (1h cache writes cost more).",
    )
    preflight: bool = Field(
        defaults.PREFLIGHT,
        description="Count each request's tokens at the proxy before sending it and raise "
        "ContextWindowExceeded, sending nothing, when it cannot fit the model's window.",
    )
    max_response_bytes: int = Field(
        defaults.MAX_RESPONSE_BYTES,
        ge=1024,
        le=4 * 1024**3,
        description="Largest reply body read, in bytes after decompression (complete and "
        "stream, 2xx bodies); past it the call raises UpstreamUnavailable (StreamInterrupted "
        "mid-stream) and nothing more is read. Error bodies are read to 64 KiB at most.",
    )
    call_deadline_s: Seconds = Field(
        defaults.CALL_DEADLINE_S,
        description="Total seconds one attempt of complete() may take, from sending the "
        "request to the last byte of the reply, however the server trickles it; past it "
        "the call raises UpstreamUnavailable. Each 429 retry is a new attempt.",
    )
    stream_deadline_s: Seconds = Field(
        defaults.STREAM_DEADLINE_S,
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


def _role_form(value: Any) -> str | None:
    if isinstance(value, str):
        return "string"
    return "table" if isinstance(value, Mapping | RoleProfile) else None


#: A role: its model string, or a table with ``model`` and request options.
Role: TypeAlias = Annotated[
    Annotated[ModelName, Tag("string")] | Annotated[RoleProfile, Tag("table")],
    Discriminator(
        _role_form,
        custom_error_type="role",
        custom_error_message="must be a model string or a table with model and request options",
    ),
]

#: The roles of the seeds: the defaults the schema describes and `load_settings` requires.
SEED_ROLES: tuple[str, ...] = ("executor", "planner", "delegate", "consultant")
#: A role name: lowercase letters, digits and ``_``, starting with a letter (its variable
#: is ``NISSE_ROLE_<NAME>``, so it must survive upper-casing unambiguously).
ROLE_NAME_PATTERN = r"^[a-z][a-z0-9_]{0,31}$"
_ROLE_NAME = re.compile(ROLE_NAME_PATTERN)
_SEED_DESCRIPTIONS: Mapping[str, str] = {
    "executor": "Model that runs the agent's own turns.",
    "planner": "Model that writes plans.",
    "delegate": "Model that runs delegated work.",
    "consultant": "Model asked for a second opinion.",
}


def role_name_problem(name: object) -> str | None:
    """Why ``name`` cannot name a role, or ``None`` when it can."""
    if not isinstance(name, str) or not _ROLE_NAME.fullmatch(name):
        return (
            "a role name is 1 to 32 lowercase letters, digits or _, starting with a letter "
            "(its variable is NISSE_ROLE_<NAME>)"
        )
    clash = next((o for o in PROFILE_KEYS if name.endswith("_" + o)), None)
    if clash is not None:
        return (
            f"a role name must not end in _{clash}: NISSE_ROLE_{name.upper()} would read as "
            f"the {clash} option of role {name.removesuffix('_' + clash)!r}"
        )
    return None


class RoleMap(BaseModel):
    """The ``[roles]`` table: each role's model string, or its profile (spec A11).

    A role is a model string, or a table with ``model`` and request options
    (`nisse_llm.config.profiles`); either way it is held as a `RoleProfile`. The seeds' four
    roles (`SEED_ROLES`) are the defaults; an operator may add others, named by
    `ROLE_NAME_PATTERN`. Which roles must be present is the loader's question
    (``load_settings(require_roles=...)``), not the table's.
    """

    model_config = ConfigDict(strict=True, extra="allow", frozen=True, title="roles table")

    __pydantic_extra__: dict[str, Role] = Field(init=False)

    #: The seeds' roles (the defaults): `SEED_ROLES`.
    ROLES: ClassVar[tuple[str, ...]] = SEED_ROLES
    #: What each seed role is for, for the schema.
    DESCRIPTIONS: ClassVar[Mapping[str, str]] = _SEED_DESCRIPTIONS

    @model_validator(mode="before")
    @classmethod
    def _named_roles(cls, data: Any) -> Any:
        """Every key a role name; a table that sets only ``model`` is the plain model string
        (one form per meaning)."""
        if not isinstance(data, Mapping):
            return data
        out: dict[str, Any] = {}
        for name, value in data.items():
            problem = role_name_problem(name)
            if problem is not None:
                raise PydanticCustomError(
                    "role_name",
                    "{name!r} is not a role name: {problem}",
                    {"name": name, "problem": problem},
                )
            if isinstance(value, RoleProfile):
                value = value.model_dump(exclude_none=True)
            if isinstance(value, Mapping) and set(value) == {"model"}:
                value = value["model"]
            out[name] = value
        return out

    @property
    def names(self) -> tuple[str, ...]:
        """The roles this table defines: the seeds' first, in their order, then the others
        sorted."""
        given = set(self.__pydantic_extra__ or {})
        return tuple(r for r in SEED_ROLES if r in given) + tuple(sorted(given - set(SEED_ROLES)))

    def resolve(self, role: str) -> str:
        """The model string for ``role``; `UnknownRoleError` (a ``ValueError``) when no such
        role exists: asking for one is the caller's mistake, not a failed call."""
        return self.profile(role).model

    def profile(self, role: str) -> RoleProfile:
        """The model and options of ``role``; `UnknownRoleError` when no such role exists."""
        roles = self.__pydantic_extra__ or {}
        if not isinstance(role, str) or role not in roles:
            raise UnknownRoleError(role, self.names)
        value: str | RoleProfile = roles[role]
        return RoleProfile(model=value) if isinstance(value, str) else value

    def options(self, role: str) -> RequestOptions | None:
        """The request options ``role``'s profile sets (None when it sets none)."""
        return self.profile(role).options

    def pinned(self) -> dict[str, str]:
        """The whole mapping, role -> model, to record at task start."""
        return {role: self.resolve(role) for role in self.names}
