"""Task and AsyncTask over a scripted router: open or resume, say, step, run, limits, typed
answers, and a cut tool run finished as its tool allows."""

from __future__ import annotations

import asyncio
from decimal import Decimal
from pathlib import Path

import pytest
from pydantic import BaseModel

from nisse_llm import (
    AssistantText,
    AsyncTask,
    RunLimitReached,
    StoredEvent,
    Task,
    Toolbox,
    ToolCall,
    ToolResult,
    UserText,
)
from nisse_llm.agent.plan import unknown_result
from nisse_llm.task.logstore import AsyncFileTaskStore, FileTaskStore
from nisse_llm.task.records import StoredToolRun
from nisse_llm.testing import ScriptedRouter, ToolUse, reply
from tests.agent.helpers import QUESTION, SideEffects, numbered, priced, scripted, two_steps


def _box(tools: SideEffects, **options: object) -> Toolbox:
    return Toolbox([tools.read_file, tools.write_file], repeatable={"read_file"}, **options)  # type: ignore[arg-type]


def test_run_steps_until_the_model_answers_and_writes_every_step(tmp_path: Path) -> None:
    """The run's log is prompt, each reply, each result; each tool's start precedes its
    result in the file; the result counts the run's steps, usage and cost."""
    path = tmp_path / "task.jsonl"
    tools = SideEffects(tmp_path / "effects.jsonl")
    turns = two_steps()
    turns[0] = priced(turns[0], "0.25")  # type: ignore[arg-type]
    llm = scripted(path, *turns)

    with Task.open(path, llm.pin, router=llm, prompt=QUESTION) as task:
        result = task.run("executor", tools=_box(tools))
        assert task.done
        history = task.history
        assert task.unknown_calls == []
        assert task.unknown_tool_runs == []

    assert (result.text, result.output, result.steps) == ("Fixed it.", "Fixed it.", 3)
    assert result.cost_usd == Decimal("0.25")
    assert result.usage.input > 0
    kinds = [type(e).__name__ for e in history]
    assert kinds == [
        "UserText", "AssistantText", "ToolCall", "ToolResult", "ToolCall", "ToolResult",
        "AssistantText",
    ]  # fmt: skip
    order = [
        "start" if isinstance(r, StoredToolRun) else r.event.kind
        for r in FileTaskStore(path).read().records
        if isinstance(r, StoredToolRun | StoredEvent)
    ]
    assert order == [
        "user_text", "assistant_text", "tool_call", "start", "tool_result",
        "tool_call", "start", "tool_result", "assistant_text",
    ]  # fmt: skip
    assert [r["tool"] for r in tools.runs()] == ["read_file", "write_file"]


def test_open_writes_the_prompt_once_and_a_done_task_runs_no_model(tmp_path: Path) -> None:
    """Reopened, the prompt is not written again and `run` returns the recorded result (the
    same value the first run returned) with no call and no record."""
    path = tmp_path / "task.jsonl"
    tools = SideEffects(tmp_path / "effects.jsonl")
    llm = scripted(path, *two_steps())
    with Task.open(path, llm.pin, router=llm, prompt=QUESTION) as task:
        first = task.run("executor", tools=_box(tools))
    requests = len(llm.script.requests)
    records = len(FileTaskStore(path).read().records)

    with Task.open(path, llm.pin, router=llm, prompt=QUESTION) as again:
        assert again.done
        result = again.run("executor", tools=_box(tools))
        history = again.history

    assert result == first
    assert (result.text, result.steps) == ("Fixed it.", 3)
    assert len(llm.script.requests) == requests
    assert len(FileTaskStore(path).read().records) == records
    assert [e for e in history if isinstance(e, UserText)] == [UserText(text=QUESTION)]


def test_say_goes_on_from_a_done_task(tmp_path: Path) -> None:
    """A user message after the answer is written at once and the next run answers it."""
    path = tmp_path / "task.jsonl"
    llm = scripted(path, "First answer.", "Second answer.")
    with Task.open(path, llm.pin, router=llm, prompt=QUESTION) as task:
        task.run("executor", tools=None)
        task.say("And the other test?")
        assert not task.done
        assert FileTaskStore(path).read().events[-1].event == UserText(text="And the other test?")
        assert task.run("executor", tools=None).text == "Second answer."
    sent = llm.requests_for("executor")[-1].user_texts
    assert sent[-1] == "And the other test?"


