"""The public surface: names promised by the design contract, and a cheap import."""

from __future__ import annotations

import ast
import importlib
import inspect
import subprocess
import sys
from pathlib import Path

import pytest

import nisse_llm

SOURCE = Path(nisse_llm.__file__)

# The names tools outside the project rely on (the design contract's "Public names").
CONTRACT = {
    "LLMError", "UpstreamUnavailable", "BudgetExhausted", "TruncatedResponse", "ConfigError",
    "RenderError", "load_settings", "UserText", "AssistantText", "ToolCall", "ToolResult",
    "Reasoning", "StoredEvent", "CanonicalEvent", "ToolSpec", "mint_call_id",
    "OpenAIChatRenderer", "AnthropicMessagesRenderer", "LiteLLMClient",
    "AnthropicPassthroughClient", "AsyncLiteLLMClient", "AsyncAnthropicPassthroughClient",
    "select_client", "has_native_adapter", "Usage",
    "Toolbox", "TypedReply", "OutputValidationError",
}  # fmt: skip


def test_contract_names_are_all_public() -> None:
    """Every name of the design contract is listed in nisse_llm.__all__."""
    assert set(nisse_llm.__all__) >= CONTRACT


def test_all_matches_the_public_names() -> None:
    """__all__ is sorted, has no duplicates, and lists exactly the public attributes."""
    assert nisse_llm.__all__ == sorted(set(nisse_llm.__all__))
    public = {
        name
        for name in dir(nisse_llm)
        if not name.startswith("_") and not inspect.ismodule(getattr(nisse_llm, name))
    }
    helpers = {"annotations", "TYPE_CHECKING", "Any"}
    assert public - helpers - set(nisse_llm.__all__) == set()


def _imports(*, type_checking: bool) -> dict[str, str]:
    """Public name -> module, as ``nisse_llm/__init__.py``'s own imports take it: the eager
    ones, or those under ``if TYPE_CHECKING:`` (read by the type checker only)."""
    found: dict[str, str] = {}
    for node in ast.parse(SOURCE.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.If) and type_checking:
            statements = node.body
        elif isinstance(node, ast.ImportFrom) and not type_checking:
            statements = [node]
        else:
            continue
        for statement in statements:
            assert isinstance(statement, ast.ImportFrom)
            assert statement.module is not None
            if statement.module.startswith("nisse_llm."):
                for alias in statement.names:
                    if not alias.name.startswith("_"):
                        found[alias.asname or alias.name] = statement.module
    return found


EAGER = _imports(type_checking=False)


def test_each_lazy_name_is_listed_once_where_the_type_checker_reads_it() -> None:
    """The lazy table names each name once, and the module the type checker reads it from
    (so a name cannot come from one module at run time and another for its types)."""
    listed = [name for names in nisse_llm._LAZY_FROM.values() for name in names]
    assert len(listed) == len(set(listed))
    assert _imports(type_checking=True) == nisse_llm._LAZY


def test_all_is_the_eager_and_the_lazy_names() -> None:
    """__all__ lists each name imported eagerly or lazily, and nothing else."""
    assert set(nisse_llm.__all__) == set(EAGER) | set(nisse_llm._LAZY)
    assert not set(EAGER) & set(nisse_llm._LAZY)


@pytest.mark.parametrize("name", sorted(nisse_llm.__all__))
def test_every_public_name_is_its_home_modules_object(name: str) -> None:
    """Each public name, eager or lazy, is the very object its home module holds under that
    name (a class or function by its own name)."""
    home = nisse_llm._LAZY.get(name) or EAGER[name]
    value = getattr(nisse_llm, name)
    assert value is getattr(importlib.import_module(home), name)
    if inspect.isclass(value) or inspect.isfunction(value):
        assert value.__name__ == name


def test_unknown_attribute_is_an_attribute_error() -> None:
    """A misspelt name raises AttributeError, not an import error."""
    with pytest.raises(AttributeError, match="no attribute 'LiteLLMClients'"):
        _ = nisse_llm.LiteLLMClients  # type: ignore[attr-defined]


def test_import_loads_neither_settings_nor_transport() -> None:
    """`import nisse_llm` leaves pydantic-settings, tomllib, httpx and the CLI unloaded."""
    code = (
        "import sys, nisse_llm\n"
        "heavy = ['pydantic_settings', 'tomllib', 'httpx', 'nisse_llm.cli.main', 'nisse_llm.config.settings']\n"
        "print(','.join(m for m in heavy if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_a_sync_program_never_loads_asyncio() -> None:
    """A sync client's first use (import, an event, a client, a failed call) leaves asyncio
    unloaded: about 9 ms of first use that only async programs need."""
    code = (
        "import sys\n"
        "from nisse_llm import LiteLLMClient, UserText, UpstreamUnavailable\n"
        "client = LiteLLMClient('http://127.0.0.1:9', 'sk-first-use-000', timeout_s=2)\n"
        "try:\n"
        "    client.complete([UserText(text='hi')], None, 'gpt-x')\n"
        "except UpstreamUnavailable:\n"
        "    pass\n"
        "print('asyncio' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
