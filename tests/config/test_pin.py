"""Pinning: a frozen snapshot per task, a fingerprinted record, and a pin rebuilt from it."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from nisse_llm.config.settings import Pin, RoleMap, load_settings
from nisse_llm.errors import ConfigError, LLMError, UnknownRoleError
from tests.config.helpers import COMPLETE, TOKEN, complete, write_config

BASE = "http://127.0.0.1:4000"


@pytest.fixture
def pin(tmp_path: Path) -> Pin:
    return load_settings(write_config(tmp_path / "c.toml", COMPLETE)).pin()


def test_a_pin_cannot_be_changed(pin: Pin) -> None:
    """Assigning to a pin, its role map or the settings it came from raises."""
    with pytest.raises(ValidationError, match="Instance is frozen"):
        pin.base_url = "http://elsewhere"  # type: ignore[misc]
    with pytest.raises(ValidationError, match="Instance is frozen"):
        pin.roles.planner = "other"  # type: ignore[misc]
    with pytest.raises(ValidationError, match="Instance is frozen"):
        pin.timeout_s = 1.0  # type: ignore[misc]


def test_settings_cannot_be_changed_either(tmp_path: Path) -> None:
    """Loaded settings are frozen too, so a pin never copies a half-edited object."""
    settings = load_settings(write_config(tmp_path / "c.toml", COMPLETE))
    with pytest.raises(ValidationError, match="Instance is frozen"):
        settings.roles = RoleMap(executor="a", planner="b", delegate="c", consultant="d")  # type: ignore[misc]


def test_the_pin_exposes_token_base_url_and_knobs(pin: Pin) -> None:
    """Clients read the token as a SecretStr and every knob as a typed attribute."""
    assert pin.token.get_secret_value() == TOKEN
    assert pin.base_url == "http://127.0.0.1:4000"
    assert (pin.max_output_tokens, pin.timeout_s, pin.passthrough_timeout_s) == (
        16384,
        120.0,
        300.0,
    )
    assert (pin.connect_timeout_s, pin.stream_idle_timeout_s) == (10.0, 120.0)
    assert (pin.rate_limit_retries, pin.rate_limit_wait_s, pin.rate_limit_wait_cap_s) == (
        1,
        20.0,
        60.0,
    )
    assert pin.passthrough_prefixes == ("claude-", "anthropic/")
    assert (pin.prompt_cache, pin.prompt_cache_ttl) == (True, "5m")


def test_the_record_holds_roles_routes_and_knobs(pin: Pin) -> None:
    """record() lists base URL, each role's model and route, the ceiling and the knobs."""
    record = pin.record()
    assert record == {
        "format": 1,
        "base_url": "http://127.0.0.1:4000",
        "max_output_tokens": 16384,
        "timeout_s": 120.0,
        "passthrough_timeout_s": 300.0,
        "connect_timeout_s": 10.0,
        "stream_idle_timeout_s": 120.0,
        "rate_limit_retries": 1,
        "rate_limit_wait_s": 20.0,
        "rate_limit_wait_cap_s": 60.0,
        "passthrough_prefixes": ["claude-", "anthropic/"],
        "prompt_cache": True,
        "prompt_cache_ttl": "5m",
        "preflight": False,
        "max_response_bytes": 64 * 1024 * 1024,
        "call_deadline_s": 600.0,
        "stream_deadline_s": 3600.0,
        "roles": {
            "executor": {"model": "claude-sonnet-4-5", "route": "anthropic_messages"},
            "planner": {"model": "openai/gpt-5", "route": "openai_chat"},
            "delegate": {"model": "claude-opus-4-1", "route": "anthropic_messages"},
            "consultant": {"model": "openai/gpt-5-mini", "route": "openai_chat"},
        },
        "fingerprint": record["fingerprint"],
    }
    assert json.loads(json.dumps(record)) == record


def test_the_fingerprint_is_the_hash_of_the_canonical_record(pin: Pin) -> None:
    """The fingerprint is sha256 over the sorted, compact JSON of the record without it."""
    record = pin.record()
    body = {k: v for k, v in record.items() if k != "fingerprint"}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert record["fingerprint"] == "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()
    assert pin.fingerprint == record["fingerprint"]


