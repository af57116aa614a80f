"""A task handle cannot be misused: a closed task runs nothing (`TaskClosed`), and a task
dropped while open warns (`ResourceWarning`) and gives its lease back."""

from __future__ import annotations

import gc
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from nisse_llm import AsyncTask, LLMError, Task, TaskClosed
from nisse_llm.task.logstore import FileTaskStore
from tests.agent.helpers import QUESTION, SideEffects, scripted, two_steps
from tests.agent.test_task import _box

ACTS: dict[str, Callable[[Any, Any], Any]] = {
    "say()": lambda task, box: task.say("More."),
    "step()": lambda task, box: task.step("executor", tools=box),
    "run()": lambda task, box: task.run("executor", tools=box),
    "run_as()": lambda task, box: task.run_as("executor", _Answer, tools=box),
    "tool_changes()": lambda task, box: task.tool_changes(box),
    "approve()": lambda task, box: task.approve("call-1"),
    "deny()": lambda task, box: task.deny("call-1", "no"),
    "delegate()": lambda task, box: task.delegate("executor", "Help.", tools=box),
}
#: Every public read of a task (the store's contents and what the opening set).
READS = (
    "done", "events", "history", "usage", "unknown_calls", "unknown_tool_runs", "tool_runs",
    "repairs", "offered_tools", "pin", "pin_changes", "store", "router",
    "pending_approvals", "children", "total_usage",
)  # fmt: skip


def test_every_public_name_of_a_task_is_tested_closed() -> None:
    """The names below are every public method and property of `Task` and `AsyncTask`
    but ``open``, ``close``/``aclose`` (idempotent) and the ``with`` protocol."""
    for cls in (Task, AsyncTask):
        public = {n for n in dir(cls) if not n.startswith("_")} - {"open", "close", "aclose"}
        assert public == {n.rstrip("()") for n in [*ACTS, *READS]}, cls


class _Answer(BaseModel):
    """An answer."""

    value: str


@pytest.mark.parametrize("name", [*sorted(ACTS), *READS])
def test_every_method_of_a_closed_task_raises_task_closed(tmp_path: Path, name: str) -> None:
    """After ``close()`` each method and property raises `TaskClosed` (an `LLMError`)
    naming itself and saying what to do, while another driver holds the task: no model
    call, no tool run, no record written, no read of the store."""
    path = tmp_path / "task.jsonl"
    tools = SideEffects(tmp_path / "effects.jsonl")
    llm = scripted(path, *two_steps())
    task = Task.open(path, llm.pin, router=llm, prompt=QUESTION)
    task.close()
    records = len(FileTaskStore(path).read().records)
    act = ACTS.get(name) or (lambda task, box: getattr(task, name))
    with (
        Task.open(path, llm.pin, router=llm),
        pytest.raises(TaskClosed, match=rf"{re.escape(name)} ran nothing") as raised,
    ):
        act(task, _box(tools))
    assert "before closing" in str(raised.value)
    assert "open the task again" in str(raised.value)
    assert isinstance(raised.value, LLMError)
    assert llm.script.requests == []
    assert tools.runs() == []
    assert len(FileTaskStore(path).read().records) == records


def test_closing_twice_does_nothing(tmp_path: Path) -> None:
    """A second ``close()`` is no error (a ``with`` block after an explicit close)."""
    path = tmp_path / "task.jsonl"
    llm = scripted(path, "Done.")
    with Task.open(path, llm.pin, router=llm, prompt=QUESTION) as task:
        task.close()
    task.close()


async def test_a_closed_async_task_raises_task_closed(tmp_path: Path) -> None:
    """`AsyncTask` too: ``run`` and every read after ``aclose()`` raise `TaskClosed` and
    call no model; closing again does nothing."""
    path = tmp_path / "task.jsonl"
    llm = scripted(path, "Done.", asynchronous=True)
    task = await AsyncTask.open(path, llm.pin, router=llm, prompt=QUESTION)
    await task.aclose()
    with pytest.raises(TaskClosed):
        await task.run("executor", tools=None)
    for name in READS:
        with pytest.raises(TaskClosed, match=rf"{name} ran nothing"):
            getattr(task, name)  # raised at once: no coroutine left to await
    assert llm.script.requests == []
    await task.aclose()
    await llm.aclose()


def test_a_task_dropped_open_warns_and_releases_its_lease(tmp_path: Path) -> None:
    """A task garbage-collected while open warns with `ResourceWarning` naming it, and its
    lease is free at once: the task opens again in the same process."""
    path = tmp_path / "task.jsonl"
    llm = scripted(path, "Done.")
    with pytest.warns(ResourceWarning, match=r"Task\(.*\) was never closed"):
        _dropped(Task.open(path, llm.pin, router=llm, prompt=QUESTION))
    with Task.open(path, llm.pin, router=llm) as again:
        assert again.run("executor", tools=None).text == "Done."


async def test_an_async_task_dropped_open_warns_and_releases_its_lease(tmp_path: Path) -> None:
    """The same for `AsyncTask`: the warning, then the task opens again."""
    path = tmp_path / "task.jsonl"
    llm = scripted(path, "Done.", asynchronous=True)
    with pytest.warns(ResourceWarning, match=r"AsyncTask\(.*\) was never closed"):
        _dropped(await AsyncTask.open(path, llm.pin, router=llm, prompt=QUESTION))
    async with llm, AsyncTask.open(path, llm.pin, router=llm) as again:
        assert (await again.run("executor", tools=None)).text == "Done."


def _dropped(task: object) -> None:
    """Let go of the last reference to ``task`` (collected at once, cycles too)."""
    del task
    gc.collect()
