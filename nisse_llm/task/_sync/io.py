"""What the sync stores do where unasync cannot spell it from the async side (see
``_async/io.py``, its twin by name): blocking work done in place, the store's lock, and
``next_seq`` as a property."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["NextSeq", "blocking", "new_lock"]

T = TypeVar("T")


def blocking(fn: Callable[..., T], /, *args: Any) -> T:
    """``fn(*args)``, here and now."""
    return fn(*args)


def new_lock() -> threading.Lock:
    """The store's lock: one read-then-write of this object at a time, across threads."""
    return threading.Lock()


class NextSeq:
    """``store.next_seq``: a property on the sync side, a coroutine on the async."""

    __slots__ = ()

    def _next_seq(self) -> int:
        raise NotImplementedError

    @property
    def next_seq(self) -> int:
        """The sequence number the next `append_event` will use (0 for an empty log)."""
        return self._next_seq()
