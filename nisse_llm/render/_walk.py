"""The one walk of a log that every route's renderer specialises (pure).

Every route reads a log the same way: events are unwrapped from their records, each call
is paired with its result (a call id used twice, a result with no earlier call, or a
second result is a corrupt log), tool names are collected in order of first use, images
are gathered for the provider limits, and the tools passed are checked for unique names.
The walk is resumable: events never change, so a log re-sent grown by a turn resumes
the walk of the log it extends (`ProgressCache`, one per renderer instance) and pays for
its new events only.

`TurnWalk` is the walk of the OpenAI routes (chat and Responses), where a turn is a run
of assistant events closed by a user text, a user image or a result, and each call of a
closed turn is answered right after it (a hole until its result arrives, wherever the
log has it). A route gives it a `TurnMaker`: what each user event, closed turn and answer
becomes (typed wire models or their encoded bytes). The messages route merges turns by
role and keeps its own `Progress` subclass on the same cache.

A new route plugs in here: a `TurnMaker` (or a `Progress` subclass) and its envelope.
"""

from __future__ import annotations

import operator
import threading
from collections.abc import Callable, Mapping, Sequence
from itertools import islice
from typing import Any, Generic, Protocol, Self, TypeVar, cast

import pydantic_core
from pydantic import BaseModel

from nisse_llm.errors import RenderError
from nisse_llm.events.canonical import (
    AssistantText,
    Compaction,
    Reasoning,
    StoredEvent,
    ToolCall,
    ToolResult,
    ToolsLike,
    ToolSpec,
    UserImage,
    UserText,
    WireEvent,
    as_tool_specs,
    wire_events,
)
from nisse_llm.events.images import Image
from nisse_llm.render._images import event_images
from nisse_llm.render._rope import EMPTY, Rope

__all__ = [
    "Indexed",
    "Progress",
    "ProgressCache",
    "Shared",
    "SlotsView",
    "TurnMaker",
    "TurnWalk",
    "bare_events",
    "call_used_twice",
    "encode_model",
    "json_bytes",
    "object_schema",
    "replayable_thinking",
    "result_without_call",
    "second_result",
    "unencodable",
    "unique_specs",
]

_BARE_TYPES = frozenset({UserText, UserImage, AssistantText, ToolCall, ToolResult, Reasoning})


def bare_events(items: Sequence[object]) -> list[WireEvent]:
    """`wire_events` by exact type first (pydantic's ``isinstance`` costs ~0.5 us an event);
    a `Compaction` goes as its user-side context."""
    events = [
        item.event
        if type(item) is StoredEvent and type(item.event) is not Compaction
        else item
        if type(item) in _BARE_TYPES
        else wire_events((item,))[0]
        for item in items
    ]
    return cast(list[WireEvent], events)


def unencodable(exc: ValueError) -> RenderError:
    # pydantic-core refuses values nested past ~254 levels, circular ones and lone
    # surrogates, raising PydanticSerializationError or a bare ValueError.
    return RenderError(f"the log holds a value that cannot be encoded as JSON: {exc}")


def json_bytes(value: object) -> bytes:
    """A plain value as JSON bytes; an unencodable one is a `RenderError`."""
    try:
        return pydantic_core.to_json(value)
    except ValueError as exc:
        raise unencodable(exc) from exc


def encode_model(model: BaseModel) -> bytes:
    """A wire model as JSON bytes, by the routes' dump convention (``exclude_none``)."""
    try:
        return model.__pydantic_serializer__.to_json(model, exclude_none=True)
    except ValueError as exc:
        raise unencodable(exc) from exc


def unique_specs(tools: ToolsLike) -> list[ToolSpec]:
    """The tools passed, as specs; two with one name are a `RenderError`."""
    specs = as_tool_specs(tools)
    names = [spec.name for spec in specs]
    if len(set(names)) != len(names):
        twice = next(name for name in names if names.count(name) > 1)
        raise RenderError(f"two tools are named {twice!r}; the API needs unique names")
    return specs


def object_schema(parameters: dict[str, Any]) -> dict[str, Any]:
    """A tool's schema with ``"type": "object"`` when it has no type (the APIs need one)."""
    return parameters if "type" in parameters else {"type": "object", **parameters}


