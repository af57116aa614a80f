"""Shortening and repairing a canonical log so it still renders on every route (pure).

`compact` cuts a log to a token budget by two rules, in order: elide old tool outputs
and images (a placeholder says what went and how large it was), then drop whole old
turns, oldest first, where one `Compaction` event now stands (an earlier one among them
counted for the events it stood for, so the log never holds two). A log is cut only between
turns: a turn keeps its reasoning, its calls and their results together, so no call
loses its result, no result its call, and no tool turn its leading thinking. The first
user message and the last ``keep_last_turns`` turns stay as they are; the kept events
keep their order and their objects (hence ids), and the log before the first change is
unchanged, so the prompt cache still holds it.

`repair` makes a corrupt log renderable and says what it changed.
"""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable, Generator, Sequence
from dataclasses import dataclass, field
from typing import Literal

from pydantic_core import to_json

from nisse_llm import defaults
from nisse_llm._drive import adrive, drive
from nisse_llm.errors import ContextWindowExceeded
from nisse_llm.events.canonical import (
    AssistantText,
    CanonicalEvent,
    Compaction,
    LogLike,
    Reasoning,
    ToolCall,
    ToolLike,
    ToolResult,
    UserImage,
    UserText,
    as_events,
)
from nisse_llm.render._wording import INTERRUPTED_TEXT
from nisse_llm.wire.models_info import LETTERS_PER_TOKEN

__all__ = [
    "Counter",
    "LogFix",
    "Plan",
    "aplan_compaction",
    "compact",
    "elide",
    "estimate_log_tokens",
    "plan_compaction",
    "plan_steps",
    "repair",
]

#: Counts the input tokens of a request holding a log (the proxy's counter, or an estimate).
Counter = Callable[[Sequence[CanonicalEvent]], int]

_USER_SIDE = (UserText, UserImage, Compaction)
_ASSISTANT_SIDE = (AssistantText, ToolCall, Reasoning)


def elide(event: CanonicalEvent) -> CanonicalEvent:
    """``event`` with its tool output or image replaced by a placeholder saying what went.

    Deterministic (a function of the event alone), so a resumed task rebuilds the same
    text; an event with nothing to elide comes back as it is.
    """
    if isinstance(event, ToolResult):
        images = f" and {len(event.images)} image(s)" if event.images else ""
        placeholder = (
            f"[Output elided to fit the context window: {len(event.output)} characters"
            f"{images} removed.]"
        )
        if len(placeholder) >= len(event.output) and not event.images:
            return event
        return ToolResult(call_id=event.call_id, output=placeholder, is_error=event.is_error)
    if isinstance(event, UserImage):
        size = event.image.size
        what = f"{size} bytes" if size is not None else (event.image.url or "an image")
        return UserText(text=f"[Image elided to fit the context window: {what} removed.]")
    return event


def estimate_log_tokens(
    events: Sequence[CanonicalEvent],
    tools: Sequence[ToolLike] | None = None,
    system: str | None = None,
) -> int:
    """The offline estimate of a request's input tokens for ``events`` (no proxy needed).

    The chat route's body, estimated as `Headroom` does without a proxy, plus every
    replayable reasoning block (the messages route sends those back to their model): a
    count that errs high, the safe side for a budget.
    """
    from nisse_llm.render.openai_chat import OpenAIChatRenderer
    from nisse_llm.wire.models_info import estimate_input_tokens

    body = OpenAIChatRenderer().render_bytes(events, tools, "compaction-estimate", system)
    thinking = [e.block for e in events if isinstance(e, Reasoning) and e.replayable]
    extra = estimate_input_tokens(to_json({"messages": thinking})) if thinking else 0
    return estimate_input_tokens(body) + extra


def _units(events: Sequence[CanonicalEvent]) -> list[tuple[int, int]]:
    """The log cut where a new turn starts and nothing is pending: (start, end) pairs."""
    answered_at = {e.call_id: i for i, e in enumerate(events) if isinstance(e, ToolResult)}
    cuts = [0]
    open_until = -1  # the last index a call made so far is answered at
    for index, event in enumerate(events):
        if index and open_until < index:
            before = events[index - 1]
            # An earlier compaction's marker is a turn of its own: dropped with the old
            # turns after it, the new marker stands for both.
            new_user = isinstance(event, _USER_SIDE) and (
                not isinstance(before, _USER_SIDE) or isinstance(event, Compaction)
            )
            new_reply = isinstance(event, _ASSISTANT_SIDE) and not isinstance(
                before, _ASSISTANT_SIDE
            )
            if new_user or new_reply:
                cuts.append(index)
        if isinstance(event, ToolCall):
            open_until = max(open_until, answered_at.get(event.call_id, -1))
    cuts.append(len(events))
    return list(itertools.pairwise(cuts))


