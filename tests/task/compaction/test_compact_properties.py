"""Properties of compact over generated logs: it renders everywhere, fits, and keeps what it promises."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nisse_llm.errors import ContextWindowExceeded
from nisse_llm.events.canonical import (
    AssistantText,
    CanonicalEvent,
    Compaction,
    Reasoning,
    ToolCall,
    ToolResult,
    UserImage,
    UserText,
)
from nisse_llm.render.anthropic_messages import AnthropicMessagesRenderer
from nisse_llm.render.openai_chat import OpenAIChatRenderer
from nisse_llm.task.compaction import _units, compact, elide, estimate_log_tokens, repair
from tests.render.anthropic_checker import anthropic_violations, official_violations
from tests.render.openai_checker import check_chat_body
from tests.render.test_openai_official import judge_official, judge_schema
from tests.strategies import MODELS, tool_specs
from tests.task.compaction.strategies import bulky_logs

ANT = AnthropicMessagesRenderer()
CHAT = OpenAIChatRenderer()
PROPERTY = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
#: The main property runs over thousands of logs and budgets.
THOROUGH = settings(PROPERTY, max_examples=1000)


def _renders_everywhere(events: list[CanonicalEvent], tools: list) -> None:  # type: ignore[type-arg]
    for model in MODELS:
        body = ANT.render(events, tools, model)
        assert anthropic_violations(body) == []
        assert official_violations(body) == []
    chat = json.loads(CHAT.render_bytes(events, tools, "gpt-4o-mini"))
    check_chat_body(chat)
    judge_official(chat)
    judge_schema(chat)


@THOROUGH
@given(bulky_logs(), tool_specs(), st.floats(0.05, 1.2), st.integers(0, 3))
def test_compact_renders_on_every_route_and_fits_its_budget(
    events: list[CanonicalEvent],
    tools: list,
    share: float,
    keep: int,  # type: ignore[type-arg]
) -> None:
    """A compacted log is under budget by the estimate, and every renderer and both SDKs' request types accept it."""
    budget = max(1, int(estimate_log_tokens(events, tools) * share))
    try:
        short = compact(events, budget_tokens=budget, keep_last_turns=keep, tools=tools)
    except ContextWindowExceeded as exc:
        refused: ContextWindowExceeded | None = exc
    else:
        refused = None
    if refused is not None:  # only when even the kept part is over the budget
        assert refused.requested_tokens is not None
        assert refused.requested_tokens > budget
        return
    assert estimate_log_tokens(short, tools) <= budget
    assert repair(short, answer_dangling=False)[1] == []  # still a valid canonical log
    _renders_everywhere(short, tools)


@PROPERTY
@given(bulky_logs(), st.floats(0.05, 0.95), st.integers(0, 3))
def test_compact_keeps_order_ids_the_first_message_the_last_turns_and_a_prefix(
    events: list[CanonicalEvent], share: float, keep: int
) -> None:
    """Kept events are the same objects in the same order; the first user message, the last
    turns and everything before the first change are untouched; a marker counts what went."""
    budget = max(1, int(estimate_log_tokens(events) * share))
    try:
        short = compact(events, budget_tokens=budget, keep_last_turns=keep)
    except ContextWindowExceeded:
        return
    assert short[0] is events[0]  # the first user message
    tail = sum(end - start for start, end in _units(events)[1:][-keep:]) if keep else 0
    if tail:
        assert all(a is b for a, b in zip(short[-tail:], events[-tail:], strict=True))
    changed = next(
        (i for i, (a, b) in enumerate(zip(short, events, strict=False)) if a is not b),
        min(len(short), len(events)),
    )
    assert all(a is b for a, b in zip(short[:changed], events[:changed], strict=True))
    position = 0
    given = {id(e) for e in events}
    markers = [e for e in short if type(e) is Compaction and id(e) not in given]
    assert len(markers) <= 1
    kept: set[int] = set()
    for event in short:
        if any(event is marker for marker in markers):
            continue
        while position < len(events) and not (
            events[position] is event or elide(events[position]) == event
        ):
            position += 1
        assert position < len(events), f"{event!r} is not from the log, or out of order"
        kept.add(position)
        position += 1
    dropped = [e for n, e in enumerate(events) if n not in kept]
    # An earlier marker dropped with the turns counts the events it stood for.
    removed = sum(e.removed if isinstance(e, Compaction) else 1 for e in dropped)
    assert [m.removed for m in markers] == ([removed] if dropped else [])


@settings(max_examples=100, deadline=None)
@given(bulky_logs())
def test_a_log_that_fits_comes_back_unchanged(events: list[CanonicalEvent]) -> None:
    """A log already under its budget is returned as it is, event for event."""
    short = compact(events, budget_tokens=estimate_log_tokens(events))
    assert all(a is b for a, b in zip(short, events, strict=True))


def test_elision_comes_before_dropping_and_says_what_went() -> None:
    """Old outputs are elided first (a placeholder with their size); turns go only when that is not enough."""
    from nisse_llm.events.canonical import ToolCall

    events: list[CanonicalEvent] = [UserText(text="Fix it.")]
    for n in range(6):
        events += [
            ToolCall(call_id=f"c{n}", tool="read_file", arguments={"n": n}),
            ToolResult(call_id=f"c{n}", output="line\n" * 400),
        ]
    full = estimate_log_tokens(events)
    elided = compact(events, budget_tokens=int(full * 0.6), keep_last_turns=1)
    assert len(elided) == len(events)  # nothing dropped
    first = elided[2]
    assert isinstance(first, ToolResult)
    assert first.output == "[Output elided to fit the context window: 2000 characters removed.]"
    dropped = compact(events, budget_tokens=int(full * 0.2), keep_last_turns=1)
    assert isinstance(dropped[1], Compaction)
    assert dropped[1].removed > 0
    assert dropped[-2:] == events[-2:]


def test_an_old_image_is_elided_to_a_placeholder() -> None:
    """An old user image becomes a text saying an image of that size was removed."""
    from nisse_llm.events.images import Image
    from nisse_llm.testing.images import png

    image = UserImage(image=Image.from_bytes(png(40, 40, seed=3)))
    placeholder = elide(image)
    assert isinstance(placeholder, UserText)
    assert (
        placeholder.text
        == f"[Image elided to fit the context window: {image.image.size} bytes removed.]"
    )


@PROPERTY
@given(bulky_logs(), st.floats(0.05, 0.95), st.integers(0, 3))
def test_reasoning_leaves_and_stays_with_the_turn_it_leads(
    events: list[CanonicalEvent], share: float, keep: int
) -> None:
    """A reasoning block kept by compact still leads the same event it led; one whose turn went went with it."""
    budget = max(1, int(estimate_log_tokens(events) * share))
    try:
        short = compact(events, budget_tokens=budget, keep_last_turns=keep)
    except ContextWindowExceeded:
        return
    led = {
        id(event): events[index + 1]
        for index, event in enumerate(events[:-1])
        if isinstance(event, Reasoning) and not isinstance(events[index + 1], Reasoning)
    }
    kept = {id(event) for event in short}
    for index, event in enumerate(short):
        if id(event) in led:
            follower = led[id(event)]
            assert index + 1 < len(short)
            assert short[index + 1] is follower or elide(follower) == short[index + 1]
    for reasoning_id, follower in led.items():
        if id(follower) in kept and isinstance(follower, AssistantText | ToolCall):
            assert reasoning_id in kept