def test_same_settings_give_the_same_fingerprint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same configuration from a file, the environment or arguments pins identically."""
    from_file = load_settings(
        write_config(tmp_path / "a.toml", complete(llm={"timeout_s": 90}))
    ).pin()
    again = load_settings(
        write_config(tmp_path / "b.toml", complete(llm={"timeout_s": 90.0}))
    ).pin()
    for key, env in (("base_url", "NISSE_LLM_BASE_URL"), ("token", "NISSE_LLM_TOKEN")):
        monkeypatch.setenv(env, COMPLETE["llm"][key])
    for role, model in COMPLETE["roles"].items():
        monkeypatch.setenv(f"NISSE_ROLE_{role.upper()}", model)
    from_env = load_settings(llm={"timeout_s": 90.0}).pin()
    assert from_file.fingerprint == again.fingerprint == from_env.fingerprint
    assert from_file.record() == from_env.record()


def test_a_different_setting_gives_a_different_fingerprint(tmp_path: Path, pin: Pin) -> None:
    """Changing one model or one knob changes the fingerprint."""
    other_role = load_settings(write_config(tmp_path / "a.toml", complete(roles={"planner": "x"})))
    other_knob = load_settings(
        write_config(tmp_path / "b.toml", complete(llm={"prompt_cache": False}))
    )
    fingerprints = {pin.fingerprint, other_role.pin().fingerprint, other_knob.pin().fingerprint}
    assert len(fingerprints) == 3


def test_the_token_does_not_change_the_fingerprint(tmp_path: Path, pin: Pin) -> None:
    """A rotated token keeps the fingerprint: the record never depends on the secret."""
    rotated = load_settings(
        write_config(tmp_path / "r.toml", complete(llm={"token": "sk-rotated-99"}))
    )
    assert rotated.pin().fingerprint == pin.fingerprint


def test_a_record_rebuilds_the_same_pin(pin: Pin) -> None:
    """from_record(record, token) after a JSON round trip gives back an equal pin."""
    record = json.loads(json.dumps(pin.record()))
    rebuilt = Pin.from_record(record, TOKEN, base_url=BASE)
    assert rebuilt == pin
    assert rebuilt.token.get_secret_value() == TOKEN
    assert rebuilt.record() == pin.record()


def test_editing_the_file_after_pinning_changes_nothing_in_the_pin(tmp_path: Path) -> None:
    """A pin keeps its mapping after the TOML is edited; a fresh load sees the edit."""
    path = write_config(tmp_path / "c.toml", COMPLETE)
    pin = load_settings(path).pin()
    record = pin.record()
    write_config(path, complete(roles={"planner": "openai/gpt-6"}, llm={"timeout_s": 5}))
    assert pin.roles.resolve("planner") == "openai/gpt-5"
    assert pin.timeout_s == 120.0
    assert pin.record() == record
    assert Pin.from_record(record, TOKEN, base_url=BASE).roles.planner == "openai/gpt-5"
    fresh = load_settings(path).pin()
    assert fresh.roles.resolve("planner") == "openai/gpt-6"
    assert fresh.timeout_s == 5.0


def _tampered(pin: Pin, **changes: Any) -> dict[str, Any]:
    record = pin.record()
    record.update(changes)
    return record


def _refit(record: dict[str, Any]) -> dict[str, Any]:
    """The record with its fingerprint recomputed, as a careless hand edit would do."""
    body = {k: v for k, v in record.items() if k != "fingerprint"}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return {**body, "fingerprint": "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()}


def test_an_edited_record_is_refused(pin: Pin) -> None:
    """A record whose content no longer matches its fingerprint is a ConfigError."""
    roles = pin.record()["roles"] | {"planner": {"model": "x", "route": "openai_chat"}}
    with pytest.raises(ConfigError, match="fingerprint does not match its content"):
        Pin.from_record(_tampered(pin, roles=roles), TOKEN, base_url=BASE)
    with pytest.raises(ConfigError, match="fingerprint does not match its content"):
        Pin.from_record(_tampered(pin, fingerprint=None), TOKEN, base_url=BASE)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"format": 2}, "not a pin record of format 1 (format is 2)"),
        (
            {"max_output_tokens": 0},
            "malformed pin record:\n  - max_output_tokens: input should be greater than 0",
        ),
        ({"colour": "blue"}, "malformed pin record:\n  - colour: extra inputs are not permitted"),
        ({"roles": "all"}, "malformed pin record: roles must map each role to {model, route}"),
        (
            {
                "roles": {
                    "executor": {"model": "claude-x", "route": "openai_chat"},
                    "planner": {"model": "p"},
                    "delegate": {"model": "d"},
                    "consultant": {"model": "c"},
                }
            },
            "malformed pin record: a role's route does not match its model",
        ),
    ],
)
def test_a_malformed_record_is_refused(pin: Pin, change: dict[str, Any], message: str) -> None:
    """Even with a matching fingerprint, a record that is not a valid pin is a ConfigError."""
    with pytest.raises(ConfigError) as caught:
        Pin.from_record(_refit(_tampered(pin, **change)), TOKEN, base_url=BASE)
    assert str(caught.value) == message


def test_a_record_that_is_not_a_mapping_is_refused() -> None:
    """A list or a string in place of a record is a ConfigError, not a TypeError."""
    with pytest.raises(ConfigError, match="a pin record must be a mapping, got list"):
        Pin.from_record([], TOKEN, base_url=BASE)  # type: ignore[arg-type]


def test_an_unknown_role_is_the_callers_mistake(pin: Pin) -> None:
    """RoleMap.resolve raises UnknownRoleError, a ValueError and never an LLMError (which
    means a model call failed), naming the role and the roles that exist."""
    with pytest.raises(UnknownRoleError) as caught:
        pin.roles.resolve("architect")
    assert isinstance(caught.value, ValueError)
    assert not isinstance(caught.value, LLMError)
    assert str(caught.value) == (
        "unknown role 'architect'; the roles are executor, planner, delegate, consultant"
    )
    assert (caught.value.role, caught.value.roles) == ("architect", RoleMap.ROLES)
    with pytest.raises(UnknownRoleError):
        pin.route("ROLES")


def test_pinned_returns_the_role_to_model_mapping(pin: Pin) -> None:
    """pinned() is the seed API: a plain dict of role -> model string."""
    assert pin.roles.pinned() == COMPLETE["roles"]
    assert pin.model_for("delegate") == "claude-opus-4-1"


def test_routes_follow_the_configured_prefixes(tmp_path: Path) -> None:
    """The route recorded for each role uses the configured passthrough prefixes."""
    path = write_config(tmp_path / "c.toml", complete(llm={"passthrough_prefixes": ["openai/"]}))
    pin = load_settings(path).pin()
    assert {role: pin.route(role) for role in RoleMap.ROLES} == {
        "executor": "openai_chat",
        "planner": "anthropic_messages",
        "delegate": "openai_chat",
        "consultant": "anthropic_messages",
    }
    assert pin.record()["roles"]["planner"]["route"] == "anthropic_messages"
