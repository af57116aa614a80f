"""Role profiles: the model a role resolves to and the request options its calls carry.

A role in the ``[roles]`` table is a model string (``planner = "claude-opus-4-1"``) or a
table with ``model`` and any `RequestOptions` field::

    [roles.planner]
    model = "claude-opus-4-1"
    reasoning = "high"
    max_output_tokens = 32000

``like`` names the model whose rules and route a proxy alias follows
(``model = "team-planner"``, ``like = "claude-opus-5-5"``). ``route`` names the proxy
route the role takes (``openai_chat``, ``anthropic_messages`` or ``openai_responses``),
over the one its model (or ``like``) takes by default; it is pinned with the role.

Each option has an environment variable named after the role's:
``NISSE_ROLE_<ROLE>_<OPTION>`` (``NISSE_ROLE_PLANNER_REASONING``); ``NISSE_ROLE_<ROLE>``
stays the model. ``stop`` from the environment is a JSON array of strings, or one
sequence. Pure: the config module reads the environment and the file.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Annotated, Any, Final, TypeAlias

from pydantic import ConfigDict, Field, TypeAdapter, ValidationError, field_validator

from nisse_llm.config.option_rules import Violation, model_violations, request_rules
from nisse_llm.config.options import RequestOptions, StopSequence
from nisse_llm.config.routing import ROUTES, Route, known_route, route_for

__all__ = [
    "OPTION_KEYS",
    "PROFILE_KEYS",
    "ModelName",
    "RoleProfile",
    "decode_option_env",
    "option_env_var",
    "profile_violations",
]

ModelName: TypeAlias = Annotated[str, Field(min_length=1, max_length=256, pattern=r"^\S+$")]

#: The option keys a role table may hold beside ``model``, in field order.
OPTION_KEYS: Final[tuple[str, ...]] = tuple(RequestOptions.model_fields)
#: Every key of a role table but ``model``: its options and its ``route``.
PROFILE_KEYS: Final[tuple[str, ...]] = (*OPTION_KEYS, "route")


class RoleProfile(RequestOptions):
    """A role's model and the request options every call for the role carries by default."""

    model_config = ConfigDict(strict=True, title="role profile")

    model: ModelName = Field(description="The model string the role resolves to.")
    # TOML and JSON have arrays, not tuples: accept a list here (strict would refuse it).
    stop: tuple[StopSequence, ...] | None = Field(
        default=None,
        strict=False,
        description="Sequences that end the reply when the model writes them.",
    )

    route: Route | None = Field(
        default=None,
        description=(
            "The proxy route the role takes: a route of the route table (the package's are "
            "openai_chat, anthropic_messages and openai_responses; a program may register "
            "more) (default: its model's, or its like's)."
        ),
        examples=list(ROUTES),
    )

    @field_validator("route")
    @classmethod
    def _registered(cls, route: Route | None) -> Route | None:
        # Checked against the table when the profile is made, not against a fixed list:
        # a route a program registers is chosen from TOML like the package's own.
        return None if route is None else known_route(route)

    @property
    def options(self) -> RequestOptions | None:
        """The profile's options without the model and route (None when it sets none)."""
        fields = self.model_dump(exclude={"model", "route"}, exclude_none=True)
        return RequestOptions.model_validate(fields) if fields else None


def option_env_var(role: str, option: str) -> str:
    """``NISSE_ROLE_<ROLE>_<OPTION>``, the environment variable of a role's option."""
    return f"NISSE_ROLE_{role.upper()}_{option.upper()}"


_FLOAT: TypeAdapter[float] = TypeAdapter(float)
_INT: TypeAdapter[int] = TypeAdapter(int)
_BOOL: TypeAdapter[bool] = TypeAdapter(bool)
_ADAPTERS: Mapping[str, TypeAdapter[Any]] = {
    "max_output_tokens": _INT,
    "temperature": _FLOAT,
    "top_p": _FLOAT,
    "parallel_tool_calls": _BOOL,
}


def decode_option_env(option: str, raw: str) -> Any:
    """An option's environment string as its type, or unchanged so validation reports it."""
    adapter = _ADAPTERS.get(option)
    if adapter is not None:
        try:
            return adapter.validate_python(raw)
        except ValidationError:
            return raw
    if option == "reasoning":
        return int(raw) if raw.isdecimal() else raw
    if option == "stop":
        if raw.startswith("["):
            try:
                return json.loads(raw)
            except ValueError:
                return raw
        return [raw]
    return raw


def profile_violations(
    profile: RoleProfile, *, default_ceiling: int, prefixes: tuple[str, ...]
) -> list[Violation]:
    """The rules a role's options break for its model (those that need no tools): the
    model's family and route come from its name and the passthrough ``prefixes``, the
    ceiling from the profile or ``default_ceiling`` (``llm.max_output_tokens``)."""
    options = profile.options
    if options is None:
        return []
    route = profile.route or route_for(profile.like or profile.model, prefixes)
    rules = request_rules(profile.model, profile.like, route=route, prefixes=prefixes)
    ceiling = options.max_output_tokens or default_ceiling
    return model_violations(options, rules=rules, model=profile.model, route=route, ceiling=ceiling)
