"""The durable agent loop: `Task` and `AsyncTask` open a task file, say, step and run.

A task is begun or resumed in one call (``Task.open(path, pin, prompt=...)``); every
model call and tool run is written before it acts, so a task killed at any instant and
opened again finishes with the log an uninterrupted run would have. What a resumed task
does, and when a run stops, is decided in `nisse_llm.agent.plan` (no I/O);
`AsyncTask` (`nisse_llm.agent._async.task`) is the one source of `Task`, generated
from it by ``scripts/gen_sync.py``.
"""

from __future__ import annotations

from nisse_llm.agent._async.task import AsyncTask
from nisse_llm.agent._sync.task import Task
from nisse_llm.agent.plan import RunResult, Step
from nisse_llm.task.approvals import PendingApproval

__all__ = ["AsyncTask", "PendingApproval", "RunResult", "Step", "Task"]
