"""A task holds an agent's whole program: a planner's typed answer, a ``say`` handing it over,
an executor's run with tools, each with its system prompt; run again from the top, the
program replays from the file, and a program that asks something else is refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from nisse_llm import (
    OutputValidationError,
    RunLimitReached,
    Task,
    TaskDiverged,
    Toolbox,
    ToolCall,
    UserText,
)
from nisse_llm.agent.plan import answer_request
from nisse_llm.task.logstore import FileTaskStore
from nisse_llm.testing import ScriptedRouter, ToolUse, reply
from tests.agent.helpers import QUESTION, SideEffects

PLANNER = "claude-opus-5-5"  # the messages route
EXECUTOR = "gpt-6-astra"  # the Responses route
PLAN = {"steps": ["write a.py"]}


class Plan(BaseModel):
    """The planner's plan."""

    steps: list[str]


def _router(path: Path, planner: list[Any], executor: list[Any]) -> ScriptedRouter:
    return ScriptedRouter(
        {"planner": planner, "executor": executor},
        models={"planner": PLANNER, "executor": EXECUTOR},
        store=FileTaskStore(path),
    )


def _executor_turns() -> list[Any]:
    return [reply(ToolUse("write_file", {"path": "a.py", "text": "fixed"})), "Done."]


def _program(task: Task, tools: SideEffects, *, handover: str = "Carry out: ") -> tuple[Any, Any]:
    """The two-role program: the planner's plan, said to the executor, carried out."""
    plan = task.run_as("planner", Plan, tools=None, system="You plan.")
    task.say(handover + plan.text)
    done = task.run("executor", tools=Toolbox([tools.write_file]), system="You carry out plans.")
    return plan, done


def _body(request: Any) -> dict[str, Any]:
    return json.loads(request.body)  # type: ignore[no-any-return]


def test_one_task_holds_the_planner_then_executor_program(tmp_path: Path) -> None:
    """The plan comes in one request with the route's native format; ``done`` follows the
    program (finished after the plan, not after the handover, finished after the run); each
    role gets its system prompt in its route's place."""
    path = tmp_path / "task.jsonl"
    tools = SideEffects(tmp_path / "effects.jsonl")
    llm = _router(path, [json.dumps(PLAN)], _executor_turns())
    with Task.open(path, llm.pin, router=llm, prompt=QUESTION) as task:
        plan = task.run_as("planner", Plan, tools=None, system="You plan.")
        assert task.done
        task.say("Carry out: " + plan.text)
        assert not task.done
        done = task.run("executor", tools=Toolbox([tools.write_file]), system="Carry out.")
        assert task.done

    assert plan.output == Plan(**PLAN)
    assert (plan.steps, done.text, done.steps) == (1, "Done.", 2)
    (planned,) = (_body(r) for r in llm.requests_for("planner"))
    assert planned["output_config"]["format"]["type"] == "json_schema"
    assert planned["system"][0]["text"] == "You plan."
    executed = [_body(r) for r in llm.requests_for("executor")]
    assert [b["instructions"] for b in executed] == ["Carry out.", "Carry out."]
    assert [r["tool"] for r in tools.runs()] == ["write_file"]


def test_the_program_run_again_replays_from_the_file(tmp_path: Path) -> None:
    """Run again from the top, the program returns the same values with no model call, no
    tool run and no new record; the typed answer comes back validated from the file."""
    path = tmp_path / "task.jsonl"
    tools = SideEffects(tmp_path / "effects.jsonl")
    llm = _router(path, [json.dumps(PLAN)], _executor_turns())
    with Task.open(path, llm.pin, router=llm, prompt=QUESTION) as task:
        first = _program(task, tools)
    lines = path.read_bytes()
    requests = len(llm.script.requests)

    with Task.open(path, llm.pin, router=llm, prompt=QUESTION) as again:
        assert again.done
        assert _program(again, tools) == first
    assert isinstance(first[0].output, Plan)
    assert len(llm.script.requests) == requests
    assert path.read_bytes() == lines
    assert len(tools.runs()) == 1


