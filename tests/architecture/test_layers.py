"""The package's shape: layer folders, imports that point down only (type-only imports and
``"module:name"`` descriptor strings too), no cycles, no reaching into another module's
private names, and modules a person can read in one sitting."""

from __future__ import annotations

import functools
from collections import defaultdict
from pathlib import Path

import pytest

from tests.architecture.imports import (
    PACKAGE,
    ROOT,
    Import,
    cycles,
    descriptor_edges,
    imports,
    modules,
)

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
            "nisse_llm._drive",
        ),
    ),
    ("routes", ("nisse_llm.routes",)),
    ("events", ("nisse_llm.events",)),
    ("config", ("nisse_llm.config",)),
    ("wire", ("nisse_llm.wire",)),
    ("render", ("nisse_llm.render",)),
    ("stream", ("nisse_llm.stream",)),
    ("task", ("nisse_llm.task",)),
    # The tracer's hook: its protocols name config's options and the log's events, and the
    # toolbox, the transport and the agent call it.
    ("tracing", ("nisse_llm._telemetry",)),
    ("mcp", ("nisse_llm.mcp",)),
    # The toolbox runs the model's tool calls and starts and stops MCP servers.
    ("tools", ("nisse_llm.tools",)),
    ("transport", ("nisse_llm.transport",)),
    ("telemetry", ("nisse_llm.telemetry",)),
    ("agent", ("nisse_llm.agent",)),
    ("testing", ("nisse_llm.testing",)),
    ("cli", ("nisse_llm.cli",)),
    # The package's face, and the former homes of moved modules (each warns, naming the new).
    (
        "facade",
        (
            "nisse_llm",
            "nisse_llm.__main__",
            "nisse_llm.clients",
            "nisse_llm.logstore",
            "nisse_llm.log",
            "nisse_llm.log.canonical",
            "nisse_llm.log.images",
            "nisse_llm.log.tool_changes",
            "nisse_llm.log.tool_text",
            "nisse_llm.log.toolbox",
            "nisse_llm.log.tools",
        ),
    ),
)
#: Modules a layer above may not import although they lie below it, type-only imports
#: included: (importing layer, module) -> why. The renderers read a call's rules decided
#: once (`nisse_llm.config.call_rules.CallRules`, handed in by the transport or decided by
#: the route's descriptor), never the rule tables they come from.
SEALED: dict[tuple[str, str], str] = {
    ("render", "nisse_llm.config.option_rules"): "the render reads rules decided once",
    ("render", "nisse_llm.config.model_rules"): "the render reads rules decided once",
}
#: Edges the checker sees that point the wrong way and are not fixed yet, each a known
#: finding: (importing layer, how it reaches) -> the finding. Each must still be found
#: (`test_every_known_finding_is_still_found`), so a fixed one leaves this table.
KNOWN_UPWARD: dict[tuple[str, str], str] = {
    # Known finding: the route table sits at the bottom so config can route by it, and its
    # descriptors (routes/openai_chat.py, anthropic_messages.py, openai_responses.py) name
    # each route's request model, renderer, accumulator, clients and testing kit in the
    # layers above by string; routes/descriptor.py loads the renderer and client classes
    # itself (`new_renderer`, `client_class`). Routes as plugins ends it.
    ("routes", "descriptor"): "the route table names its parts above it",
    ("routes", "load"): "the route table loads its renderer and clients itself",
}
#: Sealed modules reached all the same, each a known finding: (importer, module) -> finding.
KNOWN_SEALED: dict[tuple[str, str], str] = {
    # Known finding: render/_base.py (`_rules`, ``self.route.decide(...)``) loads the
    # route's decider, ``"nisse_llm.config.option_rules:decide"`` (routes/descriptor.py),
    # when a standalone render is given no rules: the render reaches the rule table it may
    # not import. Ends when the transport alone decides (the one call object).
    ("nisse_llm.render._base", "nisse_llm.config.option_rules"): "a standalone render decides",
}
#: Cycles closed by a descriptor field loaded at run time, each a known finding.
KNOWN_CYCLES: dict[tuple[str, ...], str] = {
    # Known finding: `select_client` (transport/clients.py) loads the Responses clients by
    # the route's ``clients`` strings, and transport/responses_client.py imports the
    # route clients' bases from transport/clients.py.
    ("nisse_llm.transport.clients", "nisse_llm.transport.responses_client"): "select_client",
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
    how = {"import": "imports", "descriptor": "names", "load": "loads"}[found.via]
    return f"{found.importer} (line {found.line}) {how} {found.target}"


@functools.cache
def edges(root: Path = ROOT) -> list[Import]:
    """Every edge of the package in ``root``: its imports, type-only ones included, and the
    edges its descriptor strings make."""
    return imports(type_only=True, root=root) + descriptor_edges(root)


def layer_name(module: str) -> str:
    return LAYERS[layer_of(module)][0]


def upward(found: list[Import]) -> list[str]:
    """The edges of ``found`` that point up a layer and are no known finding."""
    return [
        f"{_shown(f)}: {layer_name(f.importer)} may not reach {layer_name(f.target)}"
        for f in found
        if layer_of(f.target) > layer_of(f.importer)
        and (layer_name(f.importer), f.via) not in KNOWN_UPWARD
    ]


def test_every_module_has_a_layer() -> None:
    for module in modules():
        layer_of(module)


def _graph(found: list[Import]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = defaultdict(set)
    for one in found:
        graph[one.importer].add(one.target)
    return graph


def test_no_import_cycles_not_even_through_type_only_imports() -> None:
    """No two modules need each other, at run time or for their types alone."""
    assert cycles(_graph(imports(type_only=True))) == []


def test_no_cycle_closes_through_a_loaded_descriptor_field() -> None:
    """No two modules need each other through a descriptor field one loads (a string only
    spelled is a name, not a need; the route table's own loads are a known finding), but
    the known findings."""
    found = [
        f
        for f in edges()
        if f.via != "descriptor" and (layer_name(f.importer), f.via) not in KNOWN_UPWARD
    ]
    assert {tuple(c) for c in cycles(_graph(found))} == set(KNOWN_CYCLES)


def test_no_layer_is_reached_from_below() -> None:
    """No module imports a layer above its own, not for types alone, and no descriptor
    string names one, nor is one loaded, but the known findings."""
    assert upward(edges()) == []


def test_every_known_finding_is_still_found() -> None:
    """Each allowed finding still matches an edge: a fixed one must leave the table."""
    found = edges()
    seen = {
        (layer_name(f.importer), f.via) for f in found if layer_of(f.target) > layer_of(f.importer)
    }
    assert set(KNOWN_UPWARD) <= seen
    assert set(KNOWN_SEALED) <= {(f.importer, f.target) for f in found}


def _plant(tmp: Path, files: dict[str, str]) -> Path:
    """A small package named like this one, with ``files`` (path -> source), in ``tmp``."""
    root = tmp / PACKAGE
    for path in {*files, "__init__.py", "wire/__init__.py", "transport/__init__.py"}:
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(files.get(path, ""), encoding="utf-8")
    return root


def test_the_layer_test_fails_on_an_upward_descriptor_string(tmp_path: Path) -> None:
    """A ``"module:name"`` string in a low layer naming a higher one is an upward edge."""
    root = _plant(
        tmp_path,
        {
            "transport/client.py": "class Client: ...\n",
            "wire/spec.py": 'CLIENT = "nisse_llm.transport.client:Client"\n',
        },
    )
    assert upward(edges(root)) == [
        "nisse_llm.wire.spec (line 1) names nisse_llm.transport.client: "
        "wire may not reach transport"
    ]


def test_the_layer_test_fails_on_a_loaded_descriptor_field(tmp_path: Path) -> None:
    """Loading a descriptor field (a method that loads it, or ``load(x.field)``) reaches
    every module its strings name, from the module that loads it."""
    root = _plant(
        tmp_path,
        {
            "transport/client.py": "class Client: ...\n",
            "transport/table.py": "ROW = Row(client='nisse_llm.transport.client:Client')\n",
            "wire/use.py": "def make(row):\n    return load(row.client)\n",
        },
    )
    assert upward(edges(root)) == [
        "nisse_llm.wire.use (line 2) loads nisse_llm.transport.client: wire may not reach transport"
    ]


def test_the_layer_test_fails_on_an_upward_type_only_import(tmp_path: Path) -> None:
    """An import under ``if TYPE_CHECKING:`` is checked for direction like any other."""
    root = _plant(
        tmp_path,
        {
            "transport/client.py": "class Client: ...\n",
            "wire/spec.py": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n"
                "    from nisse_llm.transport.client import Client\n"
            ),
        },
    )
    assert upward(edges(root)) == [
        "nisse_llm.wire.spec (line 3) imports nisse_llm.transport.client: "
        "wire may not reach transport"
    ]


def sealed(found: Import) -> str | None:
    """Why ``found`` may not be (`SEALED`), or None when it may."""
    return SEALED.get((LAYERS[layer_of(found.importer)][0], found.target))


def test_the_render_reaches_no_rule_table_not_even_for_types() -> None:
    """No render module imports a rule table, for types either, nor loads one through a
    descriptor, but the known findings."""
    reached = [
        f"{_shown(found)}: {why}"
        for found in edges()
        if (why := sealed(found)) and (found.importer, found.target) not in KNOWN_SEALED
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
        for layer, prefixes in LAYERS
        if layer != "facade"  # the package's face and its former homes: not drawn
        for prefix in prefixes
        if prefix.count(".") == 1 and (ROOT / prefix.split(".")[1]).is_dir()
    ]
    # The picture runs top to bottom, the layers bottom to top.
    assert [name for name in drawn if name in folders] == folders[::-1]


def test_the_tests_mirror_the_package() -> None:
    """Each package folder of nisse_llm has its tests in the folder of the same name (a
    former home, which only warns, has none)."""
    packages = {
        path.name
        for path in ROOT.iterdir()
        if (path / "__init__.py").is_file() and not path.name.startswith("_") and path.name != "log"
    }
    tests = ROOT.parent / "tests"
    assert sorted(name for name in packages if not (tests / name / "__init__.py").is_file()) == []
