"""A crash-safe JSON-lines file holding one task: its pin, its canonical log and its calls.

Each line is one record (`nisse_llm.task.records`): a header holding the pin record
(first, written once by `LogStore.begin`), a `StoredEvent`, or a call record. Files of
events alone (written before task records existed) read unchanged.

Guarantees (POSIX): a record is on disk once `append` returns (written in one ``write``
on an ``O_APPEND`` descriptor, then ``fsync``; the directory is fsynced when the file is
created); bytes already in the file are never rewritten; sequence numbers strictly
increase. A line is complete only with its newline, so a crash mid-append leaves at most
one torn tail, which `read` reports and never raises on (a crash inside a batch may keep
the batch's first records: each is whole and in order). `append` refuses to write after
a torn tail (the new line would merge into the garbage) until `repair` truncates it.
Writers take an exclusive ``flock`` for each append and a thread lock, so several
`LogStore` objects or processes on one file never interleave or reuse a number.

A record is acknowledged only if the path still names the file it went into: the path
is opened without following a symlink planted in its place, and before each append the
descriptor's device and inode are compared with the path's, so a file renamed away,
replaced (log rotation) or deleted (``rm``, ``git clean``) raises `LogFileReplaced`
instead of acknowledging records nobody can read back.

The record logic and the file store are written once, as `AsyncLogStore`
(``_async/logstore.py``, its blocking file work run in a worker thread); `LogStore` is
generated from it. Both are exported here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from nisse_llm.errors import (
    LogCorrupt,
    LogDuplicateId,
    LogFileReplaced,
    LogSequenceError,
    LogTornTail,
)
from nisse_llm.task._logread import LogRead
from nisse_llm.task._sync.logstore import LogStore
from nisse_llm.task.records import TaskHeaderMissing, TaskPinMismatch

if TYPE_CHECKING:
    from nisse_llm.task._async.logstore import AsyncLogStore

__all__ = [
    "AsyncLogStore",
    "LogCorrupt",
    "LogDuplicateId",
    "LogFileReplaced",
    "LogRead",
    "LogSequenceError",
    "LogStore",
    "LogTornTail",
    "TaskHeaderMissing",
    "TaskPinMismatch",
]


def __getattr__(name: str) -> Any:
    # The async store loads asyncio: imported when first named, so sync programs never do.
    if name == "AsyncLogStore":
        from nisse_llm.task._async.logstore import AsyncLogStore

        return AsyncLogStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
