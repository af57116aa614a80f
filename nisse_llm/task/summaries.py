"""Summaries by a role, and the router's compaction policy.

`summarize` compacts a log as `compact` does and asks a role (the delegate, say) to
summarise what was dropped; the summary goes where the dropped turns stood, inside their
`Compaction`, which every route sends as user-side context. `CompactionPolicy` makes a
`RoleRouter` do this on its own, before a call near the model's window or once after a
`ContextWindowExceeded`.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable, Generator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias, assert_never

from nisse_llm import defaults
from nisse_llm._drive import adrive, drive
from nisse_llm.events.canonical import (
    AssistantText,
    CanonicalEvent,
    Compaction,
    LogLike,
    Reasoning,
    ToolCall,
    ToolLike,
    ToolResult,
    ToolsLike,
    UserImage,
    UserText,
    as_events,
)
from nisse_llm.task.compaction import Counter, Plan, estimate_log_tokens, plan_steps

if TYPE_CHECKING:
    from nisse_llm.config.options import RequestOptions

__all__ = ["SUMMARY_INSTRUCTIONS", "CompactionPolicy", "asummarize", "summarize"]


class RoleCompleter(Protocol):
    """What `summarize` asks a summary of: a `RoleRouter` (the routers sit above the task
    layer, so it is named by what it does)."""

    def complete(
        self,
        role: str,
        events: LogLike,
        tools: ToolsLike,
        system: str | None = None,
        *,
        options: RequestOptions | None = None,
    ) -> list[CanonicalEvent]:
        """The reply of ``role``'s model to ``events``."""
        ...


class AsyncRoleCompleter(Protocol):
    """`RoleCompleter` for asyncio: an `AsyncRoleRouter`."""

    async def complete(
        self,
        role: str,
        events: LogLike,
        tools: ToolsLike,
        system: str | None = None,
        *,
        options: RequestOptions | None = None,
    ) -> list[CanonicalEvent]:
        """The reply of ``role``'s model to ``events``."""
        ...


#: An async token counter (`AsyncLiteLLMClient`'s, through the proxy).
AsyncCounter: TypeAlias = Callable[[Sequence[CanonicalEvent]], Awaitable[int]]

#: What the summarising role is asked (the transcript of the dropped part follows it).
SUMMARY_INSTRUCTIONS = (
    "Below is the earlier part of a conversation between a user and a coding agent, which "
    "is being removed to fit the context window. Write a concise summary the agent can "
    "continue from: the task, decisions made, facts learned (file names, errors, results), "
    "and what remains to do. Write only the summary."
)
#: Each event's text in the transcript is cut to this many characters (the head is kept).
_EVENT_CHARS = 4000
#: The transcript keeps its most recent characters up to this many.
_TRANSCRIPT_CHARS = 200_000


@dataclass(frozen=True, slots=True)
class CompactionPolicy:
    """When and how a `RoleRouter` compacts a call's log on its own.

    Before a call whose log counts more than ``threshold`` of the model's input window
    (``ModelInfo.max_input_tokens``; never for a model without one), or once after the
    model refused the call as too long, the router compacts the log down to ``target`` of
    the window, with ``summarize_role`` summarising the dropped part (no summary when None),
    keeping ``keep_last_turns`` turns; at most once per call.
    """

    threshold: float = 0.8
    target: float = 0.5
    keep_last_turns: int = defaults.KEEP_LAST_TURNS
    summarize_role: str | None = None
    #: Room kept for the summary, and the summary's output ceiling.
    summary_tokens: int = defaults.SUMMARY_TOKENS

    def __post_init__(self) -> None:
        if not 0 < self.target <= self.threshold <= 1:
            raise ValueError(
                f"CompactionPolicy needs 0 < target <= threshold <= 1, not "
                f"target={self.target}, threshold={self.threshold}"
            )


def transcript(events: Sequence[CanonicalEvent]) -> str:
    """The dropped events as plain text for the summarising role (images named only)."""
    lines: list[str] = []
    for event in events:
        if isinstance(event, UserText):
            line = f"User: {event.text}"
        elif isinstance(event, AssistantText):
            line = f"Agent: {event.text}"
        elif isinstance(event, ToolCall):
            line = f"Agent called {event.tool}({json.dumps(event.arguments, default=repr)})"
        elif isinstance(event, ToolResult):
            line = f"Tool {'error' if event.is_error else 'result'}: {event.output}"
        elif isinstance(event, UserImage):
            line = "User: [an image]"
        elif isinstance(event, Compaction):
            line = event.text
        elif isinstance(event, Reasoning):
            continue  # opaque, and never shown outside its model
        else:
            assert_never(event)
        if line.strip():
            lines.append(line[:_EVENT_CHARS])
    return "\n\n".join(lines)[-_TRANSCRIPT_CHARS:]


