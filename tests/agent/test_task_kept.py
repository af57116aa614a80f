"""A task keeps its records as it appends them: ``events``, ``history`` and ``usage`` read
no store after the opening, and stay equal to what a fresh reopening reads."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from nisse_llm import Compaction, CompactionPolicy, RoleRouter, Task
from nisse_llm.task.logstore import FileTaskStore, LogRead
from nisse_llm.task.postgres import PostgresTaskStore
from nisse_llm.testing import Reply, ScriptedRouter, reply
from tests.agent._driver import toolbox
from tests.agent._killed_loop import FINAL, ROLE, PointedTransport, Points
from tests.agent._killed_loop import QUESTION as LOOP_QUESTION
from tests.agent._killed_loop import tools as loop_tools
from tests.agent.helpers import QUESTION, SideEffects, priced, two_steps
from tests.task.helpers import make_pin


class CountingFileStore(FileTaskStore):
    """A real file store that counts its reads of the records."""

    reads = 0

    def read(self) -> LogRead:
        self.reads += 1
        return super().read()

    def _x_read(self) -> LogRead:
        self.reads += 1
        return super()._x_read()


class CountingPostgresStore(PostgresTaskStore):
    """A real PostgreSQL store that counts its reads of the records."""

    reads = 0

    def read(self) -> LogRead:
        self.reads += 1
        return super().read()

    def _x_read(self) -> LogRead:
        self.reads += 1
        return super()._x_read()


@pytest.fixture(params=("file", "postgres"))
def make(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], Any]]:
    """New counting stores on one new task, in a file or in the session's PostgreSQL."""
    made: list[Any] = []

    def new() -> Any:
        if request.param == "file":
            store: Any = CountingFileStore(tmp_path / "task.jsonl")
        else:
            server = request.getfixturevalue("postgres")
            store = CountingPostgresStore(server.url, f"kept-{tmp_path.name}")
        made.append(store)
        return store

    yield new
    for store in made:
        store.close()


def _reopened(store: Any) -> tuple[list[Any], list[Any], Any]:
    """``events``, ``history`` and ``usage`` as a fresh opening of the task (on ``store``,
    a new store object) reads them."""
    llm = ScriptedRouter({"executor": []}, store=store)
    with llm, Task.open(store, llm.pin, router=llm) as task:
        return (task.events, task.history, task.usage)


def test_reading_events_history_and_usage_reads_no_store(
    make: Callable[[], Any], tmp_path: Path
) -> None:
    """After the opening, ``events``, ``history`` and ``usage`` read the store not once,
    however often they are read and whatever the task appends (the router's call records
    too), and each equals what a fresh reopening of the task reads."""
    first, second, last = two_steps()
    assert isinstance(first, Reply)
    assert isinstance(second, Reply)
    assert isinstance(last, str)
    counting = make()
    turns = [priced(first, "0.25"), priced(second, "0.5"), priced(reply(last), "0.125")]
    llm = ScriptedRouter({"executor": turns}, store=counting)
    with llm, Task.open(counting, llm.pin, router=llm, prompt=QUESTION) as task:
        before = counting.reads
        assert len(task.history) == 1
        assert task.usage.total.calls == 0
        assert counting.reads == before
        task.run("executor", tools=toolbox(SideEffects(tmp_path / "effects.jsonl")))
        before = counting.reads
        seen = [(task.events, task.history, task.usage) for _ in range(3)]
        assert counting.reads == before
    assert seen[0] == seen[1] == seen[2]
    events, history, usage = seen[0]
    assert [type(e).__name__ for e in history][:2] == ["UserText", "AssistantText"]
    assert usage.total.calls == 3
    assert str(usage.total.cost_usd) == "0.875"
    counting.close()  # the task's lease, for the next opening
    assert (events, history, usage) == _reopened(make())


def test_a_read_list_is_the_callers_own(make: Callable[[], Any]) -> None:
    """Changing a list ``history`` gave changes nothing the task keeps."""
    counting = make()
    llm = ScriptedRouter({"executor": []}, store=counting)
    with llm, Task.open(counting, llm.pin, router=llm, prompt=QUESTION) as task:
        task.history.clear()
        task.events.clear()
        assert len(task.history) == 1
        assert len(task.events) == 1


def test_a_compaction_the_router_writes_is_in_the_kept_view(tmp_path: Path) -> None:
    """A compaction the router writes mid-run (the log overflowed the window) reaches the
    kept ``events`` and ``history`` with no store read on access, equal to a reopening."""
    store = CountingFileStore(tmp_path / "task.jsonl")
    points = Points(0, tmp_path / "notes.jsonl")
    policy = CompactionPolicy(keep_last_turns=1)
    pin = make_pin()
    with (
        RoleRouter.from_pin(
            pin, store=store, compaction=policy, transport=PointedTransport(points)
        ) as llm,
        Task.open(store, pin, router=llm, prompt=LOOP_QUESTION) as task,
    ):
        assert task.run(ROLE, tools=loop_tools(points, tmp_path / "effects.jsonl")).text == FINAL
        before = store.reads
        events, history, usage = task.events, task.history, task.usage
        assert store.reads == before
    assert any(isinstance(e, Compaction) for e in history)
    # The view applies it: the events sent next are not the raw log.
    assert events != [e for e in history if not isinstance(e, Compaction)]
    with Task.open(tmp_path / "task.jsonl", pin) as again:
        assert (events, history, usage) == (again.events, again.history, again.usage)
