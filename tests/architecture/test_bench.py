"""The benchmark's shape: no import cycles among its modules, and no reaching into
nisse_llm's private names (it measures what users can call)."""

from __future__ import annotations

from collections import defaultdict

from tests.architecture.imports import BENCH, PACKAGE, ROOT, Import, cycles, imports


def test_bench_has_no_import_cycles() -> None:
    """No two bench modules need each other, at run time or for their types alone."""
    graph: dict[str, set[str]] = defaultdict(set)
    for found in imports(type_only=True, root=BENCH):
        graph[found.importer].add(found.target)
    assert cycles(graph) == []


#: Private names bench still takes, each a known finding: (importer, module) -> finding.
KNOWN_PRIVATE: dict[tuple[str, str], str] = {
    # Known finding: bench/images.py counts image encodings by replacing
    # render/_images.py's `_anthropic_json` and `_chat_json`; it goes once the render
    # offers a public encode counter (render/ is being split apart).
    ("bench.images", "nisse_llm.render._images"): "counts encodings by patching them",
}


def _private(found: Import) -> list[str]:
    """The private names ``found`` takes: names starting with ``_``, or a module whose own
    name does (``from nisse_llm.render import _images``; the twin ``_async``/``_sync``
    packages are the generated code's seam, their modules' own names are public)."""
    names = [n for n in found.names if n.startswith("_") and not n.startswith("__")]
    own = found.target.rsplit(".", 1)[-1]
    if found.target.startswith(PACKAGE + ".") and own.startswith("_") and not own.startswith("__"):
        names.append(found.target)
    return names


def test_bench_imports_no_private_name() -> None:
    """No bench module takes a private name from nisse_llm or from another bench module,
    but the known findings."""
    private = [
        f"{found.importer} (line {found.line}) imports {found.target}: {', '.join(names)}"
        for found in imports(type_only=True, root=BENCH, reach=(ROOT,))
        if (names := _private(found)) and (found.importer, found.target) not in KNOWN_PRIVATE
    ]
    assert private == []


def test_every_known_bench_finding_is_still_found() -> None:
    """Each allowed private import is still made: a fixed one must leave the table."""
    found = imports(type_only=True, root=BENCH, reach=(ROOT,))
    assert set(KNOWN_PRIVATE) <= {(f.importer, f.target) for f in found if _private(f)}
