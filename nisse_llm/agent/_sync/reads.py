# Generated from nisse_llm/agent/_async/reads.py by scripts/gen_sync.py (unasync); do not edit.
"""What an open task reads back of itself, written once: ``_async/reads.py`` is the source,
``_sync/reads.py`` is generated from it by ``scripts/gen_sync.py`` (unasync).

``events``, ``history`` and ``usage`` are kept as the task appends (the store read once at
opening); the records a person or another process may add (approvals, sub-tasks) are read
from the store when asked.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from nisse_llm.agent._base import (
    TaskBase,
    history_of,
    pending_approvals_of,
    tool_runs_of,
    unknown_calls_of,
    unknown_tool_runs_of,
    usage_of,
    view_of,
)
from nisse_llm.agent._sync import delegation, io
from nisse_llm.task.delegation import children_of

if TYPE_CHECKING:
    from nisse_llm.events.canonical import CanonicalEvent, ToolCall
    from nisse_llm.task.approvals import PendingApproval
    from nisse_llm.task.logstore import (
        LogRead,
        TaskStore,  # noqa: F401  (the base's string names it)
    )
    from nisse_llm.task.records import StoredCall, StoredToolRun, UsageTotal, UsageTotals

__all__ = ["TaskReads"]

R = TypeVar("R")


class TaskReads(TaskBase["TaskStore"]):
    """What `Task` reads back of its own state (its base: use `Task`)."""

    @property
    def events(self) -> io.Read[list[CanonicalEvent]]:
        """The log the next request sends: the file's compacted view, repaired (kept as the
        task appends, the store read once at opening: ``task.events``)."""
        self._check_open("events")
        return self._keeping(view_of)

    @property
    def history(self) -> io.Read[list[CanonicalEvent]]:
        """Every event the task file holds, compactions included, in file order (kept as
        the task appends: ``task.history``)."""
        self._check_open("history")
        return self._keeping(history_of)

    @property
    def usage(self) -> io.Read[UsageTotals]:
        """The usage of every recorded call (tokens and cost, overall and per role; kept
        as the task appends: ``task.usage``)."""
        self._check_open("usage")
        return self._keeping(usage_of)

    @property
    def unknown_calls(self) -> io.Read[list[StoredCall]]:
        """The start records of model calls that never ended: possibly billed (read from the
        store: ``task.unknown_calls``)."""
        self._check_open("unknown_calls")
        return self._reading(unknown_calls_of)

    @property
    def unknown_tool_runs(self) -> io.Read[list[ToolCall]]:
        """The tool calls whose run was cut and whose outcome is unknown (answered by an
        error result saying so; read from the store: ``task.unknown_tool_runs``)."""
        self._check_open("unknown_tool_runs")
        return self._reading(unknown_tool_runs_of)

    @property
    def tool_runs(self) -> io.Read[list[StoredToolRun]]:
        """Every tool-run record of the file (read from the store: ``task.tool_runs``)."""
        self._check_open("tool_runs")
        return self._reading(tool_runs_of)

    @property
    def pending_approvals(self) -> io.Read[list[PendingApproval]]:
        """The tool calls awaiting a person's approval, in the order recorded (read from
        the store: ``task.pending_approvals``)."""
        self._check_open("pending_approvals")
        return self._reading(pending_approvals_of)

    @property
    def children(self) -> io.Read[list[str]]:
        """The keys of the sub-tasks this task delegated to, in order (read from the store:
        ``task.children``)."""
        self._check_open("children")
        return self._reading(lambda found: children_of(found.records))

    @property
    def total_usage(self) -> io.Read[UsageTotal]:
        """The usage of this task and of all its sub-tasks, theirs in turn (read from the
        store: ``task.total_usage``)."""
        self._check_open("total_usage")
        return delegation.total_usage(self._store)

    def _reading(self, part: Callable[[LogRead], R]) -> R:
        return part(self._store.read())

    def _keeping(self, part: Callable[[LogRead], R]) -> R:
        return self._kept.part(part)
