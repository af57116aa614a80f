"""Where the package's parts meet: a route is named only by its own modules and the route
table, and no module reaches into an underscore attribute of an object another module
defines (objects meet through constructors and public methods)."""

from __future__ import annotations

import ast
from pathlib import Path

from nisse_llm.routes import ROUTE_TABLE
from tests.architecture.imports import PACKAGE, modules

#: The route table: the one module besides a route's own that may spell its name.
TABLE = "nisse_llm.routes.table"
#: A namedtuple's public methods carry an underscore so as not to clash with its fields.
NAMEDTUPLE_API = frozenset({"_replace", "_asdict", "_fields", "_make"})
#: Reaches the package cannot avoid, each with its reason: (module, attribute) -> why.
UNAVOIDABLE = {
    ("nisse_llm.transport._limits", "_network_backend"): (
        "httpx gives no way to hand httpcore's pool a network backend (the deadline's)"
    ),
}


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), str(path))


def route_literals(module: str, tree: ast.AST) -> list[str]:
    """The route names ``module`` spells as string literals where it may not: outside the
    route's own modules (its descriptor's ``modules``) and the table."""
    found = []
    for node in ast.walk(tree):
        named = node.value if isinstance(node, ast.Constant) else None
        if not isinstance(named, str) or named not in ROUTE_TABLE or module == TABLE:
            continue
        if module not in ROUTE_TABLE[named].modules:
            found.append(f"{module} (line {node.lineno}): {named!r}")
    return found


def _defined(tree: ast.AST) -> set[str]:
    """The underscore attributes a module defines: on ``self`` or any object it assigns,
    in a class body (fields, methods, ``__slots__``)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                    names.add(item.name)
                elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    names.add(item.target.id)
                elif isinstance(item, ast.Assign):
                    for target in item.targets:
                        if isinstance(target, ast.Name):
                            names.add(target.id)
                        if isinstance(target, ast.Name) and target.id == "__slots__":
                            slots = item.value
                            if isinstance(slots, ast.Tuple | ast.List):
                                names.update(
                                    e.value for e in slots.elts if isinstance(e, ast.Constant)
                                )
    return {name for name in names if name.startswith("_")}


def _foreign_modules(tree: ast.AST) -> set[str]:
    """Names bound to modules from outside the package (``import argparse``)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] != PACKAGE:
                    names.add(alias.asname or alias.name.split(".")[0])
    return names


def private_reaches(module: str, tree: ast.AST) -> list[str]:
    """Where ``module`` touches an underscore attribute of an object it does not define
    (``self``, ``cls`` and ``super()`` are its own)."""
    own = _defined(tree)
    foreign = _foreign_modules(tree)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute):
            continue
        name = node.attr
        if not name.startswith("_") or name.startswith("__") or name in own:
            continue
        owner = node.value
        if isinstance(owner, ast.Name) and owner.id in {"self", "cls", *foreign}:
            continue
        if isinstance(owner, ast.Call) and ast.unparse(owner.func) == "super":
            continue
        if name in NAMEDTUPLE_API or (module, name) in UNAVOIDABLE:
            continue
        found.append(f"{module} (line {node.lineno}): {ast.unparse(node)}")
    return found


def test_a_route_is_named_only_by_its_own_modules_and_the_table() -> None:
    """No module outside a route's own and the table spells the route's name."""
    found = [hit for name, path in modules().items() for hit in route_literals(name, _tree(path))]
    assert found == []


def test_no_module_touches_an_underscore_attribute_of_another_modules_object() -> None:
    """Objects meet through constructors and public methods, never another's privates."""
    found = [hit for name, path in modules().items() for hit in private_reaches(name, _tree(path))]
    assert found == []


def test_the_rules_catch_what_they_forbid() -> None:
    """A route name spelled in a router, and a router writing a client's core, are caught;
    the same in the route's own module, or on ``self``, are not."""
    spelled = ast.parse('if route == "openai_responses":\n    pass\n')
    assert route_literals("nisse_llm.transport._router_base", spelled) != []
    assert route_literals("nisse_llm.render.openai_responses", spelled) == []
    assert route_literals("nisse_llm.render.openai_chat", spelled) != []
    reach = ast.parse("client._core.on_call = observe\n")
    assert private_reaches("nisse_llm.transport._router_base", reach) == [
        "nisse_llm.transport._router_base (line 1): client._core"
    ]
    assert private_reaches("m", ast.parse("self._core.on_call = observe\n")) == []