def test_say_writes_the_text_and_its_images_together(tmp_path: Path) -> None:
    """A message with an image is one batch: text then image, in the log the model gets."""
    from nisse_llm import UserImage
    from nisse_llm.events.images import Image
    from nisse_llm.testing.images import png

    path = tmp_path / "task.jsonl"
    llm = scripted(path, "A red square.")
    image = Image.from_bytes(png(8, 8))
    with Task.open(path, llm.pin, router=llm) as task:
        task.say("What is this?", images=[image])
        assert task.run("executor", tools=None).text == "A red square."
        assert task.history[:2] == [UserText(text="What is this?"), UserImage(image=image)]
    kinds = [type(r).__name__ for r in FileTaskStore(path).read().records]
    assert kinds[1:4] == ["StoredBatch", "StoredEvent", "StoredEvent"]


def test_step_appends_the_reply_and_runs_parallel_calls_in_order(tmp_path: Path) -> None:
    """One step: both calls of the reply run, their results follow in the reply's order."""
    path = tmp_path / "task.jsonl"
    tools = SideEffects(tmp_path / "effects.jsonl")
    llm = scripted(
        path,
        reply(
            ToolUse("read_file", {"path": "a.py"}),
            ToolUse("write_file", {"path": "b.py", "text": "x"}),
        ),
    )
    with Task.open(path, llm.pin, router=llm, prompt=QUESTION) as task:
        step = task.step("executor", tools=_box(tools))
        history = task.history

    assert step.more
    assert [r.output for r in step.results] == ["contents of a.py", "wrote 1 characters to b.py"]
    calls = [e for e in step.completion.events if isinstance(e, ToolCall)]
    assert [r.call_id for r in step.results] == [c.call_id for c in calls]
    assert history[-2:] == step.results


@pytest.mark.parametrize(
    ("limit", "value"), [("max_steps", 1), ("max_tokens", 10), ("max_cost_usd", 0.1)]
)
def test_a_limit_stops_the_run_and_the_task_resumes(
    tmp_path: Path, limit: str, value: float
) -> None:
    """`RunLimitReached` names the limit after the first step; reopened, a run with no
    such limit finishes the same task, the first step's tool not run again."""
    path = tmp_path / "task.jsonl"
    tools = SideEffects(tmp_path / "effects.jsonl")
    turns = two_steps()
    turns[0] = priced(turns[0], "0.5")  # type: ignore[arg-type]
    llm = scripted(path, *turns)
    task = Task.open(path, llm.pin, router=llm, prompt=QUESTION)
    with task:
        with pytest.raises(RunLimitReached) as caught:
            task.run("executor", tools=_box(tools), **{limit: value})  # type: ignore[arg-type]
        assert not task.done
    assert caught.value.limit == limit
    assert caught.value.steps == 1

    with Task.open(path, llm.pin, router=llm) as again:
        result = again.run("executor", tools=_box(tools))
    assert (result.text, result.steps) == ("Fixed it.", 3)  # the run's, before the limit too
    assert [r["tool"] for r in tools.runs()] == ["read_file", "write_file"]


class Verdict(BaseModel):
    """Whether the fix holds."""

    fixed: bool
    reason: str


def test_run_as_ends_with_a_typed_answer(tmp_path: Path) -> None:
    """After the tool loop, one typed call: its value is the output, its exchange in the log;
    reopened, the task returns that answer with no call."""
    path = tmp_path / "task.jsonl"
    tools = SideEffects(tmp_path / "effects.jsonl")
    llm = scripted(
        path,
        *two_steps(),
        reply(ToolUse("Verdict", {"fixed": True, "reason": "the test passes"})),
    )
    with Task.open(path, llm.pin, router=llm, prompt=QUESTION) as task:
        result = task.run_as("executor", Verdict, tools=_box(tools))
        history = task.history

    assert result.output == Verdict(fixed=True, reason="the test passes")
    assert result.steps == 4
    assert any(isinstance(e, ToolCall) and e.tool == "Verdict" for e in history)
    requests = len(llm.script.requests)

    with Task.open(path, llm.pin, router=llm, prompt=QUESTION) as again:
        resumed = again.run_as("executor", Verdict, tools=_box(tools))
    assert resumed == result
    assert len(llm.script.requests) == requests


def _cut_mid_tool(path: Path, tools: SideEffects, exc: BaseException) -> None:
    """Run the read then the write, which raises ``exc`` after its side effect."""
    llm = scripted(path, *two_steps())
    real = tools.write_file

    def write_file(path: str, text: str) -> str:
        """Write a file."""
        real(path, text)
        raise exc

    box = Toolbox([tools.read_file, write_file], repeatable={"read_file"}, propagate_errors=True)
    with (
        pytest.raises(type(exc)),
        Task.open(path, llm.pin, router=llm, prompt=QUESTION) as task,
    ):
        task.run("executor", tools=box)