def _request(plan: Plan) -> list[CanonicalEvent]:
    return [UserText(text=f"{SUMMARY_INSTRUCTIONS}\n\n---\n\n{transcript(plan.removed)}")]


def _with_summary(plan: Plan, reply: Sequence[CanonicalEvent]) -> list[CanonicalEvent]:
    text = "\n\n".join(e.text for e in reply if isinstance(e, AssistantText)).strip()
    events = list(plan.events)
    if plan.marker is not None and text:
        marker = events[plan.marker]
        events[plan.marker] = Compaction(removed=getattr(marker, "removed", 0), summary=text)
    return events


@dataclass(frozen=True, slots=True)
class _SummaryAsk:
    """The summarising role's call a summary needs (the other asks are token counts)."""

    role: str
    events: list[CanonicalEvent]
    options: RequestOptions


def _summarizing(
    events: LogLike, role: str, budget_tokens: int, keep_last_turns: int, summary_tokens: int
) -> Generator[list[CanonicalEvent] | _SummaryAsk, Any, list[CanonicalEvent]]:
    """A summarised compaction as a dialogue: it yields each candidate log to count, then
    the summary call to make (sans-I/O: `summarize` and `asummarize` drive it)."""
    from nisse_llm.config.options import RequestOptions

    plan = yield from plan_steps(
        as_events(events),
        budget_tokens,
        keep_last_turns,
        keep_first_user=True,
        summary_tokens=summary_tokens,
    )
    if not plan.removed:
        return plan.events
    options = RequestOptions(max_output_tokens=summary_tokens)
    reply = yield _SummaryAsk(role, _request(plan), options)
    return _with_summary(plan, reply)


def summarize(
    router: RoleCompleter,
    role: str,
    events: LogLike,
    *,
    budget_tokens: int,
    keep_last_turns: int = defaults.KEEP_LAST_TURNS,
    tools: Sequence[ToolLike] | None = None,
    system: str | None = None,
    count: Counter | None = None,
    summary_tokens: int = defaults.SUMMARY_TOKENS,
) -> list[CanonicalEvent]:
    """`compact`, with ``role`` asked (through ``router``) to summarise the dropped turns.

    ``summary_tokens`` of the budget are kept for the summary, and cap its length. A log
    that fits, or one only elided, comes back without a call.
    """

    def do(ask: list[CanonicalEvent] | _SummaryAsk) -> Any:
        if isinstance(ask, _SummaryAsk):
            return router.complete(ask.role, ask.events, None, options=ask.options)
        return estimate_log_tokens(ask, tools, system) if count is None else count(ask)

    steps = _summarizing(events, role, budget_tokens, keep_last_turns, summary_tokens)
    return drive(steps, do)


async def asummarize(
    router: AsyncRoleCompleter,
    role: str,
    events: LogLike,
    *,
    budget_tokens: int,
    keep_last_turns: int = defaults.KEEP_LAST_TURNS,
    tools: Sequence[ToolLike] | None = None,
    system: str | None = None,
    count: Counter | AsyncCounter | None = None,
    summary_tokens: int = defaults.SUMMARY_TOKENS,
) -> list[CanonicalEvent]:
    """`summarize` for an `AsyncRoleRouter`; ``count`` may be async (a client's counter)."""

    async def do(ask: list[CanonicalEvent] | _SummaryAsk) -> Any:
        if isinstance(ask, _SummaryAsk):
            return await router.complete(ask.role, ask.events, None, options=ask.options)
        if count is None:
            return estimate_log_tokens(ask, tools, system)
        tokens = count(ask)
        return await tokens if inspect.isawaitable(tokens) else tokens

    steps = _summarizing(events, role, budget_tokens, keep_last_turns, summary_tokens)
    return await adrive(steps, do)


def policy_budget(
    policy: CompactionPolicy, window: int | None, tokens: int, *, refused: bool = False
) -> int:
    """The budget a policy compacts to: ``target`` of the window, or of the log's count when
    the window is unknown or the model refused a log that ``tokens`` says fits (the
    counter then under-counts for this model: the log must shrink all the same)."""
    limit = tokens if window is None or (refused and tokens < window) else window
    return max(1, int(limit * policy.target))
