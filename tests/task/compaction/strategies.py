"""Logs for compaction: the shared valid logs (tests.strategies) with bulk and images added.

Compaction matters when tool outputs are large and images are present, which the shared
strategy rarely draws; these logs add both, and markers of earlier compactions (with and
without a summary), keeping every rule the canonical model has.
"""

from __future__ import annotations

from hypothesis import strategies as st

from nisse_llm.events.canonical import CanonicalEvent, Compaction, ToolResult, UserImage, UserText
from nisse_llm.events.images import Image
from nisse_llm.testing.images import png
from tests.strategies import logs

__all__ = ["bulky_logs", "corrupted_logs"]

_IMAGE = Image.from_bytes(png(8, 6, seed=1))


@st.composite
def bulky_logs(draw: st.DrawFn, *, max_steps: int = 30) -> list[CanonicalEvent]:
    """A valid log (first a user message) whose results may be long and carry images, with
    user images here and there."""
    events: list[CanonicalEvent] = [UserText(text=draw(st.sampled_from(["Fix the bug.", "Hi"])))]
    for event in draw(logs(max_steps=max_steps)):
        if isinstance(event, ToolResult) and draw(st.booleans()):
            bulk = draw(st.integers(0, 3000))
            images = (_IMAGE,) if draw(st.integers(0, 4)) == 0 else ()
            event = ToolResult(
                call_id=event.call_id,
                output=event.output + "x" * bulk,
                is_error=event.is_error,
                images=images,
            )
        events.append(event)
        if draw(st.integers(0, 9)) == 0:
            events.append(UserImage(image=_IMAGE))
        if draw(st.integers(0, 14)) == 0:
            summary = draw(st.none() | st.text(max_size=40))
            events.append(Compaction(removed=draw(st.integers(0, 20)), summary=summary))
    return events


@st.composite
def corrupted_logs(draw: st.DrawFn) -> list[CanonicalEvent]:
    """A valid log with corruption spliced in: duplicated calls and results, orphan results."""
    events = list(draw(logs(max_steps=20)))
    for _ in range(draw(st.integers(1, 4))):
        index = draw(st.integers(0, len(events)))
        kind = draw(st.sampled_from(["duplicate", "orphan"]))
        if kind == "duplicate" and events:
            events.insert(index, events[draw(st.integers(0, len(events) - 1))])
        else:
            events.insert(index, ToolResult(call_id="orphan-0", output="lost"))
    return events
