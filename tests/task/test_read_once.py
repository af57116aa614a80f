"""Opening a task reads its records once: the pin check, the prompt, the resume and the
first call id check share what the store read, and the store's own appends extend it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from nisse_llm import FileTaskStore, Task, ToolCall, ToolResult, UserText
from nisse_llm.errors import LogDuplicateId
from nisse_llm.task._filelog import FileLog
from nisse_llm.task.postgres import PostgresTaskStore
from nisse_llm.testing.postgres import LocalPostgres
from tests.task.helpers import make_pin
from tests.task.stores import Place

RECORDS = 200


@pytest.fixture(params=("file", "postgres"))
def place(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Place]:
    server: LocalPostgres | None = (
        request.getfixturevalue("postgres") if request.param == "postgres" else None
    )
    found = Place(request.param, tmp_path, server)
    yield found
    found.close()


def _count_full_reads(monkeypatch: pytest.MonkeyPatch, counts: list[int]) -> None:
    """Count every fetch of a task's whole record set, in either store."""

    def counted(original):  # type: ignore[no-untyped-def]
        def run(*args, **kwargs):  # type: ignore[no-untyped-def]
            counts.append(1)
            return original(*args, **kwargs)

        return run

    monkeypatch.setattr(FileLog, "read", counted(FileLog.read))
    monkeypatch.setattr(FileLog, "locked_read", counted(FileLog.locked_read))
    monkeypatch.setattr(PostgresTaskStore, "_lines", counted(PostgresTaskStore._lines))


def test_opening_a_task_reads_its_records_once(
    place: Place, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`Task.open` of a task of 200 records in PostgreSQL, then a tool call and its result
    appended, fetch the records once (it was four times); a task file's lock-free `read`
    (the prompt check) is its own second read."""
    store = place.open().begin(make_pin())
    store.append_events([UserText(text=str(n)) for n in range(RECORDS)])
    store.close()
    counts: list[int] = []
    _count_full_reads(monkeypatch, counts)
    opened = place.open()
    with Task.open(opened, make_pin(), prompt="written only when the task begins") as task:
        opened.append_event(ToolCall(call_id="c1", tool="t", arguments={}))
        opened.append_event(ToolResult(call_id="c1", output="ok"))
        reads = len(counts)
        history = task.history
    assert reads == (1 if place.kind == "postgres" else 2)
    assert [e.text for e in history if isinstance(e, UserText)] == [str(n) for n in range(RECORDS)]
    assert isinstance(history[-1], ToolResult)


def test_a_write_by_another_store_object_is_read_again(tmp_path: Path) -> None:
    """What a file store keeps is dropped when another writer appended meanwhile: its next
    id check sees the other's call id (a PostgreSQL task has one writer, the lease's)."""
    first = FileTaskStore(tmp_path / "t.jsonl").begin(make_pin())
    first.append_event(UserText(text="kept"))
    FileTaskStore(tmp_path / "t.jsonl").append_event(ToolCall(call_id="c1", tool="t", arguments={}))
    with pytest.raises(LogDuplicateId, match="already in the log"):
        first.append_event(ToolCall(call_id="c1", tool="t", arguments={}))
    assert len(first.read().records) == 3
