"""Arbitrary TOML files and environments load to Settings or fail with a ConfigError, only."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nisse_llm.config.settings import ENV_VARS, LLMSettings, RoleMap, Settings, load_settings
from nisse_llm.errors import ConfigError
from tests.config.helpers import TOKEN, toml_dumps

_TEXT = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), max_size=24)
_GOOD_STRINGS = st.sampled_from(
    [
        "http://127.0.0.1:4000",
        "https://proxy.test/v1",
        "claude-sonnet-4-5",
        "openai/gpt-5",
        "5m",
        "1h",
        TOKEN,
    ]
)
_SCALARS = (
    st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats()
    | _TEXT
    | _GOOD_STRINGS
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3),
    max_leaves=6,
)


def _table(known: list[str]) -> st.SearchStrategy[dict[str, Any]]:
    return st.dictionaries(st.sampled_from(known) | _TEXT, _VALUES, max_size=len(known))


_DOCUMENTS = st.dictionaries(
    st.sampled_from(["llm", "roles", "role", "LLM"]) | _TEXT,
    _table(list(LLMSettings.model_fields)) | _table(list(RoleMap.model_fields)) | _VALUES,
    max_size=4,
)
_ENVIRONMENTS = st.dictionaries(
    st.sampled_from(sorted(ENV_VARS.values())), _TEXT | _GOOD_STRINGS | st.just(TOKEN), max_size=6
)


@settings(max_examples=200, deadline=None)
@given(document=_DOCUMENTS, environment=_ENVIRONMENTS, token_in_file=st.booleans())
def test_any_file_and_environment_give_settings_or_a_config_error(
    document: dict[str, Any], environment: dict[str, str], token_in_file: bool
) -> None:
    """No TOML document or environment makes loading raise anything but ConfigError,
    and no message ever contains the configured token, wherever else it was pasted."""
    if token_in_file and isinstance(document.get("llm"), dict):
        document["llm"]["token"] = TOKEN
    else:
        environment["NISSE_LLM_TOKEN"] = TOKEN
    with tempfile.TemporaryDirectory() as folder, pytest.MonkeyPatch.context() as patch:
        path = Path(folder) / "nisse-llm.toml"
        path.write_text(toml_dumps(document), encoding="utf-8")
        os.chmod(path, 0o600)
        for name, value in environment.items():
            patch.setenv(name, value)
        outcome: Settings | ConfigError
        try:
            outcome = load_settings(path)
        except ConfigError as error:  # the only exception allowed; anything else fails the test
            outcome = error
    if isinstance(outcome, ConfigError):
        assert TOKEN not in str(outcome)
        assert all(TOKEN not in problem for problem in outcome.problems)
    else:
        assert TOKEN not in repr(outcome)
        assert TOKEN not in str(outcome.pin().record())
