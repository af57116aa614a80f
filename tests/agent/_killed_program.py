"""The two-role program of `test_program_crash_equivalence`, SIGKILLed at its ``kill_at``-th
kill point (the points of `tests.agent._killed_loop`: each record's write, before and
halfway; each model request out and its reply back; each tool before and after its effect).

The program, run from the top in every process: the planner (claude-opus-5-5, messages
route) answers a `Plan` with `run_as`; a `say` hands the plan over; the executor
(gpt-6-astra, Responses route) runs two steps of a repeatable ``read_file`` and a
non-repeatable ``write_file``, then answers. Driven by `Task`, or by `AsyncTask` with the
reply's tool calls run concurrently. Each process appends the program's returned values
to ``results`` when it ends, and the upstream notes every request that reaches it.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from nisse_llm.agent import AsyncTask, Task
from nisse_llm.task.logstore import AsyncFileTaskStore, FileTaskStore
from nisse_llm.testing import RecordedRequest, ToolUse, Turn, reply
from nisse_llm.transport.routers import AsyncRoleRouter, RoleRouter
from tests.agent._killed_loop import PointedTransport, Points, _pointed_write, tools
from tests.task.helpers import make_pin

QUESTION = "Tidy the two modules."
PLANNER = "claude-opus-5-5"
EXECUTOR = "gpt-6-astra"
PLAN = {"steps": ["tidy s1", "tidy s2"]}
FINAL = "Both modules are tidy."
HANDOVER = "Carry out this plan: "
_STEP = re.compile(r"s(\d)-")
#: Where the upstream notes the requests it gets (set by `run_program`).
_noted: Path | None = None


class Plan(BaseModel):
    """The planner's plan."""

    steps: list[str]


def upstream(request: RecordedRequest) -> Turn:
    """The reply to a request, a function of the request alone (which role, and which step
    the executor's tool results reach); each request is noted in the requests file."""
    steps = [int(m) for text in request.tool_results for m in _STEP.findall(text)]
    key = "planner" if request.model == PLANNER else f"executor-{max(steps, default=0) + 1}"
    if _noted is not None:
        with _noted.open("a", encoding="utf-8") as out:
            out.write(key + "\n")
    if key == "planner":
        return reply(json.dumps(PLAN))
    step = max(steps, default=0) + 1
    if step > 2:
        return reply(FINAL)
    return reply(
        f"Step {step}.",
        ToolUse("read_file", {"path": f"s{step}-notes.txt"}),
        ToolUse("write_file", {"path": f"s{step}-out.py", "text": f"tidy {step}"}),
    )


def _transport(points: Points) -> PointedTransport:
    return PointedTransport(points, upstream, ("/v1/messages", "/responses"))


def _values(plan: Any, done: Any) -> dict[str, Any]:
    return {
        "plan": plan.output.model_dump(),
        "plan_text": plan.text,
        "plan_steps": plan.steps,
        "text": done.text,
        "steps": done.steps,
    }


def run_program(
    path: str, effects: str, kill_at: int, notes: str, results: str, concurrent: int
) -> None:
    """Run the program from the top (to its end or to the kill point); ``concurrent`` above
    1 drives it with `AsyncTask`, that many tool calls at once. The upstream notes its
    requests in ``requests.txt`` beside ``path``."""
    global _noted
    _noted = Path(path).parent / "requests.txt"
    points = Points(kill_at, Path(notes))
    os.write = _pointed_write(points, os.write)  # type: ignore[assignment]
    pin = make_pin(planner=PLANNER, executor=EXECUTOR)
    box = tools(points, Path(effects))
    if concurrent > 1:
        values = asyncio.run(_async_program(path, pin, points, box, concurrent))
    else:
        with (
            RoleRouter.from_pin(
                pin, store=FileTaskStore(path), transport=_transport(points)
            ) as llm,
            Task.open(llm.store, pin, router=llm, prompt=QUESTION) as task,  # type: ignore[arg-type]
        ):
            plan = task.run_as("planner", Plan, tools=None, system="You plan.")
            task.say(HANDOVER + plan.text)
            done = task.run("executor", tools=box, system="You carry out plans.")
            values = _values(plan, done)
    with open(results, "a", encoding="utf-8") as out:
        out.write(json.dumps(values) + "\n")


async def _async_program(
    path: str, pin: Any, points: Points, box: Any, concurrent: int
) -> dict[str, Any]:
    async with (
        AsyncRoleRouter.from_pin(
            pin, store=AsyncFileTaskStore(path), transport=_transport(points)
        ) as llm,
        AsyncTask.open(llm.store, pin, router=llm, prompt=QUESTION) as task,  # type: ignore[arg-type]
    ):
        plan = await task.run_as("planner", Plan, tools=None, system="You plan.")
        await task.say(HANDOVER + plan.text)
        done = await task.run(
            "executor", tools=box, system="You carry out plans.", max_concurrent_tools=concurrent
        )
        return _values(plan, done)
