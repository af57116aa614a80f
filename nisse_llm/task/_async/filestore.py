"""The task store in a file, written once: `AsyncFileTaskStore` implements the record
logic's hooks (`AsyncTaskStore`) over a `FileLog`, its blocking file work run in a worker
thread. ``_sync/filestore.py`` (`FileTaskStore`) is generated from this source by
``scripts/gen_sync.py``; `nisse_llm.task.logstore` says what the file store promises.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Self

from nisse_llm.task._async import io
from nisse_llm.task._async.store import AsyncTaskStore
from nisse_llm.task._filelog import FileLog
from nisse_llm.task._logread import LogRead, decode
from nisse_llm.task.keys import check_task_key
from nisse_llm.task.records import StoredRecord, TaskHeaderMissing

if TYPE_CHECKING:
    from nisse_llm.task.lease import FileLease

__all__ = ["AsyncFileTaskStore"]


class AsyncFileTaskStore(AsyncTaskStore):
    """One canonical log in one JSON-lines file: append-only, fsynced, readable after a crash."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        super().__init__()
        self.path = Path(path)
        self._file = FileLog(self.path)

    @property
    def _where(self) -> Path:
        return self.path

    @property
    def place(self) -> tuple[str, ...]:
        """The file's real path (symlinks resolved)."""
        return ("file", os.path.realpath(self.path))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self.path)!r})"

    @property
    def task_key(self) -> str:
        """The task's key in its store: the file's name without ``.jsonl``."""
        return self.path.stem

    def sibling(self, key: str) -> Self:
        """The store of task ``key`` beside this one (a sub-task's: the same folder)."""
        return type(self)(self.path.with_name(f"{check_task_key(key)}.jsonl"))

    async def aclose(self) -> None:
        """Close the write descriptor (reopened by the next append)."""
        async with self._lock:
            await io.blocking(self._file.close)

    def abandon(self) -> None:
        """Let go of what the store holds, without blocking or awaiting (a task dropped
        open does, from its finalizer): nothing for a task file, whose lease is the
        task's `FileLease` and whose descriptor closes with the store."""

    async def lease(self) -> FileLease | None:
        """Take the task's driver lease, for one driver per task (`Task.open` does): a
        `FileLease` on ``<file>.lease`` (`nisse_llm.task.lease`), which the caller closes,
        or `TaskBusy` naming its holder. Appending never needs it: several writers of one
        file stay serialised by each append's ``flock``."""
        from nisse_llm.task.lease import FileLease

        return await io.blocking(FileLease.take, self.path)

    async def _next_seq(self) -> int:
        async with self._lock:
            return await io.blocking(self._file.next_seq)

    async def read(self) -> LogRead:
        """Every complete record, in order, and the torn last line if there is one.

        A missing file is an empty log. Raises `LogCorrupt`, naming the 1-based line,
        when a complete line is not a valid record or its number does not increase.
        """
        return await io.blocking(self._file.read)

    async def export_lines(self) -> list[bytes]:
        """Every complete record's line as stored (no newline), in order: what ``task
        export`` prints. A torn tail is left out; `LogCorrupt` for an invalid line."""
        lines = await io.blocking(self._file.read_lines)
        decode(lines, self._where)
        return lines

    @asynccontextmanager
    async def _exclusive(self) -> AsyncIterator[None]:
        """The store's lock and an exclusive ``flock`` on the file."""
        async with self._lock:
            try:
                await io.blocking(self._file.lock)
                yield
            finally:
                self._file.unlock()

    async def _x_check_begun(self) -> None:
        if not await io.blocking(self._file.exists):
            raise TaskHeaderMissing(
                f"{self.path}: no such task file; begin(pin) starts one", path=self.path
            )

    async def _x_last_seq(self) -> int | None:
        return await io.blocking(self._file.locked_last_seq)

    async def _x_state(self) -> object:
        return await io.blocking(self._file.locked_state)

    async def _x_read(self) -> LogRead:
        return await io.blocking(self._file.locked_read)

    async def _x_first(self) -> StoredRecord:
        return await io.blocking(self._file.locked_first)

    async def _x_repair(self) -> bytes | None:
        return await io.blocking(self._file.locked_repair)

    async def _x_write(
        self,
        batch: Sequence[StoredRecord],
        lines: Sequence[bytes] | None = None,
        after: LogRead | None = None,
    ) -> None:
        await io.blocking(self._file.locked_write, batch, lines)

    async def _x_delete(self) -> None:
        await io.blocking(self._file.locked_delete)

    async def _x_clear(self) -> None:
        await io.blocking(self._file.locked_clear)
