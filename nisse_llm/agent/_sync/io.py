"""What the sync side does where unasync cannot spell it from the async one (see
``_async/io.py``, its twin by name): an opening returns the object itself, and a property
that reads the store gives what it read."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, TypeAlias, TypeVar

__all__ = ["Read", "opening"]

F = TypeVar("F", bound=Callable[..., Any])
R = TypeVar("R")

#: What a property reading the task's store gives: the value (``task.history``).
Read: TypeAlias = Annotated[R, "read from the store"]


def opening(fn: F) -> F:
    """``fn`` as it is: a sync opening returns the object, a ``with`` closes it."""
    return fn
