"""The tools a task offered: recorded when they change, known again when the task is
reopened, and a resumed task given other tools says what changed."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from nisse_llm import AsyncTask, Task, Toolbox, ToolSpec
from nisse_llm.events.tool_changes import ToolChanges
from nisse_llm.task.logstore import FileTaskStore
from nisse_llm.task.records import StoredCall, StoredTools
from nisse_llm.testing import ToolUse, reply
from tests.agent.helpers import QUESTION, SideEffects, scripted


def _box(tools: SideEffects, *, repeatable: frozenset[str] = frozenset({"read_file"})) -> Toolbox:
    return Toolbox([tools.read_file, tools.write_file], repeatable=repeatable)


def _offered(path: Path) -> list[list[str]]:
    """The tool names of each tools record of the file, in order."""
    return [
        [spec.name for spec in r.tools.specs]
        for r in FileTaskStore(path).read().records
        if isinstance(r, StoredTools)
    ]


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


def test_a_run_records_its_tools_once_before_its_first_call(tmp_path: Path) -> None:
    """Three steps with one toolbox write one tools record, before the first call's start,
    holding the specs as the model got them."""
    path = tmp_path / "task.jsonl"
    tools = SideEffects(tmp_path / "effects.jsonl")
    llm = scripted(
        path,
        reply(ToolUse("read_file", {"path": "a.py"})),
        reply(ToolUse("read_file", {"path": "b.py"})),
        "Done.",
    )
    box = _box(tools)
    with Task.open(path, llm.pin, router=llm, prompt=QUESTION) as task:
        assert task.run("executor", tools=box).steps == 3
    records = FileTaskStore(path).read().records
    kinds = [type(r).__name__ for r in records if isinstance(r, StoredTools | StoredCall)]
    assert kinds[:2] == ["StoredTools", "StoredCall"]
    assert kinds.count("StoredTools") == 1
    (stored,) = [r for r in records if isinstance(r, StoredTools)]
    assert _dumped(stored.tools.specs) == _dumped(box.specs)  # strict is the route's to send


def test_a_task_without_tools_records_none(tmp_path: Path) -> None:
    """A step offering no tools to a task that never offered any writes no tools record."""
    path = tmp_path / "task.jsonl"
    llm = scripted(path, "Hello.")
    with Task.open(path, llm.pin, router=llm, prompt="Say hello.") as task:
        task.run("executor", tools=None)
        assert task.tool_changes(None) == ToolChanges()
        assert task.offered_tools is None
    assert _offered(path) == []


def test_reopened_with_the_same_tools_nothing_is_said_or_written(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The reopened task knows the tools it offered: the same ones (another order, another
    repeatable flag, which the model never sees) are no change, log nothing and write nothing."""
    path = tmp_path / "task.jsonl"
    tools = SideEffects(tmp_path / "effects.jsonl")
    llm = scripted(path, reply(ToolUse("read_file", {"path": "a.py"})), "Done.")
    with Task.open(path, llm.pin, router=llm, prompt=QUESTION) as task:
        task.step("executor", tools=_box(tools))

    same = Toolbox([tools.write_file, tools.read_file], repeatable={"read_file", "write_file"})  # type: ignore[list-item]
    with caplog.at_level(logging.WARNING), Task.open(path, llm.pin, router=llm) as again:
        assert _dumped(again.offered_tools) == _dumped(_box(tools).specs)
        assert again.tool_changes(same) == ToolChanges()
        again.step("executor", tools=same)  # the program's first call, replayed
        assert again.run("executor", tools=same).text == "Done."
    assert _warnings(caplog) == []
    assert _offered(path) == [["read_file", "write_file"]]