def replayable_thinking(block: Mapping[str, Any]) -> bool:
    """A thinking block exactly as Anthropic wrote it: no unknown keys, every value a string."""
    kind = block.get("type")
    if kind == "thinking":
        return block.keys() == {"type", "thinking", "signature"} and all(
            isinstance(block[key], str) for key in ("thinking", "signature")
        )
    return (
        kind == "redacted_thinking"
        and block.keys() == {"type", "data"}
        and isinstance(block["data"], str)
    )


def call_used_twice(call_id: str) -> str:
    return f"tool call id {call_id!r} is used twice in the log"


def result_without_call(call_id: str) -> str:
    return f"tool result for {call_id!r} has no earlier tool call in the log"


def second_result(call_id: str) -> str:
    return f"tool call {call_id!r} has two results in the log"


P = TypeVar("P", bound="Progress")


class Shared:
    """Append-only state shared along one line of logs, each growing the one before.

    A progress sees the first ``n`` items; positions record when a call id or tool name
    first appeared, so a progress sees those before its ``n``. The progress at the tip
    (``tip`` is its ``n``) extends it in place; one behind the tip (a log that diverged)
    first cuts it back to its own view, evicting the progresses past it from ``cache``,
    so neither path copies the history. All of it runs under the cache's lock.
    """

    __slots__ = ("cache", "call_ids", "entries", "prefix", "slots", "tip", "tools")

    def __init__(self, cache: ProgressCache[Any] | None = None) -> None:
        self.cache = cache
        #: The log's own items consumed so far (records or bare events), held strongly.
        self.prefix: list[object] = []
        #: What is sent, in order (bytes or typed items), and what each one renders.
        self.entries: list[Any] = []
        self.slots: list[Any] = []
        self.call_ids: dict[str, int] = {}
        self.tools: dict[str, int] = {}
        self.tip = -1

    def cut(self, n: int, m: int) -> None:
        """Back to the first ``n`` items and ``m`` entries; the progresses past them go."""
        if self.cache is not None:
            self.cache.evict_past(self, n)
        del self.prefix[n:]
        del self.entries[m:]
        del self.slots[m:]
        # Both dicts gained entries in position order, so those past n are the newest.
        for positions in (self.call_ids, self.tools):
            while positions and next(reversed(positions.values())) >= n:
                positions.popitem()
        self.tip = n


class Progress:
    """A route's walk after a prefix of a log; a cached one never changes its view.

    Its view of `Shared`: the first ``n`` items and ``m`` entries. ``rope``: blocks of
    the entries that no longer change, the one field a cached progress may have replaced
    (every rope of it is true for it). ``images``: the images in the view, labelled, in
    log order (checked against the limits once, then ``images_checked``).
    """

    __slots__ = ("images", "images_checked", "m", "n", "rope", "shared", "tag")

    def __init__(self, shared: Shared, tag: object = None) -> None:
        self.shared = shared
        self.tag = tag
        self.n = 0
        self.m = 0
        self.rope: Rope = EMPTY
        self.images: list[tuple[str, Image]] = []
        self.images_checked = False

    def copy(self) -> Self:
        """A copy whose own containers may change without touching this one's."""
        other = object.__new__(type(self))
        for cls in type(self).__mro__:
            for name in getattr(cls, "__slots__", ()):
                setattr(other, name, getattr(self, name))
        other.images = list(self.images)
        return other

    def extend(self) -> Self:
        """A progress to consume more items, on this one's state cut back to its view."""
        if self.shared.tip != self.n:
            self.rewind()
        return self.copy()

    def rewind(self) -> None:
        """Cut the shared state back to this progress's view."""
        self.shared.cut(self.n, self.m)

    def consume(self, items: list[object]) -> None:  # pragma: no cover - each route's own
        raise NotImplementedError

    def used_tools(self) -> list[str]:
        """The tool names the log's calls use, in order of first use."""
        n = self.n
        return [name for name, at in self.shared.tools.items() if at < n]

    def add_images(self, event: WireEvent, at: int) -> None:
        if found := event_images(event, at):
            self.images += found
            self.images_checked = False