@dataclass(slots=True)
class Plan:
    """What `plan_compaction` decided: the new log and what it took out."""

    #: The compacted log (the input itself when it already fits).
    events: list[CanonicalEvent]
    #: The events dropped whole, in order (what a summary should cover).
    removed: list[CanonicalEvent] = field(default_factory=list)
    #: Index of the new `Compaction` in ``events`` (None when no turn was dropped).
    marker: int | None = None
    #: Indexes (in the input) of the events whose output or image was elided.
    elided: list[int] = field(default_factory=list)
    #: The count of the compacted log, by the counter used.
    tokens: int = 0


def plan_compaction(
    events: LogLike,
    *,
    budget_tokens: int,
    keep_last_turns: int = defaults.KEEP_LAST_TURNS,
    keep_first_user: bool = True,
    tools: Sequence[ToolLike] | None = None,
    system: str | None = None,
    count: Counter | None = None,
    summary_tokens: int = 0,
) -> Plan:
    """`compact`, returning the whole `Plan`; ``summary_tokens`` is room kept for a summary."""
    planner = plan_steps(
        as_events(events), budget_tokens, keep_last_turns, keep_first_user, summary_tokens
    )
    if count is None:
        return drive(planner, lambda candidate: estimate_log_tokens(candidate, tools, system))
    return drive(planner, count)


async def aplan_compaction(
    events: LogLike,
    *,
    budget_tokens: int,
    count: Callable[[Sequence[CanonicalEvent]], Awaitable[int]],
    keep_last_turns: int = defaults.KEEP_LAST_TURNS,
    keep_first_user: bool = True,
    summary_tokens: int = 0,
) -> Plan:
    """`plan_compaction` with an async ``count`` (an async client's token counter)."""
    planner = plan_steps(
        as_events(events), budget_tokens, keep_last_turns, keep_first_user, summary_tokens
    )
    return await adrive(planner, count)


def plan_steps(
    log: list[CanonicalEvent],
    budget_tokens: int,
    keep_last_turns: int,
    keep_first_user: bool,
    summary_tokens: int,
) -> Generator[list[CanonicalEvent], int, Plan]:
    """The compaction as a dialogue with a counter: it yields each candidate log and is sent
    its count (sans-I/O, so sync and async counters drive the same rules: `drive`)."""
    target = budget_tokens - summary_tokens
    total = yield log
    if total <= budget_tokens:
        return Plan(events=log, tokens=total)
    units = _units(log)
    head = 0
    if keep_first_user:
        first = next((i for i, e in enumerate(log) if isinstance(e, UserText)), None)
        if first is not None:
            head = next(n for n, (start, end) in enumerate(units) if start <= first < end) + 1
    tail = max(head, len(units) - max(keep_last_turns, 0))
    old = [index for start, end in units[head:tail] for index in range(start, end)]
    elisions = [i for i in old if elide(log[i]) is not log[i]]
    # Each step's saving, estimated locally; the counter decides after each batch.
    steps: list[tuple[str, int, int]] = [
        ("elide", i, _size(log[i]) - _size(elide(log[i]))) for i in elisions
    ]
    steps += [("drop", n, sum(_size(log[i]) for i in range(*units[n]))) for n in range(head, tail)]
    scale = total / max(1, sum(_size(e) for e in log))
    applied = 0
    current = total
    plan = Plan(events=log, tokens=total)
    while current > target:
        need, gained = current - target, 0.0
        start = applied
        while applied < len(steps) and gained < need:
            gained += steps[applied][2] * scale
            applied += 1
        if applied == start:
            raise ContextWindowExceeded(
                f"cannot compact this log under {budget_tokens} tokens: with every old turn "
                f"gone it still needs {current + summary_tokens} (the first user message and the "
                f"last {keep_last_turns} turn(s) are kept)",
                limit_tokens=budget_tokens,
                requested_tokens=current + summary_tokens,
            )
        plan = _build(log, units, steps[:applied])
        current = plan.tokens = yield plan.events
    return plan


def _size(event: CanonicalEvent) -> int:
    # Encoded bytes over letters-per-token: relative weights only (the counter rescales).
    return len(to_json(event)) // LETTERS_PER_TOKEN + 4


def _build(
    log: list[CanonicalEvent], units: list[tuple[int, int]], steps: list[tuple[str, int, int]]
) -> Plan:
    elided = {index for kind, index, _ in steps if kind == "elide"}
    dropped = sorted(index for kind, index, _ in steps if kind == "drop")
    gone = {i for n in dropped for i in range(*units[n])}
    events: list[CanonicalEvent] = []
    removed: list[CanonicalEvent] = []
    marker: int | None = None
    for index, event in enumerate(log):
        if index in gone:
            removed.append(event)
            if marker is None:
                marker = len(events)
                events.append(Compaction())  # its count is set once the drop is known
            continue
        events.append(elide(event) if index in elided else event)
    if marker is not None:
        count = sum(e.removed if isinstance(e, Compaction) else 1 for e in removed)
        events[marker] = Compaction(removed=count)
    return Plan(
        events=events,
        removed=removed,
        marker=marker,
        elided=sorted(elided - gone),
    )


