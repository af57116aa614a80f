"""``nisse-llm task prune --finished-before DATE [--archive DIR]``: finished tasks exported,
then deleted (records and lease row); an unfinished or open task is kept and named."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from nisse_llm.events.canonical import AssistantText, UserText
from nisse_llm.task.logstore import FileTaskStore, TaskStore
from nisse_llm.task.postgres import PostgresTaskStore
from nisse_llm.testing.postgres import LocalPostgres
from tests.cli.test_task_cli import _cli
from tests.task.helpers import make_pin


def _finished(store: TaskStore) -> None:
    store.begin(make_pin())
    store.append_events([UserText(text="go"), AssistantText(text="done", model="m")])


@pytest.fixture(params=("file", "postgres"))
def where(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A store holding nothing else: a folder, or a database of its own."""
    if request.param == "file":
        return str(tmp_path / "tasks")
    server: LocalPostgres = request.getfixturevalue("postgres")
    return server.database(f"prune_{tmp_path.name}".lower()[:40])


def _store(where: str, key: str, tmp_path: Path) -> TaskStore:

    if where.startswith("postgresql://"):
        return PostgresTaskStore(where, key)
    Path(where).mkdir(exist_ok=True)
    return FileTaskStore(Path(where) / f"{key}.jsonl")


def test_prune_archives_then_deletes_finished_tasks_and_keeps_the_others(
    where: str, tmp_path: Path
) -> None:
    """Of a finished, an unfinished and an open finished task, only the first goes: its
    export is in the archive byte for byte, and the store no longer lists it."""
    stores = {key: _store(where, key, tmp_path) for key in ("done", "running", "open")}
    _finished(stores["done"])
    stores["running"].begin(make_pin())
    stores["running"].append_event(UserText(text="still going"))
    _finished(stores["open"])
    exported = stores["done"].export_lines()
    for key in ("done", "running"):
        stores[key].close()
    lease = stores["open"].lease()  # a driver holds it
    tomorrow = (datetime.now(UTC) + timedelta(days=1)).date().isoformat()
    archive = tmp_path / "archive"

    done = _cli(
        "prune",
        "--finished-before",
        tomorrow,
        "--archive",
        str(archive),
        "--store",
        where,
        status=1,
    )
    out, err = done.stdout.decode(), done.stderr.decode()
    assert "pruned done: 3 records" in out
    assert "1 task(s) pruned, 2 kept" in out
    assert "kept running: unfinished" in err
    assert "kept open: open" in err
    assert (archive / "done.jsonl").read_bytes() == b"".join(line + b"\n" for line in exported)
    listed = _cli("list", "--store", where).stdout.decode().splitlines()[2:]
    assert sorted(row.split()[0] for row in listed) == ["open", "running"]
    if lease is not None:
        lease.close()
    stores["open"].close()

    yesterday = (datetime.now(UTC) - timedelta(days=1)).date().isoformat()
    again = _cli("prune", "--finished-before", yesterday, "--store", where)
    assert "0 task(s) pruned, 0 kept" in again.stdout.decode()