class ProgressCache(Generic[P]):
    """One renderer's walks of recent logs, by (tag, id of the last item consumed).

    The items are held strongly by the shared prefix, so ids stay unique while cached.
    An agent re-sends its log grown by a few events: the walk back from the end finds
    the previous call's progress in a few steps. One render at a time per renderer (they
    share and rewind state): rendering holds the GIL throughout, so threads lose no
    parallelism to ``lock``.
    """

    SLOTS = 16

    def __init__(self) -> None:
        self._entries: dict[tuple[object, int], P] = {}
        self.lock = threading.RLock()

    def clear(self) -> None:
        """Forget every walk (the next render of any log starts cold)."""
        self._entries.clear()

    def evict_past(self, shared: Shared, n: int) -> None:
        for key, cached in list(self._entries.items()):
            if cached.shared is shared and cached.n > n:
                del self._entries[key]

    def walk(self, items: Sequence[object], tag: object, fresh: Callable[[Shared], P]) -> P:
        """The walk after all of ``items``, resumed from the longest cached prefix walked
        with ``tag``; ``fresh`` starts one on new shared state."""
        entries = self._entries
        base: P | None = None
        for end in range(len(items), 0, -1):
            cached = entries.get((tag, id(items[end - 1])))
            # Identity, not equality: {"a": 1} == {"a": 1.0}, yet they encode differently.
            if (
                cached is not None
                and cached.n == end
                and all(map(operator.is_, cached.shared.prefix, islice(items, end)))
            ):
                if end == len(items):
                    return cached
                base = cached
                progress = cached.extend()
                break
        else:
            progress = fresh(Shared(self))
        try:
            progress.consume(list(items[progress.n :]))
        except RenderError:
            if base is not None:
                base.rewind()  # leave the shared state as it was (the view that was extended)
            raise
        if items:
            entries[(tag, id(items[-1]))] = progress
            while len(entries) > self.SLOTS:
                del entries[next(iter(entries))]
        return progress


S = TypeVar("S")
S_co = TypeVar("S_co", covariant=True)


class Indexed(Protocol[S_co]):
    """What placing breakpoints reads of a walk's slots: a length and each slot by index."""

    def __len__(self) -> int: ...
    def __getitem__(self, index: int, /) -> S_co: ...


class SlotsView(Generic[S]):
    """A walk's slots read through its view of the shared list, no copy: the shared ones
    up to ``m`` (each in ``pinned`` as this walk left it), then ``extra``."""

    __slots__ = ("_extra", "_m", "_pinned", "_shared")

    def __init__(self, shared: list[S], m: int, pinned: dict[int, S], extra: list[S]) -> None:
        self._shared = shared
        self._m = m
        self._pinned = pinned
        self._extra = extra

    def at(self, index: int) -> S:
        if index >= self._m:
            return self._extra[index - self._m]
        slot = self._pinned.get(index)
        return self._shared[index] if slot is None else slot

    def __len__(self) -> int:
        return self._m + len(self._extra)

    def __getitem__(self, index: int) -> S:
        return self.at(index)


class TurnMaker(Protocol):
    """What a route's input becomes on the OpenAI routes' walk (typed items or bytes)."""

    def keeps(self, event: Reasoning, tag: object) -> bool:
        """Whether this reasoning goes back with its turn."""
        ...

    def user(self, event: UserText | UserImage) -> tuple[Any, Any]:
        """A user event's entry and slot."""
        ...

    def turn(self, events: list[WireEvent]) -> list[tuple[Any, Any]]:
        """A closed turn's entries and slots (its events: non-blank texts, calls, reasoning)."""
        ...

    def answer(self, call: ToolCall, result: ToolResult | None) -> Any:
        """The entry answering ``call``: its result, or the interrupted answer (``None``)."""
        ...


