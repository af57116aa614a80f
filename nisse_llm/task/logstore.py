"""The task stores' common face (`TaskStore`), and the first of them: a crash-safe
JSON-lines file holding one task (`FileTaskStore`): its pin, its canonical log and its calls.

Each line is one record (`nisse_llm.task.records`): a header holding the pin record
(first, written once by `TaskStore.begin`), a `StoredEvent`, or a call record. Files of
events alone (written before task records existed) read unchanged.

Guarantees (POSIX): a record is on disk once `append` returns (written in one ``write``
on an ``O_APPEND`` descriptor, then ``fsync``; the directory is fsynced when the file is
created); bytes already in the file are never rewritten; sequence numbers strictly
increase. A line is complete only with its newline, so a crash mid-append leaves at most
one torn tail, which `read` reports and never raises on (a crash inside a batch may keep
the batch's first records: each is whole and in order). `append` refuses to write after
a torn tail (the new line would merge into the garbage) until `repair` truncates it.
Writers take an exclusive ``flock`` for each append and a thread lock, so several
`FileTaskStore` objects or processes on one file never interleave or reuse a number.

A record is acknowledged only if the path still names the file it went into: the path
is opened without following a symlink planted in its place, and before each append the
descriptor's device and inode are compared with the path's, so a file renamed away,
replaced (log rotation) or deleted (``rm``, ``git clean``) raises `LogFileReplaced`
instead of acknowledging records nobody can read back.

The record logic is written once, in the abstract `AsyncTaskStore` (``_async/store.py``),
and the file store as its sibling `AsyncFileTaskStore` (``_async/filestore.py``, its
blocking file work run in a worker thread) beside `AsyncPostgresTaskStore`
(`nisse_llm.task.postgres`); `TaskStore` and `FileTaskStore` are generated from them. All
are exported here; ``LogStore`` and ``AsyncLogStore``, the file store's old names, still
work for one release, with a `DeprecationWarning`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from nisse_llm._lazy import renamed
from nisse_llm.errors import (
    LogCorrupt,
    LogDuplicateId,
    LogFileReplaced,
    LogSequenceError,
    LogTornTail,
)
from nisse_llm.task._logread import LogRead
from nisse_llm.task._sync.filestore import FileTaskStore
from nisse_llm.task._sync.store import TaskStore
from nisse_llm.task.records import TaskHeaderMissing, TaskPinMismatch

if TYPE_CHECKING:
    from nisse_llm.task._async.filestore import AsyncFileTaskStore
    from nisse_llm.task._async.store import AsyncTaskStore

__all__ = [
    "AsyncFileTaskStore",
    "AsyncTaskStore",
    "FileTaskStore",
    "LogCorrupt",
    "LogDuplicateId",
    "LogFileReplaced",
    "LogRead",
    "LogSequenceError",
    "LogTornTail",
    "TaskHeaderMissing",
    "TaskPinMismatch",
    "TaskStore",
]


def __getattr__(name: str) -> Any:
    # The async stores load asyncio: imported when first named, so sync programs never do.
    if name == "AsyncTaskStore":
        from nisse_llm.task._async.store import AsyncTaskStore

        return AsyncTaskStore
    if name == "AsyncFileTaskStore":
        from nisse_llm.task._async.filestore import AsyncFileTaskStore

        return AsyncFileTaskStore
    if name == "AsyncLogStore":
        return renamed(__name__, name, "AsyncFileTaskStore", __getattr__("AsyncFileTaskStore"))
    if name == "LogStore":
        return renamed(__name__, name, "FileTaskStore", FileTaskStore)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
