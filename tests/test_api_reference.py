"""The API reference (docs/reference/index.md) lists every public name, and names only things
that exist; the README and the docs quote no class-like name it does not list."""

from __future__ import annotations

import builtins
import importlib
import re
import typing
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
REFERENCE = REPO / "docs" / "reference" / "index.md"
# Modules whose whole ``__all__`` must be documented, and those documented in part.
COMPLETE = ("nisse_llm", "nisse_llm.testing", "nisse_llm.task.logstore")
PARTIAL = ("nisse_llm.testing.proxy",)
# Class-like words the README and the docs quote that are not Python names of this package (Python's
# builtins and typing names, such as ValueError, None and Literal, are left out too).
NOT_NAMES = {
    "Authorization", "ContextWindowExceededError", "Decimal", "Model", "NullHandler",
    "Parameters", "Retry", "ValidationError",
}  # fmt: skip


def _reference() -> str:
    return REFERENCE.read_text(encoding="utf-8")


def _pages() -> list[Path]:
    """The README and every page of the docs site."""
    return [README, *sorted((REPO / "docs").rglob("*.md"))]


def _entries() -> dict[str, set[str]]:
    """Module -> the names its entries document (each backticked name of an entry line)."""
    found: dict[str, set[str]] = {}
    module = None
    for line in _reference().splitlines():
        if line.startswith("### "):
            named = re.findall(r"`(nisse_llm[\w.]*)`", line)
            assert named, f"API reference heading names no module: {line!r}"
            module = named[-1]
            found.setdefault(module, set())
        elif line.startswith("- ") and module is not None:
            # The names an entry documents are the backticked names before its colon.
            head = line[2:].split(": ", 1)[0]
            found[module] |= set(re.findall(r"`(\w+)", head))
    return found


def test_reference_has_a_section_per_module() -> None:
    """Each public module has its own part of the reference."""
    assert set(_entries()) == set(COMPLETE) | set(PARTIAL)


@pytest.mark.parametrize("module", COMPLETE)
def test_every_public_name_is_documented(module: str) -> None:
    """Every name in the module's ``__all__`` has an entry in the API reference."""
    names = set(importlib.import_module(module).__all__)
    missing = sorted(names - _entries()[module])
    assert not missing, (
        f"document these public names of {module} in {REFERENCE.relative_to(REPO)} "
        f"(under a heading naming `{module}`): {', '.join(missing)}"
    )


@pytest.mark.parametrize("module", COMPLETE + PARTIAL)
def test_every_documented_name_exists(module: str) -> None:
    """Every name the reference documents for a module is an attribute of that module."""
    loaded = importlib.import_module(module)
    stale = sorted(name for name in _entries()[module] if not hasattr(loaded, name))
    assert not stale, f"the API reference names what {module} lacks: {stale}"


@pytest.mark.parametrize("page", _pages(), ids=lambda p: p.relative_to(REPO).as_posix())
def test_class_names_the_docs_use_exist(page: Path) -> None:
    """Every class-like name quoted in the page's prose is a documented public name."""
    documented = set().union(*_entries().values())
    # Prose only: fenced code runs in the test suite (tests/docs), which names it exactly.
    prose = re.sub(r"^```.*?^```", "", page.read_text(encoding="utf-8"), flags=re.M | re.S)
    # A quoted capitalised name: the whole quote, or followed by a call, attribute or index.
    quoted = {
        match.group(1)
        for span in re.findall(r"`([^`\n]+)`", prose)
        if (match := re.match(r"([A-Z]\w*)(?:$|[(.\[])", span))
        and not match.group(1).isupper()  # CONSTANTS and ENV_VARS are not classes
    }
    unknown = sorted(quoted - documented - NOT_NAMES - set(dir(builtins)) - set(dir(typing)))
    assert not unknown, f"{page.name} quotes names the API reference does not document: {unknown}"


def test_the_readme_links_the_reference() -> None:
    """The README's front page points at the API reference it no longer holds."""
    assert "docs/reference/index.md" in README.read_text(encoding="utf-8")
