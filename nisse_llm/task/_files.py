"""The file primitives the task file is written with: opening without following a
symlink, checking the path still names the open file, ``flock`` for a block, whole writes,
reads from a descriptor, and fsyncing a directory. No records here: `logstore` owns those."""

from __future__ import annotations

import errno
import fcntl
import os
from pathlib import Path
from typing import Final

from nisse_llm.errors import LogFileReplaced

__all__ = [
    "NEWLINE",
    "READ_CHUNK",
    "TAIL_CHUNK",
    "Flock",
    "check_same_file",
    "fsync_dir",
    "last_newline_before",
    "open_no_symlink",
    "read_all",
    "write_all",
]

NEWLINE: Final = b"\n"
# Reading backwards for the last line: large enough that a typical record is one read.
TAIL_CHUNK: Final = 64 * 1024
#: How much of the file a read holds at once, beside the line being parsed.
READ_CHUNK: Final = 1024 * 1024


def open_no_symlink(path: Path, flags: int) -> int:
    """``os.open`` with ``O_NOFOLLOW``; a symlink at ``path`` is `LogFileReplaced`."""
    try:
        return os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise LogFileReplaced(
                f"{path}: is a symbolic link; a log is opened only as the file itself "
                "(a link planted in its place would send records elsewhere)",
                path=path,
            ) from None
        raise


def check_same_file(fd: int, path: Path) -> None:
    """`LogFileReplaced` unless ``path`` still names the file open on ``fd``."""
    held = os.fstat(fd)
    try:
        named = os.lstat(path)
    except FileNotFoundError:
        named = None
    if named is not None and (named.st_dev, named.st_ino) == (held.st_dev, held.st_ino):
        return
    what = (
        "was deleted"
        if named is None
        else "now names another file (renamed or replaced, e.g. by log rotation)"
    )
    raise LogFileReplaced(
        f"{path}: {what} since this store opened it; nothing was appended (records "
        "written now could not be read back through the path). Close the store and "
        "reopen the log where it now is",
        path=path,
    )


class Flock:
    """Hold ``flock`` on a descriptor for a ``with`` block."""

    def __init__(self, fd: int, operation: int) -> None:
        self._fd = fd
        self._operation = operation

    def __enter__(self) -> None:
        fcntl.flock(self._fd, self._operation)

    def __exit__(self, *exc: object) -> None:
        fcntl.flock(self._fd, fcntl.LOCK_UN)


def last_newline_before(fd: int, end: int) -> int:
    """Offset of the last newline in ``[0, end)``, or -1 if there is none."""
    while end > 0:
        start = max(0, end - TAIL_CHUNK)
        found = os.pread(fd, end - start, start).rfind(NEWLINE)
        if found >= 0:
            return start + found
        end = start
    return -1


def read_all(fd: int) -> bytes:
    chunks, offset = [], 0
    while chunk := os.pread(fd, READ_CHUNK, offset):
        chunks.append(chunk)
        offset += len(chunk)
    return b"".join(chunks)


def write_all(fd: int, data: bytes) -> None:
    # One write covers the whole record on a regular file; the loop only finishes a short
    # write (a full disk or a signal), which leaves the same torn tail a crash would.
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
