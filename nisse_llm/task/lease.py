"""One driver per task file: a lease the kernel releases when its holder dies.

The lease is an exclusive ``flock`` on a file beside the task file, ``<file>.lease``,
holding who took it and when (JSON). It is held on an open descriptor, so it ends when
the holder closes it or its process ends in any way (SIGKILL included): the next opener
takes it at once, with no clock and no expiry. A second opener while it is held gets
`TaskBusy` naming the holder and since when. The lease file is left in place (removing it
would let two openers lock two different files); only a lease's holder writes it.

Readers and writers of the task file itself never look at the lease: several `TaskStore`
objects still append safely under the file's own per-append ``flock``. Only a task's
driver (`Task.open`) takes it. ``flock`` is exact on a local file system; on a network
file system it holds only as far as that system honours ``flock``.

Whether a lease is held is read without taking it (`FileLease.holder_of`): trying to take
it would make a driver opening the task at that moment fail with a false `TaskBusy`. On
Linux the kernel lists every held ``flock`` in ``/proc/locks`` by its file system's device
and the file's inode; a lease file found there is held, and its record names the holder.
A record whose lock is not listed is a dead or closed holder's, not a holder.
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

__all__ = ["PROC_LOCKS", "FileLease", "lease_path"]

#: Where the kernel lists the locks held now (Linux).
PROC_LOCKS = Path("/proc/locks")


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

    @staticmethod
    def holder_of(
        task_file: str | os.PathLike[str],
    ) -> tuple[str | None, datetime | None] | None:
        """Who holds the lease of ``task_file`` now and since when, read without taking or
        touching it: `None` when it is not held (a record left by a dead or closed holder
        included), ``(None, None)`` when it is held but its record is empty or damaged. A
        holder that has just taken it may read, for the instant before it writes its
        record, as ``(None, None)`` or as the holder before it.

        Raises `OSError` where the system does not show its locks (no ``/proc/locks``:
        not Linux, or no ``/proc``), so that a caller can say it cannot tell.
        """
        locks = PROC_LOCKS.read_text()
        path = lease_path(task_file)
        try:
            fd = os.open(path, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            return None  # never taken
        try:
            if _file_id(fd) not in _flocked(locks):
                return None
        finally:
            os.close(fd)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except PermissionError:
            return None, None  # held, by someone whose record this user cannot read
        try:
            return _recorded(read_all(fd))
        finally:
            os.close(fd)

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


def _recorded(recorded: bytes) -> tuple[str | None, datetime | None]:
    """The holder and since a lease file's content records, or ``(None, None)`` when it
    records none (empty, or not the JSON `FileLease.take` writes)."""
    try:
        data = json.loads(recorded)
        return str(data["holder"]), datetime.fromisoformat(data["since"])
    except (ValueError, KeyError, TypeError):
        return None, None


def _file_id(fd: int) -> tuple[int, int, int]:
    """The file ``fd`` is open on as ``/proc/locks`` names it: its file system's device
    (major, minor) and its inode. The device is its mount's, from ``mountinfo``, not
    ``stat``'s, which differs from it on some file systems (btrfs subvolumes)."""
    info = dict(
        line.split(":", 1) for line in Path(f"/proc/self/fdinfo/{fd}").read_text().splitlines()
    )
    mount = info.get("mnt_id", "").strip()
    inode = int(info["ino"]) if "ino" in info else os.fstat(fd).st_ino
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split()
        if fields[0] == mount:
            major, minor = fields[2].split(":")
            return int(major), int(minor), inode
    raise FileNotFoundError(f"no mount {mount!r} in /proc/self/mountinfo")


def _flocked(locks: str) -> set[tuple[int, int, int]]:
    """The files that hold a ``flock`` now, from ``/proc/locks`` (``N: FLOCK ADVISORY WRITE
    PID MAJOR:MINOR:INODE 0 EOF``, major and minor in hex; a waiter's line has ``->`` after
    its number and holds nothing)."""
    held = set()
    for line in locks.splitlines():
        fields = line.split()
        if len(fields) > 5 and fields[1] == "FLOCK":
            major, minor, inode = fields[5].split(":")
            held.add((int(major, 16), int(minor, 16), int(inode)))
    return held


def _busy(task_file: Path, recorded: bytes) -> TaskBusy:
    """`TaskBusy` for ``task_file``, naming the holder its lease file records (if it has
    written it yet)."""
    holder, since = _recorded(recorded)
    held = f"held by {holder} since {since:%Y-%m-%d %H:%M:%S %Z}" if since else "held"
    return TaskBusy(
        f"{task_file}: another driver holds this task ({held}); leave it to that driver, "
        "or open it again once that driver has closed or died",
        task=str(task_file),
        holder=holder,
        since=since,
    )
