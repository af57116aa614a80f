"""The router's CompactionPolicy, sync and async, against a scripted upstream that lists a small window."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from nisse_llm.errors import ContextWindowExceeded
from nisse_llm.events.canonical import CanonicalEvent, Compaction, ToolCall, ToolResult, UserText
from nisse_llm.task.logstore import AsyncFileTaskStore, FileTaskStore, TaskStore
from nisse_llm.task.summaries import SUMMARY_INSTRUCTIONS, CompactionPolicy
from nisse_llm.testing import (
    RecordedRequest,
    Script,
    ScriptedTransport,
    ToolUse,
    openai_failure,
    reply,
)
from nisse_llm.transport.routers import AsyncRoleRouter, RoleRouter
from tests.corpus import READ_FILE
from tests.task.helpers import make_pin

WINDOW = 2000
MODEL = "gpt-4.1-mini"  # the executor's model in the test pin (chat route)
OUTPUT = "x = 1  # fine\n" * 40
OVERFLOW = "This model's maximum context length is 2000 tokens. However, your messages resulted in 2500 tokens."


class _Window(ScriptedTransport):
    """The scripted upstream, plus a model list giving the executor's model a small window."""

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        return _listing(request) or super().handle_request(request)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        return _listing(request) or await super().handle_async_request(request)


def _listing(request: httpx.Request) -> httpx.Response | None:
    if not request.url.path.endswith("/model/info"):
        return None
    data = [{"model_name": MODEL, "model_info": {"max_input_tokens": WINDOW}}]
    return httpx.Response(200, json={"data": data})


def _summary(request: RecordedRequest) -> bool:
    return SUMMARY_INSTRUCTIONS in (request.last_user_text or "")


def _script(turns: int) -> Script:
    summaries = [reply(f"Earlier, part {n}: read files, all fine.") for n in range(turns)]
    script = Script().when(*summaries, where=_summary)
    script.chat(*[reply(ToolUse("read_file", {"path": f"{n}.py"})) for n in range(turns)])
    return script.chat(reply("Done."))


def _results(answer: list[CanonicalEvent]) -> list[CanonicalEvent]:
    return [ToolResult(call_id=e.call_id, output=OUTPUT) for e in answer if isinstance(e, ToolCall)]


def _summarised_task(tmp_path: Path) -> tuple[Script, TaskStore, list[CanonicalEvent]]:
    """Eight file reads and an answer through a router that summarises near the window."""
    script = _script(8)
    store = FileTaskStore(tmp_path / "task.jsonl")
    policy = CompactionPolicy(keep_last_turns=1, summarize_role="delegate", summary_tokens=100)
    with RoleRouter.from_pin(
        make_pin(), store=store, compaction=policy, transport=_Window(script)
    ) as llm:
        log: list[CanonicalEvent] = [store.append_event(UserText(text="Check all files.")).event]
        while True:
            answer = llm.complete("executor", log, [READ_FILE])
            results = _results(answer)
            store.append_events([*answer, *results])
            log += [*answer, *results]
            if not results:
                break
    return script, store, log


def test_the_full_log_is_compacted_once_and_later_calls_send_the_compacted_one(
    tmp_path: Path,
) -> None:
    """A caller keeping its full log past 80% of the window gets it compacted (and summarised)
    before the call, recorded in the store; later calls send the compacted log plus what is new."""
    script, store, log = _summarised_task(tmp_path)
    agent = [r for r in script.requests if r.route and not _summary(r)]
    sizes = [len(r.body) for r in agent]
    assert max(sizes) < len(json.dumps([e.model_dump() for e in log]))  # never the whole log
    found = FileTaskStore(store.path).read()
    compactions = [r.event for r in found.events if isinstance(r.event, Compaction)]
    assert compactions
    assert {c.llm_call.compacted for c in found.calls if c.llm_call.role == "executor"} == {
        None,
        "threshold",
    }
    # Each call was compacted at most once, and calls after a compaction reuse it.
    marked = [c for c in found.calls if c.llm_call.compacted]
    assert len(marked) == len(compactions)
    assert len(marked) < len(agent)