class TurnWalk(Progress):
    """The OpenAI routes' walk (module docstring). ``holes``: each closed turn's call not
    yet answered, by call id, with its entry's index; a later log may fill it in the
    shared list, so this progress answers it itself (interrupted). ``turn``: the open
    turn's events, held back until a user event or a result closes it."""

    __slots__ = ("holes", "make", "said", "turn")

    def __init__(self, shared: Shared, make: TurnMaker, tag: object = None) -> None:
        super().__init__(shared, tag)
        self.make = make
        self.holes: dict[str, tuple[int, ToolCall]] = {}
        self.turn: list[WireEvent] = []
        self.said = False  # the open turn has a text or a call (so its reasoning may go)

    def copy(self) -> Self:
        other = super().copy()
        other.holes = dict(self.holes)
        other.turn = list(self.turn)
        return other

    def rewind(self) -> None:
        super().rewind()
        shared = self.shared
        for index, call in self.holes.values():
            shared.entries[index] = None
            shared.slots[index] = call

    def append(self, entry: Any, slot: Any) -> None:
        self.shared.entries.append(entry)
        self.shared.slots.append(slot)

    def close_turn(self) -> None:
        if not self.said:
            self.turn = []  # a turn with nothing else to say sends no reasoning either
            return
        turn = self.turn
        for entry, slot in self.make.turn(turn):
            self.append(entry, slot)
        calls = [event for event in turn if type(event) is ToolCall]
        for call in calls:
            self.holes[call.call_id] = (len(self.shared.entries), call)
            self.append(None, call)
        self.closed(calls)
        self.turn = []
        self.said = False

    def closed(self, calls: list[ToolCall]) -> None:
        """After a closed turn's holes (the chat route adds its image message here)."""

    def answered(self, result: ToolResult) -> None:
        """After a result fills its hole (the chat route files its images here)."""

    def consume(self, items: list[object]) -> None:
        """Walk ``items`` after the view (this progress owns the tip: `extend`)."""
        shared = self.shared
        call_ids = shared.call_ids
        make = self.make
        at = self.n
        for event in bare_events(items):
            kind = type(event)
            if kind is AssistantText:
                if event.text.strip():  # type: ignore[union-attr]
                    self.turn.append(event)
                    self.said = True
            elif kind is ToolCall:
                call = cast(ToolCall, event)
                if call.call_id in call_ids:
                    raise RenderError(call_used_twice(call.call_id))
                call_ids[call.call_id] = at
                shared.tools.setdefault(call.tool, at)
                self.turn.append(call)
                self.said = True
            elif kind is Reasoning:
                if make.keeps(cast(Reasoning, event), self.tag):
                    self.turn.append(event)
            elif kind is UserText:
                self.close_turn()
                if event.text.strip():  # type: ignore[union-attr]
                    self.append(*make.user(cast(UserText, event)))
            elif kind is UserImage:
                self.close_turn()
                self.append(*make.user(cast(UserImage, event)))
                self.add_images(event, at)
            else:
                result = cast(ToolResult, event)
                if result.call_id not in call_ids:
                    raise RenderError(result_without_call(result.call_id))
                self.close_turn()
                hole = self.holes.pop(result.call_id, None)
                if hole is None:
                    raise RenderError(second_result(result.call_id))
                shared.entries[hole[0]] = make.answer(hole[1], result)
                shared.slots[hole[0]] = result
                self.answered(result)
                self.add_images(result, at)
            at += 1
        shared.prefix.extend(items)
        self.n = len(shared.prefix)
        self.m = len(shared.entries)
        shared.tip = self.n

    def open_turn(self) -> tuple[list[Any], list[Any]]:
        """The open turn's entries and slots as if closed now, its calls interrupted."""
        if not self.said:
            return [], []
        made = self.make.turn(self.turn)
        entries = [entry for entry, _ in made]
        slots = [slot for _, slot in made]
        for event in self.turn:
            if type(event) is ToolCall:
                entries.append(self.make.answer(event, None))
                slots.append(event)
        return entries, slots

    def finish(self, start: int = 0) -> tuple[int, list[Any]]:
        """How many entries to send, and those from ``start`` on: the open turn closed,
        every unanswered call answered as interrupted."""
        extra, _ = self.open_turn()
        m = self.m
        rest = self.shared.entries[start:m] if start < m else []
        for index, call in self.holes.values():
            if index >= start:
                rest[index - start] = self.make.answer(call, None)
        rest.extend(extra[max(0, start - m) :])
        return m + len(extra), rest

    def final(self) -> int:
        """Entries before this index no longer change (no hole before them)."""
        return min((hole[0] for hole in self.holes.values()), default=self.m)

    def grow_rope(self, limit: int) -> Rope:
        """The rope, grown up to ``limit`` over entries that became final (no hole before
        them): a block past this call's first breakpoint would be of no use to it."""
        rope = self.rope
        final = min(self.final(), limit)
        if final > rope.covered:
            # An entry still empty (the chat route's image message without images) is none.
            run = [entry for entry in self.shared.entries[rope.covered : final] if entry]
            rope = self.rope = rope.extended(run, final)
        return rope
