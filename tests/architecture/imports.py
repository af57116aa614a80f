"""nisse_llm's import graph read from its source: every import at any depth (inside
functions too), those under ``if TYPE_CHECKING:`` marked as type-only."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

PACKAGE = "nisse_llm"
ROOT = Path(__file__).resolve().parents[2] / PACKAGE


@dataclass(frozen=True)
class Import:
    """``importer`` imports ``target`` (a module of the package) at ``line``; ``names`` are
    the names it takes from it (empty for ``import x``)."""

    importer: str
    target: str
    line: int
    names: tuple[str, ...]
    #: Under ``if TYPE_CHECKING:``: read by the type checker, never run.
    type_only: bool = False


def modules() -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its own name)."""
    found: dict[str, Path] = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = path.relative_to(ROOT.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _statements(tree: ast.AST) -> list[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Every import statement, and whether it sits under ``if TYPE_CHECKING:``."""
    found: list[tuple[ast.Import | ast.ImportFrom, bool]] = []

    def visit(node: ast.AST, type_only: bool) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.body:
                visit(child, True)
            for child in node.orelse:
                visit(child, type_only)
            return
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append((node, type_only))
        for child in ast.iter_child_nodes(node):
            visit(child, type_only)

    visit(tree, False)
    return found


def imports(*, type_only: bool = False) -> list[Import]:
    """Every import of one of the package's modules by another (with ``type_only``, those
    under ``if TYPE_CHECKING:`` too, marked so). ``from pkg import sub``
    of a submodule counts as importing ``pkg.sub``; a package's ``__init__`` runs before
    any of its children, so importing a child does not count as importing its parents."""
    known = modules()
    found: list[Import] = []
    for name, path in known.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        is_package = path.name == "__init__.py"
        for node, typing_only in _statements(tree):
            if typing_only and not type_only:
                continue
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == PACKAGE:
                        found.append(Import(name, alias.name, node.lineno, (), typing_only))
                continue
            if node.level:
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[: len(base) - node.level + 1]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            if module.split(".")[0] != PACKAGE:
                continue
            taken = tuple(alias.name for alias in node.names)
            submodules = [f"{module}.{n}" for n in taken if f"{module}.{n}" in known]
            found.extend(Import(name, sub, node.lineno, (), typing_only) for sub in submodules)
            rest = tuple(n for n in taken if f"{module}.{n}" not in known)
            if rest:
                found.append(Import(name, module, node.lineno, rest, typing_only))
    return [i for i in found if i.target in known and i.target != i.importer]


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(edges.get(node, ())):
            if other not in index:
                connect(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            connect(node)
    return found
