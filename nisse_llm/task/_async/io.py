"""What the async stores do where unasync cannot spell the sync side (see ``_sync/io.py``,
its twin by name): blocking work run off the loop, the store's lock, ``next_seq``, a
heartbeat (an asyncio task) and where the running loop's shared things are kept."""

from __future__ import annotations

import asyncio
import functools
import logging
import weakref
from collections.abc import Awaitable, Callable
from contextlib import suppress
from typing import Any, TypeVar

__all__ = ["Heartbeat", "NextSeq", "blocking", "new_lock", "shared", "soon"]

logger = logging.getLogger("nisse_llm")
_RUNNING: set[asyncio.Task[None]] = set()
_SHARED: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[Any, Any]] = (
    weakref.WeakKeyDictionary()
)

T = TypeVar("T")


async def blocking(fn: Callable[..., T], /, *args: Any) -> T:
    """``fn(*args)`` in a worker thread, so the loop runs on while it blocks (a ``flock``
    wait, a write, an fsync).

    A thread cannot be stopped: if the caller is cancelled meanwhile, it is held here
    (with whatever locks it holds) until ``fn`` has returned, and only then does the
    cancellation go on. So no other write of the store starts while one still runs, and
    what ``fn`` wrote is whole (acknowledged or not).
    """
    loop = asyncio.get_running_loop()
    running = loop.run_in_executor(None, functools.partial(fn, *args))
    try:
        return await asyncio.shield(running)
    except asyncio.CancelledError:
        while not running.done():
            with suppress(asyncio.CancelledError):
                await asyncio.wait([running])
        if not running.cancelled():
            running.exception()  # retrieved: the cancellation is what the caller sees
        raise


def new_lock() -> asyncio.Lock:
    """The store's lock: one read-then-write of this object at a time."""
    return asyncio.Lock()


class NextSeq:
    """``await store.next_seq()``: a coroutine on the async side, a property on the sync."""

    __slots__ = ()

    async def _next_seq(self) -> int:
        raise NotImplementedError

    async def next_seq(self) -> int:
        """The sequence number the next `append_event` will use (0 for an empty log)."""
        return await self._next_seq()


def soon(fn: Callable[..., Awaitable[object]], /, *args: Any) -> None:
    """Start ``fn(*args)`` on this thread's running loop and return at once (no loop
    running: nothing is done); its failure is logged."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return

    async def run() -> None:
        try:
            await fn(*args)
        except Exception:
            logger.debug("a background release failed", exc_info=True)

    task = loop.create_task(run())
    _RUNNING.add(task)  # kept until done: the loop holds only a weak reference
    task.add_done_callback(_RUNNING.discard)


def shared() -> dict[Any, Any]:
    """What this event loop's stores share (their connection pools): an async pool serves
    only the loop it was opened on."""
    return _SHARED.setdefault(asyncio.get_running_loop(), {})


class Heartbeat:
    """``await beat()`` every ``every_s`` seconds, in an asyncio task, from `start` until
    `stop` (or `cancel`, which does not wait); a beat that raises is logged and the next
    one comes on time.

    Stopping sets a flag as well as cancelling: a cancellation can be lost inside a beat
    (Python 3.11's ``asyncio.wait_for``, which the connection pool waits with, returns the
    result it got instead of raising when both arrive together), and a loop that missed it
    would beat on, and `stop` wait for it, forever."""

    def __init__(self, beat: Callable[[], Awaitable[object]], every_s: float) -> None:
        self._beat = beat
        self._every_s = every_s
        self._task: asyncio.Task[None] | None = None
        self._stopping = False

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        while not self._stopping:
            await asyncio.sleep(self._every_s)
            if self._stopping:
                return
            try:
                await self._beat()
            except Exception:
                logger.warning(
                    "a lease heartbeat failed; the next one comes on time", exc_info=True
                )

    def cancel(self) -> None:
        self._stopping = True
        if self._task is not None:
            self._task.cancel()

    async def stop(self) -> None:
        self._stopping = True
        task, self._task = self._task, None
        if task is None or task.done():
            return
        task.cancel()
        if task.get_loop() is asyncio.get_running_loop():
            with suppress(asyncio.CancelledError):
                await task
