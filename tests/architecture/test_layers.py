"""The package's shape: layer folders, imports that point down only, no cycles, no reaching
into another module's private names, and modules a person can read in one sitting."""

from __future__ import annotations

from collections import defaultdict

import pytest

from tests.architecture.imports import PACKAGE, ROOT, Import, cycles, imports, modules

#: Low to high: a module may import its own layer or a lower one, never a higher one.
#: A layer is a folder of the package (or, at the bottom and top, a few named modules).
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "base",
        (
            "nisse_llm._version",
            "nisse_llm._closing",
            "nisse_llm._lazy",
            "nisse_llm.defaults",
            "nisse_llm._partial",
            "nisse_llm.errors",
            "nisse_llm._telemetry",
            "nisse_llm._drive",
        ),
    ),
    ("routes", ("nisse_llm.routes",)),
    ("log", ("nisse_llm.log",)),
    ("config", ("nisse_llm.config",)),
    ("wire", ("nisse_llm.wire",)),
    ("render", ("nisse_llm.render",)),
    ("stream", ("nisse_llm.stream",)),
    ("task", ("nisse_llm.task",)),
    ("mcp", ("nisse_llm.mcp",)),
    ("transport", ("nisse_llm.transport",)),
    ("telemetry", ("nisse_llm.telemetry",)),
    ("agent", ("nisse_llm.agent",)),
    ("testing", ("nisse_llm.testing",)),
    ("cli", ("nisse_llm.cli",)),
    ("facade", ("nisse_llm", "nisse_llm.__main__", "nisse_llm.clients", "nisse_llm.logstore")),
)
#: Modules a layer above may not import although they lie below it, type-only imports
#: included: (importing layer, module) -> why. The renderers read a call's rules decided
#: once (`nisse_llm.config.call_rules.CallRules`, handed in by the transport or decided by
#: the route's descriptor), never the rule tables they come from.
SEALED: dict[tuple[str, str], str] = {
    ("render", "nisse_llm.config.option_rules"): "the render reads rules decided once",
    ("render", "nisse_llm.config.model_rules"): "the render reads rules decided once",
}
LINE_LIMIT = 800
GENERATED = "do not edit"


def layer_of(module: str) -> int:
    """The rank of the layer holding ``module`` (the longest matching prefix wins)."""
    best: tuple[int, int] | None = None
    for rank, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            # The package itself names only its facade, not every module below it.
            matches = module == prefix or (prefix != PACKAGE and module.startswith(prefix + "."))
            if matches and (best is None or len(prefix) > best[1]):
                best = (rank, len(prefix))
    assert best is not None, f"{module} is in no layer: add it to LAYERS"
    return best[0]


def _shown(found: Import) -> str:
    return f"{found.importer} (line {found.line}) imports {found.target}"


def test_every_module_has_a_layer() -> None:
    for module in modules():
        layer_of(module)


def test_no_import_cycles_not_even_through_type_only_imports() -> None:
    """No two modules need each other, at run time or for their types alone."""
    edges: dict[str, set[str]] = defaultdict(set)
    for found in imports(type_only=True):
        edges[found.importer].add(found.target)
    assert cycles(edges) == []


def test_no_layer_is_imported_from_below() -> None:
    upward = [
        f"{_shown(found)}: {LAYERS[layer_of(found.importer)][0]} may not import "
        f"{LAYERS[layer_of(found.target)][0]}"
        for found in imports()
        if layer_of(found.target) > layer_of(found.importer)
    ]
    assert upward == []


def sealed(found: Import) -> str | None:
    """Why ``found`` may not be (`SEALED`), or None when it may."""
    return SEALED.get((LAYERS[layer_of(found.importer)][0], found.target))


def test_the_render_imports_no_rule_table_not_even_for_types() -> None:
    reached = [
        f"{_shown(found)}: {why}" for found in imports(type_only=True) if (why := sealed(found))
    ]
    assert reached == []


@pytest.mark.parametrize(
    ("importer", "target", "allowed"),
    [
        ("nisse_llm.render._options", "nisse_llm.config.option_rules", False),
        ("nisse_llm.render.typed", "nisse_llm.config.model_rules", False),
        ("nisse_llm.render._options", "nisse_llm.config.call_rules", True),
        ("nisse_llm.render.openai_chat", "nisse_llm.config.options", True),
        ("nisse_llm.transport.core", "nisse_llm.config.option_rules", True),
    ],
)
def test_the_sealed_rule_itself(importer: str, target: str, allowed: bool) -> None:
    found = Import(importer=importer, target=target, line=1, names=(), type_only=True)
    assert (sealed(found) is None) is allowed


def test_no_module_imports_another_modules_private_names() -> None:
    private = [
        f"{_shown(found)}: {', '.join(n for n in found.names if n.startswith('_'))}"
        for found in imports()
        if any(n.startswith("_") and not n.startswith("__") for n in found.names)
    ]
    assert private == []


def test_no_hand_written_module_is_over_800_lines() -> None:
    long = []
    for module, path in modules().items():
        text = path.read_text(encoding="utf-8")
        lines = text.count("\n")
        if lines > LINE_LIMIT and GENERATED not in "".join(text.splitlines(True)[:3]):
            long.append(f"{module}: {lines} lines")
    assert long == []


def test_the_folders_name_the_layers() -> None:
    top = sorted(p.stem for p in ROOT.glob("*.py"))
    folders = sorted(p.parent.name for p in ROOT.glob("*/__init__.py"))
    assert len(top) <= 12, top
    assert len(folders) >= 5, folders
    named = {prefix.split(".")[1] for _, prefixes in LAYERS for prefix in prefixes if "." in prefix}
    assert set(folders) <= named | {PACKAGE}, set(folders) - named


@pytest.mark.parametrize(
    ("importer", "target", "allowed"),
    [
        ("nisse_llm.render.openai_chat", "nisse_llm.config.options", True),
        ("nisse_llm.config.options", "nisse_llm.render.openai_chat", False),
        ("nisse_llm.transport.clients", "nisse_llm.transport.core", True),
        ("nisse_llm.errors", "nisse_llm", False),
    ],
)
def test_the_layer_rule_itself(importer: str, target: str, allowed: bool) -> None:
    assert (layer_of(target) <= layer_of(importer)) is allowed


def test_the_graph_sees_imports_inside_functions_and_marks_type_checking_ones() -> None:
    edges = {(f.importer, f.target) for f in imports()}
    typed = {(f.importer, f.target) for f in imports(type_only=True) if f.type_only}
    # The clients' base imports the prompt cache inside a function (to load it on first
    # use) and the settings only for types.
    assert ("nisse_llm.transport._client_base", "nisse_llm.render._cache") in edges
    assert ("nisse_llm.transport._client_base", "nisse_llm.config.settings") not in edges
    assert ("nisse_llm.transport._client_base", "nisse_llm.config.settings") in typed


def test_the_readme_draws_every_layer_in_order() -> None:
    readme = (ROOT.parent / "README.md").read_text(encoding="utf-8")
    picture = readme.split("## Architecture", 1)[1].split("```text\n", 1)[1].split("```", 1)[0]
    drawn = [line.split()[0].rstrip("/") for line in picture.splitlines() if line.strip()]
    folders = [
        prefix.split(".")[1]
        for _, prefixes in LAYERS
        for prefix in prefixes
        if prefix.count(".") == 1 and (ROOT / prefix.split(".")[1]).is_dir()
    ]
    # The picture runs top to bottom, the layers bottom to top.
    assert [name for name in drawn if name in folders] == folders[::-1]
