"""The log store never acknowledges a record it cannot read back through its path.

The file is renamed away, replaced (log rotation), deleted (``rm``, ``git clean``) or a
symlink is planted in its place, before the store opens it or while it holds it open:
every append then raises `LogFileReplaced`, writes nothing anywhere, and records already
acknowledged stay readable where they went.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from nisse_llm.events.canonical import StoredEvent, UserText
from nisse_llm.task.logstore import FileTaskStore, LogFileReplaced
from tests.reliability import figures


def _record(seq: int) -> StoredEvent:
    return StoredEvent.now(seq, UserText(text=f"record {seq}"))


def _rename_away(path: Path) -> None:
    path.rename(path.with_name("log.jsonl.1"))


def _rotate(path: Path) -> None:
    path.rename(path.with_name("log.jsonl.1"))
    path.write_bytes(b"")


def _delete(path: Path) -> None:
    path.unlink()


def _clean_and_recreate(path: Path) -> None:
    # ``git clean -fdx`` then another writer starting the log afresh.
    path.unlink()
    with FileTaskStore(path) as other:
        other.append(_record(0))


def _symlink_to_itself(path: Path) -> None:
    moved = path.with_name("real.jsonl")
    path.rename(moved)
    path.symlink_to(moved)


CHANGES: dict[str, Callable[[Path], None]] = {
    "renamed away": _rename_away,
    "rotated": _rotate,
    "deleted": _delete,
    "deleted and recreated": _clean_and_recreate,
    "replaced by a symlink to itself": _symlink_to_itself,
}


def _snapshot(directory: Path) -> dict[str, bytes]:
    return {
        p.name: p.read_bytes()
        for p in sorted(directory.iterdir())
        if p.is_file() and not p.is_symlink()
    }


@pytest.mark.parametrize("change", list(CHANGES))
def test_an_append_after_the_file_left_its_path_is_refused(tmp_path: Path, change: str) -> None:
    """Every kind of append raises LogFileReplaced naming the path; no byte is written to
    any file; the record acknowledged before is still where it went."""
    path = tmp_path / "log.jsonl"
    store = FileTaskStore(path)
    store.append(_record(0))
    CHANGES[change](path)
    before = _snapshot(tmp_path)

    with pytest.raises(LogFileReplaced, match="nothing was appended") as caught:
        store.append(_record(1))
    assert caught.value.path == path
    with pytest.raises(LogFileReplaced):
        store.append_event(UserText(text="late"))
    with pytest.raises(LogFileReplaced):
        store.repair()
    with pytest.raises(LogFileReplaced):
        _ = store.next_seq
    assert _snapshot(tmp_path) == before  # nothing acknowledged into the orphaned inode
    store.close()


def test_a_deleted_log_is_not_recreated_by_a_refused_append(tmp_path: Path) -> None:
    """After ``rm``, the refused append leaves no file behind; a new store starts afresh."""
    path = tmp_path / "log.jsonl"
    store = FileTaskStore(path)
    store.append(_record(0))
    path.unlink()
    with pytest.raises(LogFileReplaced, match="was deleted"):
        store.append(_record(1))
    assert not path.exists()
    store.close()
    with FileTaskStore(path) as fresh:
        fresh.append(_record(0))
        assert [r.seq for r in fresh.read().records] == [0]


def test_a_rotated_log_is_refused_then_reopened_where_it_now_is(tmp_path: Path) -> None:
    """After rotation the old store refuses; closing it and reopening the path writes to
    the new file, and the rotated file keeps exactly the acknowledged records."""
    path = tmp_path / "log.jsonl"
    store = FileTaskStore(path)
    store.append([_record(0), _record(1)])
    _rotate(path)
    with pytest.raises(LogFileReplaced, match="now names another file"):
        store.append(_record(2))
    store.close()
    store.append(_record(0))  # reopened on the new file
    assert [r.seq for r in FileTaskStore(path).read().records] == [0]
    assert [r.seq for r in FileTaskStore(tmp_path / "log.jsonl.1").read().records] == [0, 1]


@pytest.mark.parametrize("target_exists", [True, False])
def test_a_symlink_planted_at_the_path_is_never_followed(
    tmp_path: Path, target_exists: bool
) -> None:
    """A symlink at the path (to a file elsewhere, existing or not) is refused on open,
    on append and on read; its target is neither created nor written."""
    target = tmp_path / "elsewhere.jsonl"
    if target_exists:
        target.write_bytes(b"")
    path = tmp_path / "log.jsonl"
    path.symlink_to(target)
    store = FileTaskStore(path)
    with pytest.raises(LogFileReplaced, match="symbolic link"):
        store.append(_record(0))
    with pytest.raises(LogFileReplaced, match="symbolic link"):
        store.read()
    assert target.exists() == target_exists
    if target_exists:
        assert target.read_bytes() == b""


def test_the_store_still_appends_while_its_file_stays_put(tmp_path: Path) -> None:
    """The check costs nothing to a log left alone: 200 appends read back in order, and
    a hard link to the file (same inode) is not mistaken for a replacement."""
    path = tmp_path / "log.jsonl"
    with FileTaskStore(path) as store:
        for seq in range(100):
            store.append(_record(seq))
        os.link(path, tmp_path / "backup.jsonl")
        for seq in range(100, 200):
            store.append(_record(seq))
    assert [r.seq for r in FileTaskStore(path).read().records] == list(range(200))


@pytest.mark.parametrize(("case", "kept"), [("store_rotated", 1), ("store_deleted", 0)])
def test_a_rotated_or_deleted_store_in_its_own_process(
    tmp_path: Path, case: str, kept: int
) -> None:
    """The same refusal measured alone in a child process: LogFileReplaced at once, in
    flat memory; the rotated file keeps the one record acknowledged before (the deleted
    one took it with it) and the refused record is in no file."""
    done = subprocess.run(
        [sys.executable, "-m", "tests.reliability._hostile_token", case, "sync", str(tmp_path)],
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    report = json.loads(done.stdout)
    figures.record(
        f"log store {case}: {report['outcome']} in {report['seconds']} s, peak +{report['growth_mb']} MB"
    )
    assert report["outcome"] == "LogFileReplaced"
    assert report["records_in_files"] == kept
    assert report["seconds"] < 1.0
    assert report["growth_mb"] < 20
