"""A tool that needs approval: the run stops with the call pending while the calls beside it
run; a person approves or denies it (in the task, or from another process with only the
store); the next run runs an approved call once and answers a denied one with the reason."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from pydantic import BaseModel

from nisse_llm import ApprovalRefused, AsyncTask, Task
from nisse_llm.events.canonical import ToolCall, ToolResult
from nisse_llm.task.logstore import FileTaskStore
from nisse_llm.testing import ToolUse, reply
from nisse_llm.tools import Toolbox
from tests.agent.helpers import QUESTION, SideEffects, scripted
from tests.task.helpers import task_cli


class Repo(SideEffects):
    """``read_file`` and ``git_push`` (which needs approval), each run noted."""

    def git_push(self, branch: str) -> str:
        """Push a branch."""
        self._note("git_push", branch)
        return f"pushed {branch}"

    def box(self) -> Toolbox:
        return Toolbox([self.read_file, self.git_push], needs_approval={"git_push"})


def _turns() -> list[object]:
    return [
        reply(
            "Reading, then pushing.",
            ToolUse("git_push", {"branch": "fix"}),
            ToolUse("read_file", {"path": "a.py"}),
        ),
        "Pushed.",
    ]


def test_a_run_stops_on_the_pending_call_and_an_approval_from_another_process_runs_it_once(
    tmp_path: Path,
) -> None:
    """The reply asks for ``git_push`` and ``read_file``: the read runs, the run returns one
    pending approval; ``nisse-llm task approve`` from another process records who; the
    task reopened runs the push once (its start record written first) and finishes."""
    path = tmp_path / "fix.jsonl"
    repo = Repo(tmp_path / "effects.log")
    llm = scripted(path, *_turns())
    with Task.open(path, llm.pin, router=llm, prompt=QUESTION) as task:
        first = task.run("executor", tools=repo.box())
        assert not task.done
        (waiting,) = task.pending_approvals
    (pending,) = first.pending_approvals
    assert (pending.tool, pending.arguments) == ("git_push", {"branch": "fix"})
    assert waiting.call_id == pending.call_id
    assert waiting.at is not None
    assert [run["tool"] for run in repo.runs()] == ["read_file"]
    assert first.steps == 1

    store = ["--store", str(tmp_path)]
    listed = task_cli("list", *store).splitlines()
    assert listed[2].split()[2] == "awaiting-approval"
    assert listed[2].split()[6] == "1"
    shown = task_cli("pending", "fix", *store)
    assert pending.call_id in shown
    assert '{"branch": "fix"}' in shown
    task_cli("approve", "fix", pending.call_id, "--by", "ana", *store)
    again = task_cli("approve", "fix", pending.call_id, "--by", "bo", *store, status=2)
    assert "approved already by ana" in again

    with Task.open(path, llm.pin, router=llm, prompt=QUESTION) as task:
        done = task.run("executor", tools=repo.box())
        assert task.done
        assert task.pending_approvals == []
        history = task.history
    assert done.text == "Pushed."
    assert done.pending_approvals == ()
    assert [run["tool"] for run in repo.runs()] == ["read_file", "git_push"]
    result = next(e for e in history if isinstance(e, ToolResult) and e.call_id == pending.call_id)
    assert result == ToolResult(call_id=pending.call_id, output="pushed fix")
    found = FileTaskStore(path).read()
    (decided,) = [r for r in found.approvals if r.approval.outcome == "approved"]
    assert decided.approval.by == "ana"
    (started,) = [r for r in found.tool_runs if r.tool_run.call_id == pending.call_id]
    assert decided.seq < started.seq
    assert [e.call_id for e in history if isinstance(e, ToolResult)][-1] == pending.call_id


def test_a_denial_reaches_the_model_as_an_error_result_with_its_reason(tmp_path: Path) -> None:
    """``task.deny`` (in the process that ran): the next run answers the call with an error
    result carrying the reason and who denied it, and the tool never runs."""
    path = tmp_path / "task.jsonl"
    repo = Repo(tmp_path / "effects.log")
    llm = scripted(path, *_turns())
    with Task.open(path, llm.pin, router=llm, prompt=QUESTION) as task:
        (pending,) = task.run("executor", tools=repo.box()).pending_approvals
        task.deny(pending.call_id, "not on a Friday", by="ana")
        done = task.run("executor", tools=repo.box())
    assert done.text == "Pushed."
    assert [run["tool"] for run in repo.runs()] == ["read_file"]
    last = llm.requests_for("executor")[-1]
    assert any("not on a Friday" in text and "ana" in text for text in last.tool_results)


def test_decisions_refused_with_their_reason_and_nothing_written(tmp_path: Path) -> None:
    """An approval of a call that awaits none, and a second decision of one call, are
    `ApprovalRefused` with the reason, and write nothing."""
    path = tmp_path / "task.jsonl"
    repo = Repo(tmp_path / "effects.log")
    llm = scripted(path, *_turns())
    with Task.open(path, llm.pin, router=llm, prompt=QUESTION) as task:
        (pending,) = task.run("executor", tools=repo.box()).pending_approvals
        read_call = next(
            e for e in task.history if isinstance(e, ToolCall) and e.tool == "read_file"
        )
        before = path.read_bytes()
        with pytest.raises(ApprovalRefused, match="no call 'nope' awaits approval"):
            task.approve("nope")
        with pytest.raises(ApprovalRefused, match="awaits approval"):
            task.approve(read_call.call_id)
        assert path.read_bytes() == before
        task.approve(pending.call_id, by="ana")
        with pytest.raises(ApprovalRefused, match="approved already by ana") as refused:
            task.deny(pending.call_id, "too late", by="bo")
        assert refused.value.call_id == pending.call_id
    denied = task_cli("deny", "task", "c9", "--reason", "no", "--store", str(tmp_path), status=2)
    assert "no call 'c9' awaits approval" in denied


def test_a_step_stops_on_the_pending_call_and_asked_again_goes_on(tmp_path: Path) -> None:
    """`step` leaves the call pending and is not done; asked again after the approval it
    runs the call and returns the same reply, with no model call."""
    path = tmp_path / "task.jsonl"
    repo = Repo(tmp_path / "effects.log")
    llm = scripted(path, *_turns())
    with Task.open(path, llm.pin, router=llm, prompt=QUESTION) as task:
        first = task.step("executor", tools=repo.box())
        (pending,) = first.pending_approvals
        assert [r.call_id for r in first.results] != [pending.call_id]
        task.approve(pending.call_id)
        again = task.step("executor", tools=repo.box())
    assert again.pending_approvals == ()
    assert again.completion.events == first.completion.events
    assert len(llm.requests_for("executor")) == 1
    assert [run["tool"] for run in repo.runs()] == ["read_file", "git_push"]


def test_async_task_approves_and_runs_the_call(tmp_path: Path) -> None:
    """`AsyncTask`: the same, with the reply's other calls run concurrently."""
    path = tmp_path / "task.jsonl"
    repo = Repo(tmp_path / "effects.log")
    llm = scripted(path, *_turns(), asynchronous=True)

    async def main() -> tuple[str, int]:
        async with AsyncTask.open(llm.store, llm.pin, router=llm, prompt=QUESTION) as task:
            first = await task.run("executor", tools=repo.box(), max_concurrent_tools=3)
            (pending,) = first.pending_approvals
            assert [p.call_id for p in await task.pending_approvals] == [pending.call_id]
            await task.approve(pending.call_id, by="ana")
            done = await task.run("executor", tools=repo.box(), max_concurrent_tools=3)
            return done.text, len(await task.pending_approvals)

    assert asyncio.run(main()) == ("Pushed.", 0)
    assert sorted(run["tool"] for run in repo.runs()) == ["git_push", "read_file"]


