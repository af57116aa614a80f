"""The committed sync modules are what ``scripts/gen_sync.py`` makes of their async sources,
and its ``--check`` fails on a stale one."""

from __future__ import annotations

from pathlib import Path

import pytest

from scripts import gen_sync as GEN

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
        assert text.startswith(f"# Generated from {source} by scripts/gen_sync.py (unasync)")


def test_the_check_names_a_stale_file_and_fails(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--check`` exits 1 and names a generated file that differs from what it would write,
    and writes nothing."""
    target = sorted(GENERATED)[0]
    stale = dict(GENERATED, **{target: GENERATED[target] + "# one line more\n"})
    monkeypatch.setattr(GEN, "generate", lambda: stale)
    before = (REPO / target).read_bytes()
    assert GEN.main(["--check"]) == 1
    assert f"{target} is stale" in capsys.readouterr().err
    assert (REPO / target).read_bytes() == before


def test_the_check_passes_on_the_committed_tree(monkeypatch: pytest.MonkeyPatch) -> None:
    """``--check`` exits 0 when every generated file is what it would write."""
    monkeypatch.setattr(GEN, "generate", lambda: GENERATED)
    assert GEN.main(["--check"]) == 0
