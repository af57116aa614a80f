"""Import paths users wrote before the package had layer folders still work, and give the
same objects as the new homes."""

from __future__ import annotations

import importlib

import pytest

import nisse_llm


@pytest.mark.parametrize(
    ("old", "names"),
    [
        ("nisse_llm.clients", ("LiteLLMClient", "AsyncAnthropicPassthroughClient", "RoleRouter")),
        ("nisse_llm.logstore", ("FileTaskStore", "TaskHeaderMissing", "TaskPinMismatch")),
        ("nisse_llm.config", ("load_settings", "Pin", "Settings", "RoleMap")),
        ("nisse_llm.testing", ("Script", "ScriptedRouter", "ScriptedTransport")),
        ("nisse_llm.testing.proxy", ("LiteLLMProxy", "ProxyModel")),
        ("nisse_llm.testing.fleet", ("LiteLLMFleet",)),
    ],
)
def test_an_old_import_path_gives_the_same_objects(old: str, names: tuple[str, ...]) -> None:
    module = importlib.import_module(old)
    for name in names:
        value = getattr(module, name)
        if hasattr(nisse_llm, name):
            assert value is getattr(nisse_llm, name)
        assert name in getattr(module, "__all__", (name,))