def test_a_compaction_of_a_compacted_log_sends_one_summary_note_standing_for_both(
    tmp_path: Path,
) -> None:
    """Compacted again and again as the task grows, every request carries at most one
    context note, and each new summary is asked of a transcript holding the previous one."""
    script, store, _ = _summarised_task(tmp_path)
    summaries = [r for r in script.requests if r.route and _summary(r)]
    assert len(summaries) >= 2
    for n, request in enumerate(summaries[1:]):
        assert f"Earlier, part {n}: read files" in (request.last_user_text or "")
    agent = [r for r in script.requests if r.route and not _summary(r)]
    notes = [r.body.decode().count("[Context note: ") for r in agent]
    assert max(notes) == 1, notes
    assert notes[-1] == 1
    (marker,) = [
        i.event for i in FileTaskStore(store.path).read().view if isinstance(i.event, Compaction)
    ]
    assert marker.summary == f"Earlier, part {len(summaries) - 1}: read files, all fine."


def test_an_overflow_after_a_compaction_in_the_same_call_is_raised(tmp_path: Path) -> None:
    """A call compacted before it is sent and still refused as too long is not compacted again: the refusal reaches the caller."""
    script = Script().chat(openai_failure(400, OVERFLOW, code="context_length_exceeded"))
    store = FileTaskStore(tmp_path / "task.jsonl")
    big: list[CanonicalEvent] = [UserText(text="Check.")]
    for n in range(10):
        big += [
            ToolCall(call_id=f"c{n}", tool="read_file", arguments={}),
            ToolResult(call_id=f"c{n}", output=OUTPUT),
        ]
    with (
        RoleRouter.from_pin(
            make_pin(), store=store, compaction=CompactionPolicy(), transport=_Window(script)
        ) as llm,
        pytest.raises(ContextWindowExceeded),
    ):
        llm.complete("executor", big, [READ_FILE])
    (call,) = FileTaskStore(store.path).read().calls
    assert (call.llm_call.outcome, call.llm_call.compacted) == (
        "ContextWindowExceeded",
        "threshold",
    )
    assert len([r for r in script.requests if r.route]) == 1


async def test_the_async_router_compacts_after_an_overflow_and_retries(tmp_path: Path) -> None:
    """AsyncRoleRouter: a refusal as too long is followed by one compaction and one retry, recorded as such."""
    script = Script().when(reply("Summary."), where=_summary)
    script.chat(openai_failure(400, OVERFLOW, code="context_length_exceeded"), reply("Done."))
    store = FileTaskStore(tmp_path / "task.jsonl").begin(make_pin())
    log: list[CanonicalEvent] = [UserText(text="Check.")]
    for n in range(3):
        log += [
            ToolCall(call_id=f"c{n}", tool="read_file", arguments={}),
            ToolResult(call_id=f"c{n}", output=OUTPUT),
        ]
    store.append_events(log)
    policy = CompactionPolicy(
        threshold=1.0, target=0.7, keep_last_turns=1, summarize_role="delegate", summary_tokens=50
    )
    async with AsyncRoleRouter.from_pin(
        make_pin(),
        store=AsyncFileTaskStore(store.path),
        compaction=policy,
        transport=_Window(script),
    ) as llm:
        answer = await llm.complete("executor", log, [READ_FILE])
    assert answer[-1].kind == "assistant_text"
    calls = [
        (c.llm_call.role, c.llm_call.outcome, c.llm_call.compacted)
        for c in FileTaskStore(store.path).read().calls
    ]
    assert ("executor", "ContextWindowExceeded", None) in calls
    assert ("executor", "ok", "overflow") in calls
    assert any(isinstance(r.event, Compaction) for r in FileTaskStore(store.path).read().events)


def test_a_policy_naming_an_unknown_summary_role_is_refused_at_once() -> None:
    """A router is not built with a policy whose summarising role the pin does not define."""
    from nisse_llm.errors import UnknownRoleError

    with pytest.raises(UnknownRoleError):
        RoleRouter.from_pin(make_pin(), compaction=CompactionPolicy(summarize_role="scribe"))


def test_a_policy_with_target_above_threshold_is_refused() -> None:
    """CompactionPolicy refuses a target above its threshold (it would compact on every call)."""
    with pytest.raises(ValueError, match="target <= threshold"):
        CompactionPolicy(threshold=0.5, target=0.8)