def test_reopened_with_other_tools_the_task_says_what_changed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A removed tool, a new one and one whose description changed are named before the
    step (`tool_changes`) and by a WARNING as the step offers them; the new specs are
    recorded, and the model is offered exactly them."""
    path = tmp_path / "task.jsonl"
    tools = SideEffects(tmp_path / "effects.jsonl")
    llm = scripted(path, reply(ToolUse("read_file", {"path": "a.py"})), "Done.")
    with Task.open(path, llm.pin, router=llm, prompt=QUESTION) as task:
        task.step("executor", tools=_box(tools))

    def read_file(path: str) -> str:
        """Read a text file, whole."""
        return tools.read_file(path)

    def list_files() -> list[str]:
        """List the files."""
        return ["a.py"]

    changed = Toolbox([read_file, list_files])
    with caplog.at_level(logging.WARNING), Task.open(path, llm.pin, router=llm) as again:
        expected = ToolChanges(
            added=("list_files",), removed=("write_file",), changed=("read_file",)
        )
        assert again.tool_changes(changed) == expected
        again.step("executor", tools=changed)  # the program's first call, replayed
        again.run("executor", tools=changed)
        assert again.tool_changes(changed) == ToolChanges()
    (warning,) = _warnings(caplog)
    assert "added list_files; removed write_file; changed read_file" in warning
    assert str(path) in warning
    assert _offered(path) == [["read_file", "write_file"], ["read_file", "list_files"]]
    sent = llm.script.requests[-1].body.decode()
    assert "write_file" not in sent
    assert "Read a text file, whole." in sent


def test_a_task_changing_its_own_tools_records_them_without_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Tools changed between two steps of one opening are the agent's own choice: recorded,
    not warned about."""
    path = tmp_path / "task.jsonl"
    tools = SideEffects(tmp_path / "effects.jsonl")
    llm = scripted(path, reply(ToolUse("read_file", {"path": "a.py"})), "Done.")
    with (
        caplog.at_level(logging.WARNING),
        Task.open(path, llm.pin, router=llm, prompt=QUESTION) as task,
    ):
        task.step("executor", tools=_box(tools))
        task.step("executor", tools=Toolbox([tools.read_file]))  # type: ignore[list-item]
    assert _warnings(caplog) == []
    assert _offered(path) == [["read_file", "write_file"], ["read_file"]]


def test_the_async_task_records_and_compares_alike(tmp_path: Path) -> None:
    """AsyncTask, the source Task is generated from, records its tools and says what a
    reopened task's tools changed."""
    path = tmp_path / "task.jsonl"
    tools = SideEffects(tmp_path / "effects.jsonl")
    llm = scripted(path, reply(ToolUse("read_file", {"path": "a.py"})), "Done.", asynchronous=True)

    async def main() -> ToolChanges:
        async with AsyncTask.open(path, llm.pin, router=llm, prompt=QUESTION) as task:
            await task.step("executor", tools=_box(tools))
        async with AsyncTask.open(path, llm.pin, router=llm) as again:
            return again.tool_changes(Toolbox([tools.read_file]))  # type: ignore[list-item]

    assert asyncio.run(main()) == ToolChanges(removed=("write_file",))
    assert _offered(path) == [["read_file", "write_file"]]


def test_a_typed_answer_asked_of_a_finished_run_records_the_tools_it_offers(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """`run_as` on a task whose run already ended makes no step, yet the answer's call
    offers tools: those are recorded before it, and a change since the file's is said."""
    from pydantic import BaseModel

    class Verdict(BaseModel):
        fixed: bool

    path = tmp_path / "task.jsonl"
    tools = SideEffects(tmp_path / "effects.jsonl")
    llm = scripted(path, "Done.", reply(ToolUse("Verdict", {"fixed": True})))
    with Task.open(path, llm.pin, router=llm, prompt=QUESTION) as task:
        task.run("executor", tools=Toolbox([tools.read_file]))
    assert _offered(path) == [["read_file"]]
    with (
        caplog.at_level(logging.WARNING),
        Task.open(path, llm.pin, router=llm) as again,
    ):
        again.run("executor", tools=Toolbox([tools.read_file]))  # replayed
        result = again.run_as("executor", Verdict, tools=_box(tools))
    assert result.output == Verdict(fixed=True)
    assert _offered(path) == [["read_file"], ["read_file", "write_file"]]
    assert any("write_file" in w for w in _warnings(caplog))


def _dumped(specs: list[ToolSpec] | None) -> list[dict[str, object]]:
    """The specs as the file records them (what makes one strict or repeatable is not)."""
    return [spec.model_dump() for spec in specs or []]
