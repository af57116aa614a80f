"""One driver per task file: a lease the kernel releases when its holder dies.

The lease is an exclusive ``flock`` on a file beside the task file, ``<file>.lease``,
holding who took it and when (JSON). It is held on an open descriptor, so it ends when
the holder closes it or its process ends in any way (SIGKILL included): the next opener
takes it at once, with no clock and no expiry. A second opener while it is held gets
`TaskBusy` naming the holder and since when. The lease file is left in place (removing it
would let two openers lock two different files); only a lease's holder writes it.

Readers and writers of the task file itself never look at the lease: several `LogStore`
objects still append safely under the file's own per-append ``flock``. Only a task's
driver (`Task.open`) takes it. ``flock`` is exact on a local file system; on a network
file system it holds only as far as that system honours ``flock``.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
from datetime import UTC, datetime
from pathlib import Path

from nisse_llm._closing import Closing
from nisse_llm.errors import TaskBusy
from nisse_llm.task._files import read_all, write_all

__all__ = ["FileLease", "lease_path"]


def lease_path(task_file: str | os.PathLike[str]) -> Path:
    """The lease file of ``task_file``: beside it, its name and ``.lease``."""
    path = Path(task_file)
    return path.with_name(path.name + ".lease")


class FileLease(Closing):
    """The held lease of one task file; `close` releases it."""

    def __init__(self, fd: int, path: Path, holder: str, since: datetime) -> None:
        self._fd: int | None = fd
        #: The lease file.
        self.path = path
        #: Who holds it (host and process id unless named).
        self.holder = holder
        #: When it was taken.
        self.since = since

    @classmethod
    def take(cls, task_file: str | os.PathLike[str], *, holder: str | None = None) -> FileLease:
        """Take the lease of ``task_file``, or raise `TaskBusy` naming who holds it."""
        path = lease_path(task_file)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise _busy(Path(task_file), read_all(fd)) from None
            name = holder or f"{socket.gethostname()} pid {os.getpid()}"
            since = datetime.now(UTC)
            os.ftruncate(fd, 0)
            data = {"holder": name, "since": since.isoformat()}
            write_all(fd, json.dumps(data).encode())
        except BaseException:
            os.close(fd)
            raise
        return cls(fd, path, name, since)

    @property
    def held(self) -> bool:
        """Whether this lease is still held (not closed)."""
        return self._fd is not None

    def close(self) -> None:
        """Release the lease (the next opener takes it at once)."""
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def __repr__(self) -> str:
        return f"FileLease({str(self.path)!r}, holder={self.holder!r})"


def _busy(task_file: Path, recorded: bytes) -> TaskBusy:
    """`TaskBusy` for ``task_file``, naming the holder its lease file records (if it has
    written it yet)."""
    holder: str | None = None
    since: datetime | None = None
    try:
        data = json.loads(recorded)
        holder, since = str(data["holder"]), datetime.fromisoformat(data["since"])
    except (ValueError, KeyError, TypeError):
        pass
    held = f"held by {holder} since {since:%Y-%m-%d %H:%M:%S %Z}" if since else "held"
    return TaskBusy(
        f"{task_file}: another driver holds this task ({held}); leave it to that driver, "
        "or open it again once that driver has closed or died",
        task=str(task_file),
        holder=holder,
        since=since,
    )
