"""A task's run is one ``invoke_agent`` span, parent of its ``chat`` and ``execute_tool``
spans, with the run's usage summed; a limit reached ends it with ``error.type``."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode

from nisse_llm import AsyncTask, RunLimitReached, Task, Toolbox
from nisse_llm.task.logstore import AsyncFileTaskStore, AsyncTaskStore, FileTaskStore, TaskStore
from nisse_llm.testing import ScriptedRouter, ToolUse, reply
from nisse_llm.testing.router import AsyncScriptedRouter
from tests.telemetry.conftest import Telemetry, attributes


def read_file(path: str) -> str:
    """Read a file."""
    return f"contents of {path}"


TURNS = [reply("Reading.", ToolUse("read_file", {"path": "a.py"})), "Done."]


def _check_tree(otel: Telemetry, store: TaskStore | AsyncTaskStore) -> ReadableSpan:
    spans = otel.spans()
    (agent,) = [s for s in spans if s.name == "invoke_agent executor"]
    children = [
        s for s in spans if s.parent is not None and s.parent.span_id == agent.context.span_id
    ]
    assert sorted(s.name for s in children) == [
        "chat scripted-executor",
        "chat scripted-executor",
        "execute_tool read_file",
    ]
    found = attributes(agent)
    calls = [s for s in children if s.name.startswith("chat")]
    assert found["gen_ai.operation.name"] == "invoke_agent"
    assert found["gen_ai.agent.name"] == "executor"
    assert found["gen_ai.conversation.id"] == store.task_id
    for key in ("gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens"):
        assert found[key] == sum(attributes(s)[key] for s in calls) > 0
    assert found["nisse_llm.steps"] == 2
    return agent


def test_run_is_one_invoke_agent_span_over_its_calls_and_tools(
    otel: Telemetry, tmp_path: Path
) -> None:
    """Sync: the run's span holds both calls and the tool run, and sums their usage."""
    store = FileTaskStore(tmp_path / "task.jsonl")
    llm = ScriptedRouter({"executor": TURNS}, store=store)
    with Task.open(store, llm.pin, router=llm, prompt="Read a.py") as task:
        task.run("executor", tools=Toolbox([read_file]))
    agent = _check_tree(otel, store)
    assert agent.status.status_code is not StatusCode.ERROR


def test_async_run_is_one_invoke_agent_span(otel: Telemetry, tmp_path: Path) -> None:
    """Async: the same tree, the context carried across the awaits."""
    store = AsyncFileTaskStore(tmp_path / "task.jsonl")

    async def main() -> None:
        llm = AsyncScriptedRouter({"executor": TURNS}, store=store)
        async with AsyncTask.open(store, llm.pin, router=llm, prompt="Read a.py") as task:
            await task.run("executor", tools=Toolbox([read_file]))
        await llm.aclose()

    asyncio.run(main())
    _check_tree(otel, store)


def test_a_limit_reached_ends_the_span_with_its_error_type(otel: Telemetry, tmp_path: Path) -> None:
    """`RunLimitReached` ends the run's span as an error naming it, usage so far recorded."""
    store = FileTaskStore(tmp_path / "task.jsonl")
    llm = ScriptedRouter({"executor": TURNS}, store=store)
    task = Task.open(store, llm.pin, router=llm, prompt="Read a.py")
    with task, pytest.raises(RunLimitReached):
        task.run("executor", tools=Toolbox([read_file]), max_steps=1)
    (agent,) = [s for s in otel.spans() if s.name == "invoke_agent executor"]
    found = attributes(agent)
    assert found["error.type"] == "RunLimitReached"
    assert agent.status.status_code is StatusCode.ERROR
    assert found["nisse_llm.steps"] == 1
    assert found["gen_ai.usage.input_tokens"] > 0
