"""A task SIGKILLed mid-call, mid-compaction and mid-append resumes to what the file states."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from nisse_llm.events.canonical import Compaction, ToolResult, UserText
from nisse_llm.task.compaction import compact, estimate_log_tokens
from nisse_llm.task.logstore import FileTaskStore
from tests.task.compaction._killed_task import FIRST_USAGE, QUESTION, SOURCE
from tests.task.helpers import BASE_URL, ROLES, TOKEN

ROOT = Path(__file__).resolve().parents[3]


def _kill_at_ready(mode: str, path: Path) -> None:
    agent = subprocess.Popen(
        [sys.executable, "-m", "tests.task.compaction._killed_task", mode, str(path)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert agent.stdout is not None
    line = agent.stdout.readline()
    if line != b"ready\n":
        agent.kill()
        _, err = agent.communicate(timeout=30)
        pytest.fail(f"the task did not reach its kill point: {line!r} {err.decode()[-2000:]}")
    agent.send_signal(signal.SIGKILL)
    agent.communicate(timeout=30)
    assert agent.returncode == -signal.SIGKILL


def test_killed_mid_call_the_call_is_listed_as_unknown(tmp_path: Path) -> None:
    """Killed while a request is out, the resumed task lists that call (role, model, route) as unknown, counted apart from the ended one."""
    path = tmp_path / "task.jsonl"
    _kill_at_ready("call", path)
    task = FileTaskStore(path).resume(TOKEN, base_url=BASE_URL)
    (unknown,) = task.unknown_calls
    assert (unknown.llm_call.role, unknown.llm_call.model, unknown.llm_call.route) == (
        "planner",
        ROLES["planner"],
        "anthropic_messages",
    )
    assert task.usage.total.calls == 1
    assert task.usage.total.unknown_calls == 1
    assert task.usage.total.input == FIRST_USAGE.input
    assert task.usage.by_role["planner"].unknown_calls == 1
    assert task.events[0] == UserText(text=QUESTION)
    assert task.events == [record.event for record in task.history]
    assert task.pending_calls == []


def test_killed_mid_compaction_nothing_is_compacted_and_the_summary_call_is_unknown(
    tmp_path: Path,
) -> None:
    """Killed while the delegate summarises, the view is the full log (no compaction was recorded), the refused call is recorded, and the summary call is unknown."""
    path = tmp_path / "task.jsonl"
    _kill_at_ready("compaction", path)
    task = FileTaskStore(path).resume(TOKEN, base_url=BASE_URL)
    assert not any(isinstance(e, Compaction) for e in task.events)
    assert task.events == [record.event for record in task.history]
    assert [c.llm_call.outcome for c in FileTaskStore(path).read().calls] == [
        "ok",
        "ContextWindowExceeded",
    ]
    (unknown,) = task.unknown_calls
    assert unknown.llm_call.role == "delegate"
    assert task.usage.total.calls == 2
    assert task.usage.total.unknown_calls == 1


def test_killed_mid_retry_the_compaction_holds_and_the_retry_is_unknown(tmp_path: Path) -> None:
    """Killed while the compacted retry is out, the view is compacted, the history full, and the retry is an unknown call marked as compacted."""
    path = tmp_path / "task.jsonl"
    _kill_at_ready("retry", path)
    task = FileTaskStore(path).resume(TOKEN, base_url=BASE_URL)
    elided = [e for e in task.events if isinstance(e, ToolResult)]
    assert [e.output for e in elided] == [
        f"[Output elided to fit the context window: {len(SOURCE)} characters removed.]"
    ]
    assert any(isinstance(r.event, ToolResult) and r.event.output == SOURCE for r in task.history)
    assert isinstance(task.history[-1].event, Compaction)
    (unknown,) = task.unknown_calls
    assert (unknown.llm_call.role, unknown.llm_call.compacted) == ("planner", "overflow")
    assert task.usage.total.calls == 2
    assert task.usage.total.unknown_calls == 1


def test_killed_mid_append_of_a_compaction_the_torn_record_is_dropped(tmp_path: Path) -> None:
    """Killed with half a compaction record written, the resume removes the torn half and the view is the uncompacted log."""
    path = tmp_path / "task.jsonl"
    _kill_at_ready("append", path)
    task = FileTaskStore(path).resume(TOKEN, base_url=BASE_URL)
    assert task.repaired is not None
    assert b'"compaction"' in task.repaired
    assert task.events == [record.event for record in task.history]
    assert any(isinstance(e, ToolResult) and e.output == SOURCE for e in task.events)
    assert task.unknown_calls == []
    assert task.usage.total.calls == 1
    # The task continues: the compaction can now be recorded whole.
    short = compact(
        task.events, budget_tokens=estimate_log_tokens(task.events) // 3, keep_last_turns=1
    )
    task.store.append_compaction(short)
    again = FileTaskStore(path).resume(TOKEN, base_url=BASE_URL)
    assert not any(isinstance(e, ToolResult) and e.output == SOURCE for e in again.events)
    assert isinstance(again.history[-1].event, Compaction)
    assert len(again.history) == len(task.history) + 1