def test_a_program_cut_mid_run_resumes_its_run_with_the_recorded_system_prompt(
    tmp_path: Path,
) -> None:
    """A run cut inside a tool resumes where it stopped, sending the system prompt the cut
    run sent (though the program now gives another), the handover not said again."""
    path = tmp_path / "task.jsonl"
    calls = []

    def write_file(path: str, text: str) -> str:
        """Write a file."""
        calls.append(path)
        if len(calls) == 1:
            raise KeyboardInterrupt  # the process stops mid-tool
        return "written"

    box = Toolbox([write_file], repeatable={"write_file"})
    llm = _router(path, [json.dumps(PLAN)], _executor_turns())
    with Task.open(path, llm.pin, router=llm, prompt=QUESTION) as task:
        plan = task.run_as("planner", Plan, tools=None)
        task.say("Carry out: " + plan.text)
        with pytest.raises(KeyboardInterrupt):
            task.run("executor", tools=box, system="First words.")
        assert not task.done

    with Task.open(path, llm.pin, router=llm) as again:
        assert again.run_as("planner", Plan, tools=None) == plan
        again.say("Carry out: " + plan.text)
        assert again.run("executor", tools=box, system="Other words.").text == "Done."
        history = again.history
    sent = [_body(r)["instructions"] for r in llm.requests_for("executor")]
    assert sent == ["First words.", "First words."]
    said = [e for e in history if isinstance(e, UserText)]
    assert [e.text for e in said] == [QUESTION, "Carry out: " + plan.text]
    assert calls == ["a.py", "a.py"]


def test_the_system_prompt_is_recorded_when_it_changes(tmp_path: Path) -> None:
    """A call's start record holds its system prompt only when it differs from the one
    before (``""``: none from there on)."""
    path = tmp_path / "task.jsonl"
    llm = ScriptedRouter({"executor": ["One.", "Two.", "Three."]}, store=FileTaskStore(path))
    with Task.open(path, llm.pin, router=llm, prompt=QUESTION) as task:
        for system in ("Be brief.", "Be brief.", None):
            task.run("executor", tools=None, system=system)
            task.say("More.")
    starts = [
        json.loads(line)["program"]
        for line in path.read_bytes().splitlines()
        if b'"program"' in line and b'"started"' in line
    ]
    assert [s.get("system") for s in starts] == ["Be brief.", None, ""]
    chat = [_body(r)["messages"][0] for r in llm.script.requests]
    assert [m["role"] for m in chat] == ["system", "system", "user"]


@pytest.mark.parametrize(
    ("changed", "recorded", "asked"),
    [
        ({"role": "executor"}, "run_as('planner', Plan)", "run_as('executor', Plan)"),
        ({"output_type": "Other"}, "run_as('planner', Plan)", "run_as('planner', Other)"),
        ({"handover": "Do: "}, "say('Carry out: ", "say('Do: "),
    ],
)
def test_a_program_that_asks_something_else_is_refused_and_writes_nothing(
    tmp_path: Path, changed: dict[str, str], recorded: str, asked: str
) -> None:
    """Another role, another answer type or another text at a recorded point raises
    `TaskDiverged` naming the recorded call and the one asked; the file is unchanged."""
    path = tmp_path / "task.jsonl"
    tools = SideEffects(tmp_path / "effects.jsonl")
    llm = _router(path, [json.dumps(PLAN)], _executor_turns())
    with Task.open(path, llm.pin, router=llm, prompt=QUESTION) as task:
        _program(task, tools)
    lines = path.read_bytes()

    class Other(BaseModel):
        steps: list[str]

    role = changed.get("role", "planner")
    answer = Other if changed.get("output_type") else Plan
    handover = changed.get("handover", "Carry out: ")

    def program(task: Task) -> None:
        plan = task.run_as(role, answer, tools=None)
        task.say(handover + plan.text)

    with Task.open(path, llm.pin, router=llm) as again, pytest.raises(TaskDiverged) as caught:
        program(again)
    assert caught.value.recorded.startswith(recorded)
    assert caught.value.asked.startswith(asked)
    assert recorded in str(caught.value)
    assert path.read_bytes() == lines


