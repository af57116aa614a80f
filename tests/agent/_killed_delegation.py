"""A planner delegating two sub-tasks, SIGKILLed at its ``kill_at``-th kill point (the points
of `tests.agent._killed_loop`), for `test_delegation_crash_equivalence`.

The program, run from the top in every process: ``delegate`` twice to the ``delegate`` role
(claude-sonnet-4-5, messages route), each child reading (repeatable) and writing (not) one
module, then the planner's ``run`` sums up. The upstream answers as a function of the
request alone and notes each request (which task asked) in ``requests.txt``.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from nisse_llm.agent import Task
from nisse_llm.task.logstore import FileTaskStore
from nisse_llm.testing import RecordedRequest, ToolUse, Turn, reply
from nisse_llm.transport.routers import RoleRouter
from tests.agent._killed_loop import PointedTransport, Points, _pointed_write, tools
from tests.task.helpers import make_pin

QUESTION = "Tidy the two modules."
PROMPTS = ("Tidy s1.", "Tidy s2.")
_MODULE = re.compile(r"Tidy (s\d)\.")
_noted: Path | None = None


def upstream(request: RecordedRequest) -> Turn:
    """A child's first request reads and writes its module, its second answers; the
    planner's request (after both children) sums up."""
    asked = [m for text in request.user_texts for m in _MODULE.findall(text)]
    key = asked[-1] if asked else "planner"
    key += "-answer" if request.tool_results else ""
    if _noted is not None:
        with _noted.open("a", encoding="utf-8") as out:
            out.write(key + "\n")
    if key == "planner":
        return reply("Both modules are tidy.")
    module = key.split("-")[0]
    if key.endswith("-answer"):
        return reply(f"{module} is tidy.")
    return reply(
        f"Tidying {module}.",
        ToolUse("read_file", {"path": f"{module}-notes.txt"}),
        ToolUse("write_file", {"path": f"{module}-out.py", "text": "tidy"}),
    )


def run_program(path: str, effects: str, kill_at: int, notes: str, results: str) -> None:
    """Run the program from the top (to its end or to the kill point)."""
    global _noted
    _noted = Path(path).parent / "requests.txt"
    points = Points(kill_at, Path(notes))
    os.write = _pointed_write(points, os.write)  # type: ignore[assignment]
    pin = make_pin(planner="claude-sonnet-4-5", delegate="claude-sonnet-4-5")
    box = tools(points, Path(effects))
    transport = PointedTransport(points, upstream)
    with (
        RoleRouter.from_pin(pin, store=FileTaskStore(path), transport=transport) as llm,
        Task.open(llm.store, pin, router=llm, prompt=QUESTION) as task,  # type: ignore[arg-type]
    ):
        done = [task.delegate("delegate", prompt, tools=box).text for prompt in PROMPTS]
        summary = task.run("planner", tools=None, system="Your delegates did the work.")
        values = {"children": done, "text": summary.text, "keys": task.children}
    with open(results, "a", encoding="utf-8") as out:
        out.write(json.dumps(values) + "\n")