@pytest.mark.parametrize("exc", [KeyboardInterrupt(), RuntimeError("disk full")])
def test_a_cut_run_of_a_tool_that_may_not_repeat_is_answered_as_unknown(
    tmp_path: Path, exc: BaseException
) -> None:
    """Ctrl-C or an exception mid-tool leaves its start without a result; reopened, the tool
    is not run again, an error result says its outcome is unknown, and the run finishes."""
    path = tmp_path / "task.jsonl"
    tools = SideEffects(tmp_path / "effects.jsonl")
    _cut_mid_tool(path, tools, exc)
    llm = scripted(path, "Fixed it, I think.")

    with Task.open(path, llm.pin, router=llm) as task:
        (pending,) = [e for e in task.events if isinstance(e, ToolCall) and e.tool == "write_file"]
        result = task.run("executor", tools=_box(tools))
        (unknown,) = task.unknown_tool_runs
        history = task.history

    assert unknown == pending
    assert unknown_result(pending) in history
    assert result.text == "Fixed it, I think."
    assert [r["tool"] for r in tools.runs()] == ["read_file", "write_file"]
    with Task.open(path, llm.pin, router=llm) as again:
        assert again.unknown_tool_runs == [pending]
        assert again.done


def test_a_cut_run_of_a_repeatable_tool_runs_again(tmp_path: Path) -> None:
    """Marked repeatable, the cut tool runs again on reopening and its result stands."""
    path = tmp_path / "task.jsonl"
    tools = SideEffects(tmp_path / "effects.jsonl")
    _cut_mid_tool(path, tools, KeyboardInterrupt())
    llm = scripted(path, "Fixed it.")
    box = Toolbox([tools.read_file, tools.write_file], repeatable={"read_file", "write_file"})

    with Task.open(path, llm.pin, router=llm) as task:
        task.run("executor", tools=box)
        assert task.unknown_tool_runs == []
        history = task.history

    assert [r["tool"] for r in tools.runs()] == ["read_file", "write_file", "write_file"]
    results = [e for e in history if isinstance(e, ToolResult)]
    assert results[-1].output == "wrote 5 characters to a.py"


def test_reconcile_answers_a_cut_run(tmp_path: Path) -> None:
    """The task's hook is asked for the cut call; its result is written under the call's id."""
    path = tmp_path / "task.jsonl"
    tools = SideEffects(tmp_path / "effects.jsonl")
    _cut_mid_tool(path, tools, KeyboardInterrupt())
    llm = scripted(path, "Fixed it.")
    asked: list[ToolCall] = []

    def reconcile(call: ToolCall) -> ToolResult | None:
        asked.append(call)
        return ToolResult(call_id="call_other", output="a.py holds the fix")

    with Task.open(path, llm.pin, router=llm, reconcile=reconcile) as task:
        task.run("executor", tools=_box(tools))
        assert task.unknown_tool_runs == []
        history = task.history

    (call,) = asked
    assert ToolResult(call_id=call.call_id, output="a.py holds the fix") in history


def test_async_task_runs_and_cancellation_leaves_an_unknown_call(tmp_path: Path) -> None:
    """An AsyncTask cancelled while its call is out leaves that call unknown; reopened, the
    run finishes with the log an uncancelled run has."""
    from nisse_llm.testing import slow

    path = tmp_path / "task.jsonl"
    tools = SideEffects(tmp_path / "effects.jsonl")
    first, second, final = two_steps()

    async def cancelled() -> None:
        llm = scripted(path, first, slow(second, 30), asynchronous=True)  # type: ignore[arg-type]
        async with AsyncTask.open(path, llm.pin, router=llm, prompt=QUESTION) as task:
            running = asyncio.create_task(task.run("executor", tools=_box(tools)))
            while not tools.runs():
                await asyncio.sleep(0.01)
            # Read as the loop's own store does (a blocking read here would wait on the
            # flock an append holds across its awaits, and stall the loop that releases it).
            while len((await AsyncFileTaskStore(path).read()).starts) < 2:
                await asyncio.sleep(0.01)
            running.cancel()
            with pytest.raises(asyncio.CancelledError):
                await running
        await llm.aclose()

    async def resumed() -> list[object]:
        llm = scripted(path, second, final, asynchronous=True)  # type: ignore[arg-type]
        async with AsyncTask.open(path, llm.pin, router=llm) as task:
            assert len(await task.unknown_calls) == 1
            result = await task.run("executor", tools=_box(tools))
            assert result.text == "Fixed it."
            history = await task.history
        await llm.aclose()
        return numbered(history)

    asyncio.run(cancelled())
    history = asyncio.run(resumed())

    straight = tmp_path / "straight.jsonl"
    llm = scripted(straight, *two_steps())
    with Task.open(straight, llm.pin, router=llm, prompt=QUESTION) as task:
        task.run("executor", tools=_box(SideEffects(tmp_path / "other.jsonl")))
        assert history == numbered(task.history)
    assert [r["tool"] for r in tools.runs()] == ["read_file", "write_file"]


