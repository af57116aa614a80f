"""Import paths users wrote before the package had layer folders still work, and give the
same objects as the new homes; a former home warns at each use, naming the new one."""

from __future__ import annotations

import importlib

import pytest

import nisse_llm


@pytest.mark.parametrize(
    ("old", "names"),
    [
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


#: Former homes: (module, name, the name's new home).
FORMER = [
    ("nisse_llm.clients", "LiteLLMClient", "nisse_llm.transport.clients"),
    ("nisse_llm.clients", "AsyncAnthropicPassthroughClient", "nisse_llm.transport.clients"),
    ("nisse_llm.clients", "select_client", "nisse_llm.transport.clients"),
    ("nisse_llm.clients", "RoleRouter", "nisse_llm.transport.routers"),
    ("nisse_llm.clients", "AsyncRoleRouter", "nisse_llm.transport.routers"),
    ("nisse_llm.logstore", "FileTaskStore", "nisse_llm.task.logstore"),
    ("nisse_llm.logstore", "TaskHeaderMissing", "nisse_llm.task.logstore"),
    ("nisse_llm.logstore", "LogRead", "nisse_llm.task.logstore"),
    ("nisse_llm.log.toolbox", "Toolbox", "nisse_llm.tools"),
    ("nisse_llm.log.toolbox", "result_text", "nisse_llm.events.tool_text"),
    ("nisse_llm.log.toolbox", "validation_feedback", "nisse_llm.events.tool_text"),
    ("nisse_llm.log.canonical", "UserText", "nisse_llm.events.canonical"),
    ("nisse_llm.log.canonical", "Completion", "nisse_llm.events.canonical"),
    ("nisse_llm.log.images", "Image", "nisse_llm.events.images"),
    ("nisse_llm.log.tools", "ToolSpec", "nisse_llm.events.tools"),
    ("nisse_llm.log.tool_changes", "ToolChanges", "nisse_llm.events.tool_changes"),
    ("nisse_llm.log.tool_text", "result_text", "nisse_llm.events.tool_text"),
]


@pytest.mark.parametrize(("old", "name", "home"), FORMER)
def test_a_former_home_gives_the_same_object_with_a_warning_naming_the_new_home(
    old: str, name: str, home: str
) -> None:
    """Each use of a name at its former home warns, naming the new home, and gives the
    object the new home holds."""
    module = importlib.import_module(old)
    for _ in range(2):  # warned at every use, not only the first
        with pytest.warns(DeprecationWarning, match=rf"moved to {home}\.{name};"):
            value = getattr(module, name)
        assert value is getattr(importlib.import_module(home), name)
    assert name in module.__all__


@pytest.mark.parametrize("old", sorted({old for old, _, _ in FORMER}))
def test_an_import_statement_from_a_former_home_warns(old: str) -> None:
    """``from <former home> import name`` itself warns (not only attribute access)."""
    name = next(n for o, n, _ in FORMER if o == old)
    with pytest.warns(DeprecationWarning, match="the old path goes in the next release"):
        exec(f"from {old} import {name}", {})


@pytest.mark.parametrize(
    ("old", "homes"),
    [
        ("nisse_llm.clients", ("nisse_llm.transport.clients", "nisse_llm.transport.routers")),
        ("nisse_llm.logstore", ("nisse_llm.task.logstore",)),
        ("nisse_llm.log.canonical", ("nisse_llm.events.canonical",)),
        ("nisse_llm.log.images", ("nisse_llm.events.images",)),
        ("nisse_llm.log.tools", ("nisse_llm.events.tools",)),
        ("nisse_llm.log.tool_changes", ("nisse_llm.events.tool_changes",)),
        ("nisse_llm.log.tool_text", ("nisse_llm.events.tool_text",)),
    ],
)
def test_a_former_home_lists_every_name_of_its_new_homes(old: str, homes: tuple[str, ...]) -> None:
    """A former home offers every public name its new homes hold, so no import written
    against it breaks before its warning has been seen."""
    expected = {name for home in homes for name in importlib.import_module(home).__all__}
    assert set(importlib.import_module(old).__all__) == expected
