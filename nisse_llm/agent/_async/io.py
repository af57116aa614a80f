"""What the async side does where unasync cannot spell the sync one (see ``_sync/io.py``,
its twin by name): an opening coroutine made both awaitable and an ``async with``, and
what a property that reads the store gives (a coroutine to await), and runs that may
overlap (tool runs, at most so many at once; the sync twin runs them in turn)."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Generator, Sequence
from types import TracebackType
from typing import Any, Generic, ParamSpec, TypeAlias, TypeVar

from nisse_llm._closing import AsyncClosing

__all__ = ["Opening", "Read", "opening", "ordered"]

P = ParamSpec("P")
T = TypeVar("T", bound=AsyncClosing)
R = TypeVar("R")

#: What a property reading the task's store gives: ``await task.history``.
Read: TypeAlias = Coroutine[Any, Any, R]


class Opening(Generic[T]):
    """What an opening returns: ``await`` it for the object, or ``async with`` it (the object
    closed on leaving)."""

    __slots__ = ("_coro", "_opened")

    def __init__(self, coro: Coroutine[Any, Any, T]) -> None:
        self._coro = coro
        self._opened: T | None = None

    def __await__(self) -> Generator[Any, None, T]:
        return self._coro.__await__()

    async def __aenter__(self) -> T:
        self._opened = await self._coro
        return self._opened

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        assert self._opened is not None
        await self._opened.__aexit__(exc_type, exc, tb)


def opening(fn: Callable[P, Coroutine[Any, Any, T]]) -> Callable[P, Opening[T]]:
    """Make the coroutine function ``fn`` return an `Opening` (its sync twin: ``fn`` as it is)."""

    @functools.wraps(fn)
    def opened(*args: P.args, **kwargs: P.kwargs) -> Opening[T]:
        return Opening(fn(*args, **kwargs))

    return opened


async def ordered(runs: Sequence[Callable[[], Awaitable[R]]], limit: int) -> AsyncIterator[R]:
    """Each of ``runs``' results, in order, the runs started at most ``limit`` at a time
    (1: one after another); a result is given as soon as it and those before it are in.
    Runs still going when the caller stops (an error) are cancelled."""
    if limit <= 1:
        for run in runs:
            yield await run()
        return
    gate = asyncio.Semaphore(limit)

    async def gated(run: Callable[[], Awaitable[R]]) -> R:
        async with gate:
            return await run()

    tasks = [asyncio.ensure_future(gated(run)) for run in runs]
    try:
        for task in tasks:
            yield await task
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