def test_a_router_must_record_in_the_tasks_file(tmp_path: Path) -> None:
    """A router without the task's store, or with another pin, is refused with the fix."""
    path = tmp_path / "task.jsonl"
    bare = ScriptedRouter({"executor": ["x"]})
    with pytest.raises(ValueError, match="build it with store=FileTaskStore"):
        Task.open(path, bare.pin, router=bare)
    other = ScriptedRouter({"executor": ["x"]}, store=FileTaskStore(tmp_path / "other.jsonl"))
    with pytest.raises(ValueError, match="record its calls in the task's file"):
        Task.open(path, other.pin, router=other)
    mine = scripted(path, "x")
    with pytest.raises(ValueError, match="pass compaction= to it"):
        Task.open(path, mine.pin, router=mine, compaction=object())  # type: ignore[arg-type]


def test_the_final_answer_is_an_assistant_text(tmp_path: Path) -> None:
    """The last event of a done task is the model's text."""
    path = tmp_path / "task.jsonl"
    llm = scripted(path, "Done.")
    with Task.open(path, llm.pin, router=llm, prompt=QUESTION) as task:
        task.run("executor", tools=None)
        assert task.events[-1] == AssistantText(text="Done.", model="scripted-executor")


def test_open_keeps_the_tasks_own_pin_and_strict_pin_refuses_another(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A task reopened with another pin runs on its own, with one WARNING and `pin_changes`
    naming the keys that differ; ``strict_pin=True`` refuses it (`TaskPinMismatch`)."""
    import logging

    from nisse_llm import TaskPinMismatch

    path = tmp_path / "task.jsonl"
    llm = scripted(path, "Done.")
    with Task.open(path, llm.pin, router=llm, prompt=QUESTION) as task:
        task.run("executor", tools=None)
        assert task.pin_changes == ()
    other = ScriptedRouter({"executor": ["x"]}, models={"executor": "scripted-other"})
    before = path.read_bytes()
    with pytest.raises(TaskPinMismatch):
        Task.open(path, other.pin, strict_pin=True)
    assert path.read_bytes() == before

    with caplog.at_level(logging.WARNING, logger="nisse_llm"), Task.open(path, other.pin) as task:
        assert task.pin == llm.pin
        assert task.pin.model_for("executor") == "scripted-executor"
        assert task.pin_changes == ("roles.executor",)
    (warning,) = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert "differs in roles.executor" in warning.getMessage()
    assert path.read_bytes() == before


def test_a_task_builds_and_closes_its_own_router_and_file(tmp_path: Path) -> None:
    """Given no router, the task builds one over its pin, recording in its file with its
    compaction policy, and closing the task closes both (a given store stays open)."""
    from nisse_llm import CompactionPolicy
    from tests.task.helpers import make_pin

    policy = CompactionPolicy(keep_last_turns=1)
    path = tmp_path / "task.jsonl"
    with Task.open(path, make_pin(), compaction=policy, prompt=QUESTION) as task:
        assert task.router.compaction is policy
        assert task.router.store is task.store
        assert task.store.next_seq == 2  # the header and the prompt
    assert not _held_open(path)

    given = FileTaskStore(path)
    with Task.open(given, make_pin()) as again:
        assert again.store is given
    assert _held_open(path)
    given.close()
    assert not _held_open(path)


def _held_open(path: Path) -> bool:
    """Whether this process holds a descriptor on ``path``."""
    import os

    fds = Path("/proc/self/fd")
    return any(os.path.realpath(fds / fd) == str(path.resolve()) for fd in os.listdir(fds))


def test_a_file_from_a_hand_written_loop_is_continued(tmp_path: Path) -> None:
    """A task file with no tool-run records (a loop of the agent's own) opens as a task:
    its unanswered call, never recorded as started, is run, and the run finishes."""
    path = tmp_path / "task.jsonl"
    tools = SideEffects(tmp_path / "effects.jsonl")
    llm = scripted(path, "Read it.")
    call = ToolCall(call_id="call_old", tool="read_file", arguments={"path": "a.py"})
    llm.store.append_events([UserText(text=QUESTION), AssistantText(text="x", model="m"), call])

    with Task.open(path, llm.pin, router=llm) as task:
        result = task.run("executor", tools=_box(tools))
        history = task.history

    assert result.text == "Read it."
    assert ToolResult(call_id="call_old", output="contents of a.py") in history
    assert [r["tool"] for r in tools.runs()] == ["read_file"]