def compact(
    events: LogLike,
    *,
    budget_tokens: int,
    keep_last_turns: int = defaults.KEEP_LAST_TURNS,
    keep_first_user: bool = True,
    tools: Sequence[ToolLike] | None = None,
    system: str | None = None,
    count: Counter | None = None,
) -> list[CanonicalEvent]:
    """A shorter log of the same task that fits ``budget_tokens`` and renders on every route.

    Old tool outputs and images are elided first, then whole old turns dropped (oldest
    first) where one `Compaction` now stands; the first user message (unless
    ``keep_first_user=False``) and the last ``keep_last_turns`` turns are never touched.
    ``count`` counts a request's input tokens (``RoleRouter`` passes the proxy's
    counter); the default is the offline estimate (`estimate_log_tokens`), with
    ``tools`` and ``system`` as the request will send them. A log that already fits comes
    back as it is. Raises `ContextWindowExceeded` when even the kept part is over budget.
    """
    return plan_compaction(
        events,
        budget_tokens=budget_tokens,
        keep_last_turns=keep_last_turns,
        keep_first_user=keep_first_user,
        tools=tools,
        system=system,
        count=count,
    ).events


@dataclass(frozen=True, slots=True)
class LogFix:
    """One change `repair` made: what, where (index in the log it was given), which call."""

    kind: Literal[
        "interrupted_result",
        "orphan_result",
        "duplicate_call",
        "duplicate_result",
        "wrapped_arguments",
    ]
    index: int
    call_id: str | None
    detail: str


def repair(
    events: LogLike, *, answer_dangling: bool = True
) -> tuple[list[CanonicalEvent], list[LogFix]]:
    """A log every route renders, and the list of what was changed to get it.

    A call never answered gets an "interrupted" error result at the end of its turn (the
    very result the renderers send for it, so the prompt cache survives; skipped with
    ``answer_dangling=False``); a result whose call is absent, a second call with an id
    already used and a second result for one call are dropped; arguments that cannot be
    encoded as JSON are wrapped as ``{"unparsed_arguments": "<their repr>"}``.
    """
    log = as_events(events)
    fixes: list[LogFix] = []
    kept: list[tuple[int, CanonicalEvent]] = []
    calls: set[str] = set()
    answered: set[str] = set()
    for index, event in enumerate(log):
        if isinstance(event, ToolCall):
            if event.call_id in calls:
                fixes.append(
                    LogFix(
                        "duplicate_call",
                        index,
                        event.call_id,
                        "a second call with this id was dropped",
                    )
                )
                continue
            calls.add(event.call_id)
            try:
                to_json(event.arguments)
            except ValueError as exc:
                event = ToolCall(
                    call_id=event.call_id,
                    tool=event.tool,
                    arguments={"unparsed_arguments": repr(event.arguments)},
                )
                fixes.append(LogFix("wrapped_arguments", index, event.call_id, f"not JSON: {exc}"))
        elif isinstance(event, ToolResult):
            if event.call_id not in calls:
                fixes.append(
                    LogFix(
                        "orphan_result",
                        index,
                        event.call_id,
                        "a result with no earlier call was dropped",
                    )
                )
                continue
            if event.call_id in answered:
                fixes.append(
                    LogFix(
                        "duplicate_result",
                        index,
                        event.call_id,
                        "a second result for this call was dropped",
                    )
                )
                continue
            answered.add(event.call_id)
        kept.append((index, event))
    if not answer_dangling:
        return [event for _, event in kept], fixes
    dangling = calls - answered
    repaired: list[CanonicalEvent] = []
    waiting: list[tuple[int, ToolCall]] = []
    for index, event in kept:
        if waiting and not isinstance(event, _ASSISTANT_SIDE):
            repaired += _interrupted(waiting, fixes)
            waiting = []
        repaired.append(event)
        if isinstance(event, ToolCall) and event.call_id in dangling:
            waiting.append((index, event))
    repaired += _interrupted(waiting, fixes)
    return repaired, fixes


def _interrupted(waiting: list[tuple[int, ToolCall]], fixes: list[LogFix]) -> list[CanonicalEvent]:
    results: list[CanonicalEvent] = []
    for index, call in waiting:
        results.append(ToolResult(call_id=call.call_id, output=INTERRUPTED_TEXT, is_error=True))
        fixes.append(
            LogFix("interrupted_result", index, call.call_id, "an interrupted result was added")
        )
    return results
