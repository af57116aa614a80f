"""An operator's deliberate move of a running task (``nisse-llm task repin``): the pin record
a repin writes, checked as a pin taken from settings would be.

Pure: no I/O. `repinned` takes the task's pin record in force and what the operator
moves (roles to other models, the task to another proxy) and gives the `RepinRecord` to
append; a role the task lacks, or a model the rules cannot place, is a `ConfigError`
saying why, and nothing is to be written.
"""

from __future__ import annotations

import getpass
import socket
from collections.abc import Mapping
from typing import Any

from nisse_llm.config._typos import model_typo
from nisse_llm.config.profiles import profile_violations
from nisse_llm.config.routing import route_for
from nisse_llm.config.settings import Pin, record_fingerprint
from nisse_llm.errors import ConfigError
from nisse_llm.task.records import RepinRecord, pin_keys

__all__ = ["default_by", "repin_value", "repinned"]

# A placeholder the record is validated with: a repin sends nothing, and no token is stored.
_NO_TOKEN = "unused-for-a-repin"


def default_by() -> str:
    """Who repins when ``--by`` is not given: ``user@host``."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no name for this uid (a container's)
        user = "unknown"
    return f"{user}@{socket.gethostname()}"


def repinned(
    stored: Mapping[str, Any],
    *,
    roles: Mapping[str, str] | None = None,
    base_url: str | None = None,
    by: str,
) -> RepinRecord:
    """The repin record moving the task of pin record ``stored``: each role of ``roles`` to
    its model, on the route the rules give that model (the role's request options kept, a
    ``like`` dropped), and the task to the proxy ``base_url``; `ConfigError` naming each
    problem (a role the task lacks, a model the rules cannot place, no change at all)."""
    body = {key: value for key, value in stored.items() if key != "fingerprint"}
    table = dict(body.get("roles") or {})
    prefixes = body.get("passthrough_prefixes") or ()
    problems: list[str] = []
    for role, model in (roles or {}).items():
        if role not in table:
            problems.append(
                f"roles.{role}: the task has no role {role!r} (its roles: {', '.join(table)})"
            )
            continue
        options = {k: v for k, v in (table[role].get("options") or {}).items() if k != "like"}
        entry: dict[str, Any] = {"model": model, "route": route_for(model, prefixes)}
        if options:
            entry["options"] = options
        table[role] = entry
    body["roles"] = table
    if base_url is not None:
        body["base_url"] = base_url.rstrip("/")
    pin = _checked(body, problems)
    for role in roles or {}:
        if role in table:
            problems += _placement(pin, role)
    record = pin.record()
    changed = pin_keys(dict(stored), record)
    if not changed and not problems:
        problems.append("nothing changes: the task already runs with that pin")
    if problems:
        raise ConfigError(
            "task repin refused, nothing written:\n" + "\n".join(f"  - {p}" for p in problems),
            problems=tuple(problems),
        )
    return RepinRecord(changed=changed, by=by, pin=record)


def _checked(body: dict[str, Any], problems: list[str]) -> Pin:
    """The pin ``body`` describes, validated as a stored record is (`Pin.from_record`)."""
    record = {**body, "fingerprint": record_fingerprint(body)}
    try:
        return Pin.from_record(record, _NO_TOKEN, base_url=str(body.get("base_url")))
    except ConfigError as exc:
        raise ConfigError(
            "task repin refused, nothing written:\n"
            + "\n".join(f"  - {p}" for p in [*problems, str(exc)]),
            problems=(*problems, str(exc)),
        ) from None


def _placement(pin: Pin, role: str) -> list[str]:
    """Why the rules cannot place ``role``'s new model: a name a small edit from a known
    model (probably misspelt), or the role's options breaking the new model's rules."""
    profile = pin.roles.profile(role)
    found = []
    typo = model_typo(profile.model, pin.passthrough_prefixes)
    if typo is not None:
        found.append(
            f"roles.{role}: model {profile.model!r} matches no model-rules row: did you mean "
            f"{typo[0]}? (a model the proxy serves under another name is placed by the "
            "configuration's `like`, which a repin does not set)"
        )
    for violation in profile_violations(
        profile, default_ceiling=pin.max_output_tokens, prefixes=pin.passthrough_prefixes
    ):
        found.append(f"roles.{role}: {violation.reason} (model {profile.model!r})")
    return found


def repin_value(record: Mapping[str, Any], key: str) -> str:
    """What pin ``record`` holds at ``key`` (``roles.executor``: its model), for display."""
    if key.startswith("roles."):
        entry = (record.get("roles") or {}).get(key.removeprefix("roles."))
        return str(entry.get("model")) if isinstance(entry, Mapping) else "(none)"
    table, _, inner = key.partition(".")
    value = record.get(table)
    if inner and isinstance(value, Mapping):
        value = value.get(inner)
    return "(none)" if value is None else str(value)
