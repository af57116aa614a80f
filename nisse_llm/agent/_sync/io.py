"""What the sync side does where unasync cannot spell it from the async one (see
``_async/io.py``, its twin by name): an opening returns the object itself, and a property
that reads the store gives what it read, and runs that may overlap on the async side run
one after another here (a sync `Task` runs its tools in turn)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Annotated, Any, TypeAlias, TypeVar

__all__ = ["Read", "opening", "ordered"]

F = TypeVar("F", bound=Callable[..., Any])
R = TypeVar("R")

#: What a property reading the task's store gives: the value (``task.history``).
Read: TypeAlias = Annotated[R, "read from the store"]


def opening(fn: F) -> F:
    """``fn`` as it is: a sync opening returns the object, a ``with`` closes it."""
    return fn


def ordered(runs: Sequence[Callable[[], R]], limit: int) -> Iterator[R]:
    """Each of ``runs``' results, in order, each run made in turn (``limit`` is the async
    side's: a sync task runs its tools one after another)."""
    for run in runs:
        yield run()
