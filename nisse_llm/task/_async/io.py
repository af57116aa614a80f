"""What the async stores do where unasync cannot spell the sync side (see ``_sync/io.py``,
its twin by name): blocking work run off the loop, the store's lock, and ``next_seq``."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from contextlib import suppress
from typing import Any, TypeVar

__all__ = ["NextSeq", "blocking", "new_lock"]

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
