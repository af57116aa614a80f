"""The task file's own I/O, plain blocking calls: opening, the exclusive ``flock`` around
a read-then-write, the tail, reads, appends and repair. The file store (`TaskStore`) calls
them directly; its async twin (`AsyncTaskStore`) runs each in a worker thread. The record
logic above them is the store's; `nisse_llm.task.logstore` says what they guarantee.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Sequence
from pathlib import Path

from nisse_llm.errors import LogTornTail
from nisse_llm.task._files import (
    NEWLINE,
    Flock,
    check_same_file,
    fsync_dir,
    open_no_symlink,
    read_all,
    write_all,
)
from nisse_llm.task._logread import (
    LogRead,
    Tail,
    check_batch,
    encode,
    first_record,
    parse,
    scan_tail,
)
from nisse_llm.task.records import StoredRecord

__all__ = ["FileLog"]

_READ_FLAGS = os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW


class FileLog:
    """One task file's write descriptor and what is known of its tail.

    Not thread-safe on its own: its store calls it under the store's lock, the
    ``locked_*`` methods only between `lock` and `unlock`.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None
        # The file's state after our last append; trusted only while size and mtime match.
        self._tail: Tail | None = None

    def exists(self) -> bool:
        """Whether the file is open here or exists."""
        return self._fd is not None or self.path.exists()

    def close(self) -> None:
        """Close the write descriptor (reopened by the next append)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        self._tail = None

    def lock(self) -> None:
        """Open the file if needed and take its exclusive ``flock`` (waiting for it)."""
        fcntl.flock(self._open(), fcntl.LOCK_EX)

    def unlock(self) -> None:
        """Release the ``flock`` `lock` took (nothing if the file never opened)."""
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def next_seq(self) -> int:
        """The number the next record takes (0 for a missing or empty file)."""
        if not self.exists():
            return 0
        fd = self._open()
        with Flock(fd, fcntl.LOCK_SH):
            check_same_file(fd, self.path)
            tail = self._current_tail(fd)
        return 0 if tail.last_seq is None else tail.last_seq + 1

    def read(self) -> LogRead:
        """Every complete record and the torn tail, under a shared ``flock`` of its own
        descriptor (a missing file is an empty log)."""
        try:
            fd = open_no_symlink(self.path, _READ_FLAGS)
        except FileNotFoundError:
            return LogRead(records=[])
        try:
            with Flock(fd, fcntl.LOCK_SH):
                return parse(fd, self.path)
        finally:
            os.close(fd)

    def read_lines(self) -> list[bytes]:
        """Every complete line as stored (no newline), in order; a torn tail left out."""
        try:
            fd = open_no_symlink(self.path, _READ_FLAGS)
        except FileNotFoundError:
            return []
        try:
            with Flock(fd, fcntl.LOCK_SH):
                data = read_all(fd)
        finally:
            os.close(fd)
        return data.split(NEWLINE)[:-1]

    def locked_last_seq(self) -> int | None:
        return self._current_tail(self._locked_fd()).last_seq

    def locked_state(self) -> object:
        """A value that changes whenever the file does."""
        return self._current_tail(self._locked_fd())

    def locked_read(self) -> LogRead:
        fd = self._locked_fd()
        check_same_file(fd, self.path)
        return parse(fd, self.path)

    def locked_first(self) -> StoredRecord:
        return first_record(self._locked_fd(), self.path)

    def locked_repair(self) -> bytes | None:
        """Truncate a torn last line and return its bytes (None if there is none)."""
        fd = self._locked_fd()
        check_same_file(fd, self.path)
        self._tail = None
        found = parse(fd, self.path)
        if found.torn_offset is None:
            return None
        os.ftruncate(fd, found.torn_offset)
        os.fsync(fd)
        return found.torn_tail

    def locked_clear(self) -> None:
        """Empty the file (a task replaced by an import), durably."""
        fd = self._locked_fd()
        check_same_file(fd, self.path)
        self._tail = None
        os.ftruncate(fd, 0)
        os.fsync(fd)

    def locked_delete(self) -> None:
        """Remove the file (a task pruned), durably; a writer waiting for its lock then
        finds the path no longer names it (`LogFileReplaced`), never writes to it."""
        fd = self._locked_fd()
        check_same_file(fd, self.path)
        self.path.unlink()
        fsync_dir(self.path.parent)
        self.close()

    def locked_write(
        self, batch: Sequence[StoredRecord], lines: Sequence[bytes] | None = None
    ) -> None:
        """Append ``batch`` (encoded as ``lines`` when given: bytes kept as they came) in
        one write, then fsync; `LogTornTail` after a torn line, `LogSequenceError` for a
        number out of order (nothing written either way)."""
        fd = self._locked_fd()
        check_same_file(fd, self.path)
        tail = self._current_tail(fd)
        if tail.torn_offset is not None:
            torn = os.pread(fd, tail.size - tail.torn_offset, tail.torn_offset)
            raise LogTornTail(
                f"{self.path}: ends in a torn line of {tail.size - tail.torn_offset} bytes "
                f"at offset {tail.torn_offset}; call repair() before appending",
                path=self.path,
                offset=tail.torn_offset,
                tail=torn,
            )
        previous = check_batch(self.path, tail.last_seq, batch)
        data = b"".join(line + NEWLINE for line in lines or encode(batch))
        self._tail = None
        write_all(fd, data)
        os.fsync(fd)
        stat = os.fstat(fd)
        self._tail = Tail(
            size=stat.st_size, mtime_ns=stat.st_mtime_ns, last_seq=previous, torn_offset=None
        )

    def _locked_fd(self) -> int:
        assert self._fd is not None, "only between lock() and unlock()"
        return self._fd

    def _open(self) -> int:
        """The write descriptor, opened on first use; a new file's directory is fsynced."""
        if self._fd is not None:
            return self._fd
        # Read-write so the tail can be read back through the descriptor being written.
        flags = os.O_RDWR | os.O_APPEND | os.O_CLOEXEC | os.O_NOFOLLOW
        try:
            fd = os.open(self.path, flags | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            fd = open_no_symlink(self.path, flags)
        else:
            # The new name must survive a crash too, not only the data behind it.
            fsync_dir(self.path.parent)
        try:
            check_same_file(fd, self.path)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        return fd

    def _current_tail(self, fd: int) -> Tail:
        stat = os.fstat(fd)
        cached = self._tail
        if cached is not None and (cached.size, cached.mtime_ns) == (
            stat.st_size,
            stat.st_mtime_ns,
        ):
            return cached
        tail = scan_tail(fd, self.path, stat.st_size, stat.st_mtime_ns)
        self._tail = tail
        return tail
