"""What renderers keep between calls: encoded fragments per event, recent envelopes.

`FragmentMemo`: per-event memo of encoded wire fragments, keyed by identity, released
with the event.
Events are frozen, so an event's encoded form for a route never changes: an agent
that re-sends a growing log pays the encoding of each event once, not once per call.
Entries die with their event (weak references), so the memo never outgrows the logs
still alive. Dict operations are atomic under the GIL, so threads may share it.
`RecentMemo`: a renderer's recent envelopes (the body around its messages), one per
renderer, used under its walk lock.
"""

from __future__ import annotations

import operator
import weakref
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

__all__ = ["FragmentMemo", "RecentMemo"]

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


class RecentMemo(Generic[V]):
    """A renderer's few most recent values by key (the encoded envelope around its
    messages: an agent sends the same model, system prompt, tools and options every call).

    Each entry also holds objects compared by identity (tool specs, a log's first event),
    so a value is reused only for those very objects; the oldest entry goes past `SLOTS`.
    """

    SLOTS = 16
    __slots__ = ("_entries",)

    def __init__(self) -> None:
        self._entries: dict[Hashable, tuple[tuple[object, ...], V]] = {}

    def get(self, key: Hashable, held: tuple[object, ...], make: Callable[[], V]) -> V:
        """The value stored under ``key`` for ``held``, else ``make()`` stored in its place."""
        entries = self._entries
        hit = entries.get(key)
        if hit is not None and len(hit[0]) == len(held) and all(map(operator.is_, hit[0], held)):
            return hit[1]
        value = make()
        entries.pop(key, None)
        entries[key] = (held, value)
        while len(entries) > self.SLOTS:
            del entries[next(iter(entries))]
        return value

    def clear(self) -> None:
        """Drop every entry (and the objects they hold)."""
        self._entries.clear()
