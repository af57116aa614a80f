"""What the async side does where unasync cannot spell the sync one (see ``_sync/io.py``,
its twin by name): sleep, request content, closing a response's chunk iterator, a router's
store begun later."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nisse_llm.task._async.store import AsyncTaskStore

#: A client's ``sleep=`` (waits between attempts).
Sleep = Callable[[float], Awaitable[object]]


async def sleep(seconds: float) -> None:
    """`asyncio.sleep`, imported when first awaited: a sync-only program never loads asyncio."""
    import asyncio

    await asyncio.sleep(seconds)


async def _parts(parts: list[bytes]) -> AsyncIterator[bytes]:
    for part in parts:
        yield part


def request_content(parts: list[bytes]) -> AsyncIterator[bytes]:
    """A body's parts as request content: an async client takes no sync iterable."""
    return _parts(parts)


def abandon(store: AsyncTaskStore) -> None:
    """Nothing: a store an async router opened and could not be built with is unused (an
    async store opens its file or connection on first use)."""


def begin_now(begin: Callable[[], Awaitable[None]]) -> None:
    """Nothing: an async router cannot await in its constructor, so it begins its task's
    store before its first call's start record (``begin`` awaited then)."""


async def close_chunks(chunks: AsyncIterator[bytes]) -> None:
    """Close a response's chunk iterator now (an async generator), not from a GC hook."""
    closer = getattr(chunks, "aclose", None)
    if closer is not None:
        await closer()
