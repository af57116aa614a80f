"""Hold a task's store busy from outside the code under test, for a moment: the task file's
``flock``, or the records table locked by another PostgreSQL session. The holder is a
thread that lets go when told, or by itself after a generous time, so a loop that a store
write blocked shows up as a failed count, never as a hung test."""

from __future__ import annotations

import asyncio
import fcntl
import os
import threading
from collections.abc import Callable
from pathlib import Path

#: How long a holder keeps the store busy when nobody tells it to let go.
GIVE_UP_S = 15.0


class Held:
    """A thread holding something until `release` (or `GIVE_UP_S`)."""

    def __init__(self, take: Callable[[], Callable[[], None]]) -> None:
        self._take = take
        self._taken = threading.Event()
        self._release = threading.Event()
        self._thread = threading.Thread(target=self._hold, daemon=True)
        #: Whether the holder let go by itself (nobody told it in time: a blocked loop).
        self.gave_up = False

    def _hold(self) -> None:
        let_go = self._take()
        self._taken.set()
        try:
            self.gave_up = not self._release.wait(GIVE_UP_S)
        finally:
            let_go()

    async def __aenter__(self) -> Held:
        self._thread.start()
        await asyncio.to_thread(self._taken.wait, GIVE_UP_S)
        return self

    def release(self) -> None:
        self._release.set()

    async def __aexit__(self, *exc: object) -> None:
        self.release()
        await asyncio.to_thread(self._thread.join, GIVE_UP_S)


def task_file_flock(path: Path) -> Held:
    """The task file's exclusive ``flock``, as another process's append holds it."""

    def take() -> Callable[[], None]:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(fd, fcntl.LOCK_EX)

        def let_go() -> None:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

        return let_go

    return Held(take)


def records_table_lock(url: str) -> Held:
    """The task records table locked by another PostgreSQL session (every read and write of
    it waits)."""
    import psycopg

    def take() -> Callable[[], None]:
        connection = psycopg.connect(url)
        connection.execute("LOCK TABLE nisse.nisse_task_records IN ACCESS EXCLUSIVE MODE")

        def let_go() -> None:
            connection.rollback()
            connection.close()

        return let_go

    return Held(take)


class Ticker:
    """A coroutine counting its turns on the loop (it cannot turn while the loop is blocked)."""

    def __init__(self) -> None:
        self.ticks = 0
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(0.001)
            self.ticks += 1

    async def __aenter__(self) -> Ticker:
        self._task = asyncio.create_task(self._run())
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()

    async def turns(self, n: int) -> int:
        """Wait until the ticker has ticked ``n`` more times; the ticks counted."""
        until = self.ticks + n
        while self.ticks < until:
            await asyncio.sleep(0.001)
        return self.ticks
