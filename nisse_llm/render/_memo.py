"""Per-event memo of encoded wire fragments, keyed by identity, released with the event.

Events are frozen, so an event's encoded form for a route never changes: an agent
that re-sends a growing log pays the encoding of each event once, not once per call.
Entries die with their event (weak references), so the memo never outgrows the logs
still alive. Dict operations are atomic under the GIL, so threads may share it.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["FragmentMemo"]

K = TypeVar("K")
V = TypeVar("V")


class FragmentMemo(Generic[K, V]):
    """Maps live objects (by identity) to a value computed once per object."""

    __slots__ = ("_entries",)

    def __init__(self) -> None:
        self._entries: dict[int, tuple[weakref.ref[K], V]] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, obj: K, compute: Callable[[K], V]) -> V:
        """The memoised value for ``obj``, computing and storing it on first use."""
        entry = self._entries.get(id(obj))
        if entry is not None and entry[0]() is obj:
            return entry[1]
        value = compute(obj)
        key = id(obj)
        entries = self._entries

        def _drop(_ref: weakref.ref[K], key: int = key) -> None:
            entries.pop(key, None)

        entries[key] = (weakref.ref(obj, _drop), value)
        return value