def test_a_call_recorded_pending_waits_though_the_box_no_longer_asks(tmp_path: Path) -> None:
    """A call the file records pending waits for its decision even when the tools given to
    the next run do not mark it: a reopened task never runs it unapproved."""
    path = tmp_path / "task.jsonl"
    repo = Repo(tmp_path / "effects.log")
    llm = scripted(path, *_turns())
    with Task.open(path, llm.pin, router=llm, prompt=QUESTION) as task:
        task.run("executor", tools=repo.box())
    with Task.open(path, llm.pin, router=llm, prompt=QUESTION) as task:
        again = task.run("executor", tools=[repo.read_file, repo.git_push])
    assert len(again.pending_approvals) == 1
    assert [run["tool"] for run in repo.runs()] == ["read_file"]
    assert task_cli("pending", "--store", str(tmp_path)).startswith("1 call(s) await")


class Verdict(BaseModel):
    """Whether the push went out."""

    pushed: bool


def test_run_as_stopped_on_an_approval_answers_once_it_is_given(tmp_path: Path) -> None:
    """`run_as` stops as `run` does (no answer yet: ``output`` None, not done); asked again
    after the approval it runs the call and answers."""
    path = tmp_path / "task.jsonl"
    repo = Repo(tmp_path / "effects.log")
    llm = scripted(path, *_turns(), reply(ToolUse("Verdict", {"pushed": True})))
    with Task.open(path, llm.pin, router=llm, prompt=QUESTION) as task:
        first = task.run_as("executor", Verdict, tools=repo.box())
        assert first.output is None
        assert not task.done
        task.approve(first.pending_approvals[0].call_id)
    with Task.open(path, llm.pin, router=llm, prompt=QUESTION) as task:
        answer = task.run_as("executor", Verdict, tools=repo.box())
        assert task.done
    assert answer.output == Verdict(pushed=True)
    assert [run["tool"] for run in repo.runs()] == ["read_file", "git_push"]


def test_needs_approval_names_tools_of_the_box_and_mcp_servers() -> None:
    """``needs_approval`` takes tool names (an MCP server's too), never a bare string, and
    refuses a name the box lacks."""
    from tests.mcp.helpers import stdio_test_server

    repo = Repo(Path("unused.log"))
    with pytest.raises(TypeError, match="needs_approval holds tool names"):
        Toolbox([repo.git_push], needs_approval="git_push")
    with pytest.raises(ValueError, match="needs_approval names no tool of the box: push"):
        Toolbox([repo.git_push], needs_approval={"push"})
    with Toolbox.from_mcp(stdio_test_server(), needs_approval={"echo"}) as box:
        assert box.needs_approval("echo")
        assert not box.needs_approval("shout")