def test_a_step_replays_as_it_returned(tmp_path: Path) -> None:
    """A finished step, asked again, returns its reply, results and usage from the file."""
    path = tmp_path / "task.jsonl"
    tools = SideEffects(tmp_path / "effects.jsonl")
    llm = ScriptedRouter(
        {"executor": [reply("Looking.", ToolUse("read_file", {"path": "a.py"}))]},
        store=FileTaskStore(path),
    )
    box = Toolbox([tools.read_file])
    with Task.open(path, llm.pin, router=llm, prompt=QUESTION) as task:
        first = task.step("executor", tools=box)
    with Task.open(path, llm.pin, router=llm) as again:
        replayed = again.step("executor", tools=box)
    assert replayed.completion.events == first.completion.events
    assert replayed.completion.usage == first.completion.usage
    assert replayed.results == first.results
    assert replayed.more
    assert len(llm.script.requests) == 1


def test_a_native_answer_that_does_not_validate_is_told_why_in_the_log(tmp_path: Path) -> None:
    """With ``repair_attempts``, the model's invalid answer is answered by a user message
    in the log and the file, and the next reply is the answer; without, it fails."""
    path = tmp_path / "task.jsonl"
    llm = _router(path, ['{"steps": "one"}', json.dumps(PLAN)], [])
    with Task.open(path, llm.pin, router=llm, prompt=QUESTION) as task:
        plan = task.run_as("planner", Plan, tools=None, repair_attempts=1)
        history = task.history
    assert plan.output == Plan(**PLAN)
    assert plan.steps == 2
    feedback = [e for e in history if isinstance(e, UserText)][-1]
    assert "does not validate as Plan" in feedback.text

    other = tmp_path / "other.jsonl"
    llm = _router(other, ['{"steps": "one"}'], [])
    with (
        Task.open(other, llm.pin, router=llm, prompt=QUESTION) as task,
        pytest.raises(OutputValidationError),
    ):
        task.run_as("planner", Plan, tools=None)


def test_a_typed_answer_without_a_native_format_asks_for_it_in_the_log(tmp_path: Path) -> None:
    """Where the model has no native format (one the rules do not know), the run's end is
    followed by a user message asking for the answer, in the log and the request, then
    the answer tool's call."""
    path = tmp_path / "task.jsonl"
    llm = ScriptedRouter(
        {"executor": ["Looked.", reply(ToolUse("Plan", PLAN))]}, store=FileTaskStore(path)
    )
    with Task.open(path, llm.pin, router=llm, prompt=QUESTION) as task:
        plan = task.run_as("executor", Plan, tools=None)
        history = task.history
    assert plan.output == Plan(**PLAN)
    ask = answer_request(Plan, native=False)
    assert UserText(text=ask) in history
    last = llm.script.requests[-1]
    assert last.user_texts[-1] == ask
    assert any(isinstance(e, ToolCall) and e.tool == "Plan" for e in history)


def test_a_call_retried_after_it_failed_goes_on_as_one_program_call(tmp_path: Path) -> None:
    """A run asked again in the same opening after it stopped at a limit goes on with the
    stopped one (one record), so the program run again from the top replays one run."""
    path = tmp_path / "task.jsonl"
    tools = SideEffects(tmp_path / "effects.jsonl")
    llm = _router(path, [], _executor_turns())
    box = Toolbox([tools.write_file])
    with Task.open(path, llm.pin, router=llm, prompt=QUESTION) as task:
        with pytest.raises(RunLimitReached):
            task.run("executor", tools=box, max_steps=1)
        done = task.run("executor", tools=box)
    starts = [line for line in path.read_bytes().splitlines() if b'"started"}}' in line]
    assert len([s for s in starts if b'"program"' in s]) == 1
    assert done.steps == 2

    with Task.open(path, llm.pin, router=llm) as again:
        assert again.run("executor", tools=box) == done
