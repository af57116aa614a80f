"""Compactions, duplicate ids and call starts in the task file, and resuming into the compacted view.

Every test runs on both stores (``place``: a task file and PostgreSQL)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from nisse_llm.events.canonical import (
    CanonicalEvent,
    Compaction,
    StoredEvent,
    ToolCall,
    ToolResult,
    UserText,
)
from nisse_llm.render.anthropic_messages import AnthropicMessagesRenderer
from nisse_llm.render.openai_chat import OpenAIChatRenderer
from nisse_llm.render.openai_responses import OpenAIResponsesRenderer
from nisse_llm.task.compaction import compact, estimate_log_tokens
from nisse_llm.task.logstore import LogDuplicateId, TaskStore
from nisse_llm.task.records import CallRecord, ResumedTask
from tests.task.helpers import BASE_URL, TOKEN, make_pin
from tests.task.stores import Place

ROOT = Path(__file__).resolve().parents[3]
SCHEMA = json.loads((ROOT / "schemas" / "stored-record.schema.json").read_text())


def _turns(n: int, *, start: int = 0, size: int = 2000) -> list[CanonicalEvent]:
    events: list[CanonicalEvent] = []
    for k in range(start, start + n):
        events += [
            ToolCall(call_id=f"c{k}", tool="read_file", arguments={"n": k}),
            ToolResult(call_id=f"c{k}", output=f"file {k}\n" + "word " * (size // 5)),
        ]
    return events


def _task(place: Place, events: list[CanonicalEvent]) -> TaskStore:
    store = place.open().begin(make_pin())
    store.append_events(events)
    return store


def _resume(place: Place) -> ResumedTask:
    """The task resumed by another store, closed again (the test's store writes on)."""
    task = place.open().resume(TOKEN, base_url=BASE_URL)
    task.store.close()
    return task


def _same_log(view: list[CanonicalEvent], made: list[CanonicalEvent]) -> None:
    """``view`` is ``made`` but that its markers also name their records: same bodies sent."""
    assert len(view) == len(made)
    for got, want in zip(view, made, strict=True):
        if isinstance(want, Compaction):
            assert isinstance(got, Compaction)
            assert (got.removed, got.summary, got.text) == (want.removed, want.summary, want.text)
        else:
            assert got == want
    for model in ("claude-sonnet-4-5", "gpt-4o-mini"):
        assert AnthropicMessagesRenderer().render_bytes(view, None, model) == (
            AnthropicMessagesRenderer().render_bytes(made, None, model)
        )
        assert OpenAIChatRenderer().render_bytes(view, None, model) == (
            OpenAIChatRenderer().render_bytes(made, None, model)
        )


def test_a_recorded_compaction_is_the_view_a_resume_sends(place: Place) -> None:
    """After append_compaction, resume gives the compacted log (equal to what compact returned) and the full history."""
    log = [UserText(text="Fix the parser."), *_turns(8)]
    store = _task(place, log)
    short = compact(log, budget_tokens=estimate_log_tokens(log) // 3, keep_last_turns=2)
    record = store.append_compaction(short)

    assert isinstance(record.event, Compaction)
    assert record.event.first_seq is not None
    assert record.event.last_seq is not None
    task = _resume(place)
    _same_log(task.events, short)
    assert [r.event for r in task.history] == [*log, record.event]
    assert task.repairs == []
    for line in place.lines():
        jsonschema.validate(json.loads(line), SCHEMA)


def test_compactions_nest_and_elisions_are_rebuilt_from_the_records(place: Place) -> None:
    """A second compaction of the compacted view (taking the first's marker with it) resumes to exactly what compact made."""
    log = [UserText(text="Fix the parser."), *_turns(6)]
    store = _task(place, log)
    first = compact(log, budget_tokens=int(estimate_log_tokens(log) * 0.6), keep_last_turns=2)
    store.append_compaction(first)
    assert any(isinstance(e, ToolResult) and e.output.startswith("[Output elided") for e in first)
    more = _turns(6, start=6)
    store.append_events(more)
    view = _resume(place).events
    _same_log(view, first + more)
    second = compact(view, budget_tokens=estimate_log_tokens(view) // 4, keep_last_turns=1)
    store.append_compaction(second)
    task = _resume(place)
    _same_log(task.events, second)
    markers = [e for e in task.events if isinstance(e, Compaction)]
    assert len(markers) == 1
    assert markers[0].first_seq == 2  # from the first record after the first message
    for body in (
        OpenAIChatRenderer().render(task.events, None, "gpt-4o-mini"),
        AnthropicMessagesRenderer().render(task.events, None, "claude-sonnet-4-5"),
    ):
        assert "removed to fit the context window" in json.dumps(body)


RENDERERS = {
    "openai_chat": (OpenAIChatRenderer, "gpt-4o-mini"),
    "anthropic_messages": (AnthropicMessagesRenderer, "claude-sonnet-4-5"),
    "openai_responses": (OpenAIResponsesRenderer, "gpt-5.4-mini"),
}


def test_two_nested_compactions_send_one_note_on_every_route(place: Place) -> None:
    """A second compaction that drops turns takes the first's marker with it: the next
    request on every route carries one context note counting both, in memory and resumed."""
    log = [UserText(text="Fix the parser."), *_turns(8)]
    store = _task(place, log)
    first = compact(log, budget_tokens=estimate_log_tokens(log) // 3, keep_last_turns=2)
    store.append_compaction(first)
    (earlier,) = [e for e in first if isinstance(e, Compaction)]
    more = _turns(8, start=8)
    store.append_events(more)
    view = _resume(place).events
    second = compact(view, budget_tokens=estimate_log_tokens(view) // 3, keep_last_turns=2)
    store.append_compaction(second)
    resumed = _resume(place).events
    _same_log(resumed, second)

    (marker,) = [e for e in resumed if isinstance(e, Compaction)]
    kept = [e for e in resumed if not isinstance(e, Compaction)]
    assert earlier.removed < marker.removed == len(log) + len(more) - len(kept)
    assert marker.first_seq == 2  # it stands for the first marker's records too
    for renderer, model in RENDERERS.values():
        for events in (second, resumed):
            body = renderer().render_bytes(events, None, model).decode()
            assert body.count("[Context note: ") == 1
            assert f"[Context note: {marker.removed} earlier event(s)" in body


def test_a_log_that_is_not_a_compaction_is_refused_and_nothing_written(place: Place) -> None:
    """append_compaction refuses a log that does not come from the file's view."""
    store = _task(place, [UserText(text="a"), *_turns(2)])
    before = place.lines()
    with pytest.raises(ValueError, match="not a compaction"):
        store.append_compaction([UserText(text="something else")])
    with pytest.raises(ValueError, match="nothing to record"):
        store.append_compaction(_resume(place).events)
    assert place.lines() == before


def test_a_reused_call_id_or_second_result_is_refused_when_written(place: Place) -> None:
    """append_event refuses a duplicate call id or result at once, even when another store wrote the first."""
    store = _task(place, [UserText(text="a"), *_turns(1)])
    other = place.open()
    other.append_event(ToolCall(call_id="c9", tool="run", arguments={}))
    other.close()
    before = place.lines()
    with pytest.raises(LogDuplicateId, match="'c9' is already in the log"):
        store.append_event(ToolCall(call_id="c9", tool="run", arguments={}))
    with pytest.raises(LogDuplicateId, match="'c0' already has its result"):
        store.append_events([ToolResult(call_id="c0", output="again")])
    with pytest.raises(LogDuplicateId):
        store.append_events([ToolCall(call_id="n", tool="t", arguments={})] * 2)
    assert place.lines() == before
    store.append_event(ToolResult(call_id="c9", output="fine"))


def test_resume_repairs_a_duplicate_written_before_the_check(place: Place) -> None:
    """A duplicated record from an older writer is dropped from the view, and the fix is listed."""
    store = _task(place, [UserText(text="a"), *_turns(1)])
    duplicate = ToolResult(call_id="c0", output="twice")
    store.append(StoredEvent.now(store.next_seq, duplicate))  # the raw append has no id check
    task = _resume(place)
    assert [(f.kind, f.call_id) for f in task.repairs] == [("duplicate_result", "c0")]
    assert duplicate not in task.events
    OpenAIChatRenderer().render(task.events, None, "gpt-4o-mini")


def test_a_call_that_started_and_never_ended_is_an_unknown_call(place: Place) -> None:
    """A start record with no end is listed apart and counted in unknown_calls, not in calls."""
    store = _task(place, [UserText(text="a")])
    ended_start = store.append_call(CallRecord(model="m", route="openai_chat", outcome="started"))
    store.append_call(
        CallRecord(role="planner", model="m", route="openai_chat", start=ended_start.seq)
    )
    lost = store.append_call(
        CallRecord(role="planner", model="m", route="openai_chat", outcome="started")
    )
    task = _resume(place)
    assert task.unknown_calls == [lost]
    assert task.usage.total.calls == 1
    assert task.usage.total.unknown_calls == 1
    assert task.usage.by_role["planner"].unknown_calls == 1
