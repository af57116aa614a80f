"""A task delegating to sub-tasks: its children's keys, and the record naming a child's
parent.

Pure: no I/O. A parent's ``delegate`` is a call of its program (`ProgramRecord`, op
``"delegate"``) whose start record names the child's key (``child``), written before the
child's first record; the child, a task of its own in the same store, records its parent
in a ``parent`` record::

    {"seq": 12, "at": ..., "program": {"op": "delegate", "role": "delegate",
                                       "text": "...", "child": "fix.1-delegate"}}
    {"seq": 1, "at": ..., "parent": {"key": "fix", "role": "delegate"}}   # in the child

A child's key is its parent's, a dot, the number of its ``delegate`` call in the parent's
program (1 for the program's first call) and its role (`child_key`), so a reopened parent
finds the same child and begins no other.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime

from pydantic import BaseModel, ConfigDict, NonNegativeInt

__all__ = ["ParentRecord", "StoredParent", "child_key", "children_of", "parent_of"]


class ParentRecord(BaseModel):
    """The task a sub-task was delegated by: its ``key``, and the ``role`` delegated to."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    key: str
    role: str


class StoredParent(BaseModel):
    """A `ParentRecord` in the task file."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    seq: NonNegativeInt
    at: datetime
    parent: ParentRecord

    @classmethod
    def now(cls, seq: int, record: ParentRecord) -> StoredParent:
        """A parent record stamped with the current UTC time."""
        return cls(seq=seq, at=datetime.now(UTC), parent=record)


def child_key(parent: str, number: int, role: str) -> str:
    """The key of the child a parent's ``number``-th program call (1 first) delegates to
    ``role``."""
    return f"{parent}.{number}-{role}"


def children_of(records: Iterable[object]) -> list[str]:
    """The keys of the children a task's program records, in order (read by attribute:
    `nisse_llm.task.records` imports this module, so it cannot be imported back)."""
    programs = (getattr(r, "program", None) for r in records)
    return [p.child for p in programs if p is not None and p.child and p.outcome == "started"]


def parent_of(records: Iterable[object]) -> ParentRecord | None:
    """The parent a sub-task records (None: a task no one delegated)."""
    return next((r.parent for r in records if isinstance(r, StoredParent)), None)
