"""The approval sequence of `test_approval_kills`, each phase in its own process, SIGKILLed
at its ``kill_at``-th kill point (`tests.agent._killed_loop`'s points: each record's write,
before and halfway; each model request out and its reply back; each tool before and after
its effect).

``run``: the task opened and its executor run (claude-sonnet-4-5, messages route), the
reply asking for ``git_push`` (needs approval, not repeatable) and ``read_file``
(repeatable); the run stops with the push pending, or, once it is approved, runs it and
finishes. ``approve``: what ``nisse-llm task approve`` does, with only the store.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from nisse_llm.agent import Task
from nisse_llm.errors import ApprovalRefused
from nisse_llm.task.approvals import decision_record
from nisse_llm.task.logstore import FileTaskStore
from nisse_llm.testing import RecordedRequest, ToolUse, Turn, reply
from nisse_llm.tools import Toolbox
from nisse_llm.transport.routers import RoleRouter
from tests.agent._killed_loop import PointedTransport, Points, _pointed_write
from tests.task.helpers import make_pin

QUESTION = "Push the fix."
ROLE = "planner"
FINAL = "Pushed."


def upstream(request: RecordedRequest) -> Turn:
    """The push and the read first; the answer once both results are in."""
    if request.tool_results:
        return reply(FINAL)
    return reply(
        "Reading, then pushing.",
        ToolUse("git_push", {"branch": "fix"}),
        ToolUse("read_file", {"path": "a.py"}),
    )


def _tools(points: Points, effects: Path) -> Toolbox:
    def effect(tool: str) -> None:
        points.at(f"before-{tool}")
        with effects.open("a", encoding="utf-8") as out:
            out.write(json.dumps({"tool": tool}) + "\n")
            out.flush()
            os.fsync(out.fileno())
        points.at(f"after-{tool}")

    def read_file(path: str) -> str:
        """Read a file."""
        effect("read_file")
        return f"contents of {path}"

    def git_push(branch: str) -> str:
        """Push a branch."""
        effect("git_push")
        return f"pushed {branch}"

    return Toolbox([read_file, git_push], repeatable={"read_file"}, needs_approval={"git_push"})


def run_phase(phase: str, path: str, effects: str, kill_at: int, notes: str) -> None:
    """Run ``phase`` (``"run"`` or ``"approve"``) to its end or to the kill point; the run
    notes what it returned in ``results.jsonl`` beside ``path``."""
    points = Points(kill_at, Path(notes))
    os.write = _pointed_write(points, os.write)  # type: ignore[assignment]
    if phase == "approve":
        with FileTaskStore(path) as store:
            lease = store.lease()
            try:
                found = store.read()
                call_id = found.approvals[0].approval.call_id
                record = decision_record(found.records, call_id, "approved", by="ana")
                store.append_approval(record)
            except ApprovalRefused as refused:  # approved before the kill: said, not written
                with (Path(path).parent / "refused.txt").open("a", encoding="utf-8") as out:
                    out.write(refused.reason + "\n")
            finally:
                if lease is not None:
                    lease.close()
        return
    pin = make_pin()
    store = FileTaskStore(path)
    with (
        RoleRouter.from_pin(pin, store=store, transport=PointedTransport(points, upstream)) as llm,
        Task.open(store, pin, router=llm, prompt=QUESTION) as task,
    ):
        result = task.run(ROLE, tools=_tools(points, Path(effects)))
        done = {"text": result.text, "pending": len(result.pending_approvals)}
    with (Path(path).parent / "results.jsonl").open("a", encoding="utf-8") as out:
        out.write(json.dumps(done) + "\n")
