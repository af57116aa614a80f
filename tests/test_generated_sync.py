"""The committed sync modules are what ``tests/gen_sync.py`` makes of their async sources."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import gen_sync as GEN

REPO = Path(__file__).resolve().parents[1]

GENERATED = GEN.generate()


@pytest.mark.parametrize("target", sorted(GENERATED))
def test_the_committed_sync_module_is_generated_from_its_source(target: str) -> None:
    committed = REPO / target
    assert committed.exists(), f"{target} is missing: run `{GEN.COMMAND}`"
    assert committed.read_text(encoding="utf-8") == GENERATED[target], (
        f"{target} is stale (its async source changed): run `{GEN.COMMAND}` and commit it"
    )


def test_each_generated_module_says_where_it_comes_from() -> None:
    for target, text in GENERATED.items():
        source = target.replace("/_sync/", "/_async/")
        assert text.startswith(f"# Generated from {source} by tests/gen_sync.py (unasync)")
