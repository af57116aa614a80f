"""What a task answers with: a typed answer's text after `run_as`, and the results a
``reconcile`` hook gives for a cut tool run (a coroutine function's for `AsyncTask`)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from pydantic import BaseModel

from nisse_llm import AsyncTask, Task, ToolCall, ToolResult
from nisse_llm.testing import ToolUse, reply
from tests.agent._driver import toolbox
from tests.agent.helpers import QUESTION, SideEffects, scripted, two_steps
from tests.agent.test_task import _cut_mid_tool


class Verdict(BaseModel):
    """Whether the fix holds."""

    fixed: bool
    reason: str


def test_run_as_gives_the_typed_answers_json_as_its_text(tmp_path: Path) -> None:
    """Answered through the answer tool, the run's text is the answer's JSON, also when a
    reopened task returns the answer without calling the model."""
    path = tmp_path / "task.jsonl"
    tools = SideEffects(tmp_path / "effects.jsonl")
    answer = {"fixed": True, "reason": "the test passes — für alle"}
    llm = scripted(path, *two_steps(), reply(ToolUse("Verdict", answer)))
    with Task.open(path, llm.pin, router=llm, prompt=QUESTION) as task:
        result = task.run_as("executor", Verdict, tools=toolbox(tools))
    assert json.loads(result.text) == answer
    assert Verdict.model_validate_json(result.text) == result.output
    assert "für alle" in result.text

    with Task.open(path, llm.pin, router=llm) as again:
        resumed = again.run_as("executor", Verdict, tools=toolbox(tools))
    assert resumed == result


def test_an_async_tasks_reconcile_may_be_a_coroutine_function(tmp_path: Path) -> None:
    """`AsyncTask` awaits a coroutine function's answer for a cut run and writes it."""
    path = tmp_path / "task.jsonl"
    tools = SideEffects(tmp_path / "effects.jsonl")
    _cut_mid_tool(path, tools, KeyboardInterrupt())
    asked: list[ToolCall] = []

    async def reconcile(call: ToolCall) -> ToolResult | None:
        await asyncio.sleep(0)
        asked.append(call)
        return ToolResult(call_id=call.call_id, output="a.py holds the fix")

    async def resumed() -> list[object]:
        llm = scripted(path, "Fixed it.", asynchronous=True)
        async with (
            llm,
            AsyncTask.open(path, llm.pin, router=llm, reconcile=reconcile) as task,
        ):
            assert (await task.run("executor", tools=toolbox(tools))).text == "Fixed it."
            assert await task.unknown_tool_runs == []
            return await task.history

    history = asyncio.run(resumed())
    (call,) = asked
    assert call.tool == "write_file"
    assert ToolResult(call_id=call.call_id, output="a.py holds the fix") in history
    assert [r["tool"] for r in tools.runs()] == ["read_file", "write_file"]


def test_a_sync_tasks_reconcile_may_not_be_a_coroutine_function(tmp_path: Path) -> None:
    """A `Task` given a coroutine function says to use `AsyncTask`, and writes no result."""
    path = tmp_path / "task.jsonl"
    tools = SideEffects(tmp_path / "effects.jsonl")
    _cut_mid_tool(path, tools, KeyboardInterrupt())

    async def reconcile(call: ToolCall) -> ToolResult | None:
        return ToolResult(call_id=call.call_id, output="never written")

    llm = scripted(path, "Fixed it.")
    with Task.open(path, llm.pin, router=llm, reconcile=reconcile) as task:  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="use AsyncTask"):
            task.run("executor", tools=toolbox(tools))
        history = task.history
    assert not any(isinstance(e, ToolResult) and e.output == "never written" for e in history)
