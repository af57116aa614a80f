"""`AsyncTask.open` is awaited for the task, or entered with ``async with``; `Task.open`
returns the task itself."""

from __future__ import annotations

from pathlib import Path

import pytest

from nisse_llm import AsyncTask, Task
from nisse_llm.errors import TaskBusy
from nisse_llm.events.canonical import AssistantText, UserText
from tests.agent.helpers import QUESTION, scripted


async def test_an_awaited_opening_is_the_task_and_closing_it_releases_the_lease(
    tmp_path: Path,
) -> None:
    """``await AsyncTask.open(...)`` is the task, begun with its prompt; it holds the lease
    until ``aclose``, after which the task opens again."""
    path = tmp_path / "task.jsonl"
    llm = scripted(path, "Done.", asynchronous=True)
    task = await AsyncTask.open(path, llm.pin, router=llm, prompt=QUESTION)
    assert isinstance(task, AsyncTask)
    try:
        with pytest.raises(TaskBusy):
            await AsyncTask.open(path, llm.pin, router=llm)
        assert (await task.run("executor", tools=None)).text == "Done."
    finally:
        await task.aclose()
    async with llm, AsyncTask.open(path, llm.pin, router=llm) as again:
        assert again.done
        assert await again.history == [
            UserText(text=QUESTION),
            AssistantText(text="Done.", model=llm.pin.model_for("executor")),
        ]


def test_a_sync_opening_is_the_task_itself(tmp_path: Path) -> None:
    """`Task.open` returns a `Task` (no awaitable in between), usable with or without ``with``."""
    path = tmp_path / "task.jsonl"
    llm = scripted(path, "Done.")
    task = Task.open(path, llm.pin, router=llm, prompt=QUESTION)
    assert type(task) is Task
    try:
        assert task.run("executor", tools=None).text == "Done."
    finally:
        task.close()
    llm.close()
