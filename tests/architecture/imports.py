"""nisse_llm's import graph read from its source: every import at any depth (inside
functions too), those under ``if TYPE_CHECKING:`` marked as type-only, and the modules
named by ``"package.module:name"`` strings, which are imported later by whoever loads them.

A descriptor string gives two edges: the module that spells it names the target
(``via="descriptor"``), and every module that loads the field holding it (a call of the
method that loads it, such as ``route.decide(...)``, or ``load(route.kit)``) reaches the
target at run time (``via="load"``). The functions take a package folder, so the checks
run on this package, on bench/, and on a small package a test plants in a temporary folder.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

PACKAGE = "nisse_llm"
ROOT = Path(__file__).resolve().parents[2] / PACKAGE
BENCH = ROOT.parent / "bench"
#: ``"package.module:name"``: a module and a name in it, loaded on first use.
DESCRIPTOR = re.compile(r"([A-Za-z_]\w*(?:\.\w+)*):(\w+)")


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
    #: An import statement, a descriptor string spelled here, or a descriptor field loaded here.
    via: Literal["import", "descriptor", "load"] = "import"


def modules(root: Path = ROOT) -> dict[str, Path]:
    """Every module of the package in ``root`` by dotted name (a package by its own name)."""
    found: dict[str, Path] = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
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


def imports(
    *, type_only: bool = False, root: Path = ROOT, reach: Iterable[Path] = ()
) -> list[Import]:
    """Every import of one of the package's modules (or of the packages in ``reach``) by
    one of the package's modules (with ``type_only``, those under ``if TYPE_CHECKING:``
    too, marked so). ``from pkg import sub`` of a submodule counts as importing
    ``pkg.sub``; a package's ``__init__`` runs before any of its children, so importing a
    child does not count as importing its parents."""
    own = modules(root)
    known = dict(own)
    for other in reach:
        known.update(modules(other))
    packages = {name.split(".")[0] for name in known}
    found: list[Import] = []
    for name, path in own.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        is_package = path.name == "__init__.py"
        for node, typing_only in _statements(tree):
            if typing_only and not type_only:
                continue
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] in packages:
                        found.append(Import(name, alias.name, node.lineno, (), typing_only))
                continue
            if node.level:
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[: len(base) - node.level + 1]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            if module.split(".")[0] not in packages:
                continue
            taken = tuple(alias.name for alias in node.names)
            submodules = [f"{module}.{n}" for n in taken if f"{module}.{n}" in known]
            found.extend(Import(name, sub, node.lineno, (), typing_only) for sub in submodules)
            rest = tuple(n for n in taken if f"{module}.{n}" not in known)
            if rest:
                found.append(Import(name, module, node.lineno, rest, typing_only))
    return [i for i in found if i.target in known and i.target != i.importer]


def _descriptor(node: ast.AST, known: dict[str, Path]) -> tuple[str, str] | None:
    """(module, name) when ``node`` is a string naming a name in one of ``known``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        spelled = DESCRIPTOR.fullmatch(node.value)
        if spelled and spelled[1] in known:
            return spelled[1], spelled[2]
    return None


def _fields(trees: dict[str, ast.Module], known: dict[str, Path]) -> dict[str, set[str]]:
    """Descriptor field -> the modules its strings name, read from keyword arguments
    (``renderer="m:Name"``, a tuple of strings too) and from class fields' defaults."""
    fields: dict[str, set[str]] = {}
    for tree in trees.values():
        for node in ast.walk(tree):
            pairs: list[tuple[str, ast.expr]] = []
            if isinstance(node, ast.Call):
                pairs = [(k.arg, k.value) for k in node.keywords if k.arg]
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                pairs = [(node.target.id, node.value)] if node.value else []
            for field, value in pairs:
                values = value.elts if isinstance(value, ast.Tuple) else [value]
                for one in values:
                    if named := _descriptor(one, known):
                        fields.setdefault(field, set()).add(named[0])
    return fields


def _loaded(node: ast.AST, fields: dict[str, set[str]]) -> set[str]:
    """The descriptor fields ``node`` loads: ``load(x.field)`` (the field anywhere in the
    arguments) or ``x.field.split(":")`` (the module and the name, to import)."""
    if not isinstance(node, ast.Call):
        return set()
    func = node.func
    if (isinstance(func, ast.Name) and func.id == "load") or (
        isinstance(func, ast.Attribute) and func.attr == "load"
    ):
        return {
            inner.attr
            for arg in node.args
            for inner in ast.walk(arg)
            if isinstance(inner, ast.Attribute) and inner.attr in fields
        }
    if (
        isinstance(func, ast.Attribute)
        and func.attr == "split"
        and isinstance(func.value, ast.Attribute)
        and func.value.attr in fields
        and [a.value for a in node.args if isinstance(a, ast.Constant)] == [":"]
    ):
        return {func.value.attr}
    return set()


def _loaders(trees: dict[str, ast.Module], fields: dict[str, set[str]]) -> dict[str, set[str]]:
    """Method -> the descriptor fields it loads (``decide`` loads ``self.decider``)."""
    loaders: dict[str, set[str]] = {}
    for tree in trees.values():
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef):
                for inner in ast.walk(node):
                    loaded = _loaded(inner, fields)
                    if loaded:
                        loaders.setdefault(node.name, set()).update(loaded)
    return loaders


def descriptor_edges(root: Path = ROOT) -> list[Import]:
    """The edges descriptor strings make in the package in ``root``: each string names its
    module from the module spelling it (``via="descriptor"``), and each module loading a
    field holding such strings reaches every module they name (``via="load"``): it calls a
    method that loads the field, or reads the field itself (``load(route.kit)``)."""
    known = modules(root)
    trees = {n: ast.parse(p.read_text(encoding="utf-8"), str(p)) for n, p in known.items()}
    fields = _fields(trees, known)
    loaders = _loaders(trees, fields)
    found: list[Import] = []
    for name, tree in trees.items():
        spelled: set[str] = set()
        for node in ast.walk(tree):
            if named := _descriptor(node, known):
                found.append(Import(name, named[0], node.lineno, (named[1],), via="descriptor"))
                spelled.update(f for f, targets in fields.items() if named[0] in targets)
            loaded = _loaded(node, fields)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                loaded |= loaders.get(node.func.attr, set())
            for field in sorted(loaded - spelled):
                found.extend(
                    Import(name, target, node.lineno, (), via="load")
                    for target in sorted(fields[field])
                )
    return [i for i in found if i.target != i.importer]


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
