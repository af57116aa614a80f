"""What the sync side does where unasync cannot spell it from the async one (see
``_async/io.py``, its twin by name): sleep, request content, closing a chunk iterator, a
router's store begun now."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from time import sleep
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nisse_llm.task.logstore import TaskStore

__all__ = ["Sleep", "abandon", "begin_now", "close_chunks", "request_content", "sleep"]

#: A client's ``sleep=`` (waits between attempts).
Sleep = Callable[[float], object]


def request_content(parts: list[bytes]) -> list[bytes]:
    """A body's parts as request content, as they are."""
    return parts


def abandon(store: TaskStore) -> None:
    """Close a store a router opened and could not be built with (it began it)."""
    store.close()


def begin_now(begin: Callable[[], None]) -> None:
    """Call ``begin``: a sync router begins its task's store in its constructor."""
    begin()


def close_chunks(chunks: Iterator[bytes]) -> None:
    """Nothing to do: closing the response ends its chunk iterator."""
