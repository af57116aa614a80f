"""Ctrl-C is a kill: a `KeyboardInterrupt` while a `Task.run`'s or an `AsyncTask.run`'s
model call is out leaves the task file a SIGKILL at the same point leaves, and
`Task.open` resumes both to the same log (a task cancelled, and an interrupt inside a
tool: tests/agent/test_task.py)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from nisse_llm import Task
from nisse_llm.task.logstore import FileTaskStore
from nisse_llm.task.records import StoredCall, StoredEvent, StoredToolRun
from tests.agent._driver import acut_run, cut_run, toolbox
from tests.agent.helpers import QUESTION, SideEffects, numbered, scripted, two_steps

ROOT = Path(__file__).resolve().parents[2]


def _second_call_out(path: Path) -> None:
    """Wait until the task's second model call has left (its start record is written)."""
    while len(FileTaskStore(path).read().starts) < 2:
        time.sleep(0.01)


def _shape(path: Path) -> list[Any]:
    """The task file's records as what a resume reads: each event (call ids numbered),
    each call's and tool run's outcome, and every other record's kind."""
    records = FileTaskStore(path).read().records
    events = numbered([r.event for r in records if isinstance(r, StoredEvent)])
    out: list[Any] = []
    for record in records:
        if isinstance(record, StoredEvent):
            out.append(events.pop(0))
        elif isinstance(record, StoredCall):
            out.append(("call", record.llm_call.role, record.llm_call.outcome))
        elif isinstance(record, StoredToolRun):
            out.append(("tool_run", record.tool_run.tool, record.tool_run.outcome))
        else:
            out.append(type(record).__name__)
    return out


def _interrupted(folder: Path, kind: str) -> Path:
    """The task run in this process (a `Task`, or an `AsyncTask` under `asyncio.run`),
    Ctrl-C'd (SIGINT) while its second call is out."""
    path = folder / "task.jsonl"

    def interrupt() -> None:
        _second_call_out(path)
        os.kill(os.getpid(), signal.SIGINT)

    def run() -> None:
        if kind == "sync":
            cut_run(path, folder / "effects.jsonl")
        else:
            asyncio.run(acut_run(path, folder / "effects.jsonl"))

    watcher = threading.Thread(target=interrupt, daemon=True)
    watcher.start()
    with pytest.raises(KeyboardInterrupt):
        run()
    watcher.join(30)
    return path


def _killed(folder: Path) -> Path:
    """The task run in another process, SIGKILLed while its second call is out."""
    path = folder / "task.jsonl"
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.agent._driver", "call", str(path), str(folder / "e.jsonl")],
        cwd=ROOT,
        stderr=subprocess.PIPE,
    )
    try:
        _second_call_out(path)
    finally:
        process.kill()
        process.communicate(timeout=60)
    (folder / "e.jsonl").rename(folder / "effects.jsonl")
    return path


def _resumed(path: Path) -> list[Any]:
    """Reopen the task and run it to the end; its log with call ids numbered."""
    _, second, final = two_steps()
    llm = scripted(path, second, final)
    tools = SideEffects(path.parent / "effects.jsonl")
    with Task.open(path, llm.pin, router=llm) as task:
        assert len(task.unknown_calls) == 1
        assert task.run("executor", tools=toolbox(tools)).text == "Fixed it."
        return numbered(task.history)


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_ctrl_c_during_a_model_call_leaves_what_a_sigkill_there_leaves(
    tmp_path: Path, kind: str
) -> None:
    """Cut at the same point (the second call out), Ctrl-C and SIGKILL leave the same
    records (the call's start with no end: an unknown call), and both resume to the log
    of an uninterrupted run, each tool run once."""
    (tmp_path / "ctrl-c").mkdir()
    (tmp_path / "kill").mkdir()
    interrupted = _interrupted(tmp_path / "ctrl-c", kind)
    killed = _killed(tmp_path / "kill")

    assert _shape(interrupted) == _shape(killed)
    assert _shape(killed)[-1] == ("call", "executor", "started")
    finished = _resumed(interrupted)
    assert finished == _resumed(killed)
    assert _shape(interrupted) == _shape(killed)

    straight = tmp_path / "straight.jsonl"
    llm = scripted(straight, *two_steps())
    with Task.open(straight, llm.pin, router=llm, prompt=QUESTION) as task:
        task.run("executor", tools=toolbox(SideEffects(tmp_path / "effects.jsonl")))
        assert finished == numbered(task.history)
    for folder in ("ctrl-c", "kill"):
        runs = SideEffects(tmp_path / folder / "effects.jsonl").runs()
        assert [r["tool"] for r in runs] == ["read_file", "write_file"]
