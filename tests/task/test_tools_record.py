"""The ``tools`` record: the specs a task offered, stored and read back by both stores, the
last one given to a resumed task; a task that never recorded any reads as before.

Tests taking ``place`` run on both stores (a task file and PostgreSQL)."""

from __future__ import annotations

import json

from nisse_llm import ToolSpec, UserText
from nisse_llm.task.records import StoredTools, ToolsRecord
from tests.task.helpers import BASE_URL, TOKEN, make_pin
from tests.task.stores import Place

READ = ToolSpec(
    name="read_file",
    description="Read a file.",
    parameters={"type": "object", "properties": {"path": {"type": "string"}}},
)
WRITE = ToolSpec(name="write_file", description="Write a file.")


def test_tools_records_are_stored_and_the_last_is_resumed(place: Place) -> None:
    """Each tools record is one line holding the specs' JSON; resume gives the last one."""
    store = place.open().begin(make_pin())
    store.append_event(UserText(text="Fix it."))
    first = store.append_tools(ToolsRecord(specs=[READ, WRITE]))
    store.append_tools(ToolsRecord(specs=[READ]))

    line = json.loads(place.lines()[first.seq])
    assert line["tools"] == {"specs": [READ.model_dump(mode="json"), WRITE.model_dump(mode="json")]}
    records = place.open().read().records
    assert [r.tools.specs for r in records if isinstance(r, StoredTools)] == [[READ, WRITE], [READ]]
    resumed = place.open().resume(TOKEN, base_url=BASE_URL)
    assert resumed.offered_tools == [READ]
    assert resumed.events == [UserText(text="Fix it.")]


def test_a_task_without_tools_records_resumes_knowing_none(place: Place) -> None:
    """A task written before tools records (or that never offered one) resumes as before."""
    store = place.open().begin(make_pin())
    store.append_event(UserText(text="Fix it."))
    resumed = place.open().resume(TOKEN, base_url=BASE_URL)
    assert resumed.offered_tools is None
    assert resumed.events == [UserText(text="Fix it.")]
