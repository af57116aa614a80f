"""What the sync side does where unasync cannot spell it from the async one (see
``_async/opening.py``, its twin by name): an opening returns the object itself."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["opening"]

F = TypeVar("F", bound=Callable[..., Any])


def opening(fn: F) -> F:
    """``fn`` as it is: a sync opening returns the object, a ``with`` closes it."""
    return fn
