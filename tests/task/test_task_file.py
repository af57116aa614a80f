"""The task file: its header, call records, resume, old files, and concurrent writers.

Tests taking ``place`` run on both stores (a task file and PostgreSQL): one set of promises."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import threading
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path

import jsonschema
import pytest

from nisse_llm.errors import ConfigError
from nisse_llm.events.canonical import (
    AssistantText,
    CallInfo,
    StoredEvent,
    ToolCall,
    ToolResult,
    Usage,
    UserText,
    dump_jsonl,
)
from nisse_llm.task.logstore import (
    FileTaskStore,
    LogCorrupt,
    LogSequenceError,
    TaskHeaderMissing,
    TaskPinMismatch,
    TaskStore,
)
from nisse_llm.task.records import (
    CallRecord,
    StoredCall,
    StoredHeader,
    TaskHeader,
    ToolRunRecord,
    UsageTotal,
    UsageTotals,
    unfinished_batch,
)
from tests.task.helpers import BASE_URL, TOKEN, call_record, make_pin
from tests.task.stores import Place

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "schemas" / "stored-record.schema.json").read_text())


def test_begin_writes_the_pin_header_first_and_once(place: Place) -> None:
    """`begin` on a new task writes the pin record as record 0; again with the same pin, nothing."""
    pin = make_pin()

    store = place.open().begin(pin)
    store.append_event(UserText(text="go"))
    assert place.open().begin(pin).next_seq == 2

    records = place.open().read().records
    assert isinstance(records[0], StoredHeader)
    assert records[0].seq == 0
    assert records[0].header == TaskHeader(pin=pin.record())
    assert TOKEN.encode() not in b"".join(place.lines())
    assert [type(r) for r in records] == [StoredHeader, StoredEvent]


def test_a_different_pin_is_refused_naming_what_differs(place: Place) -> None:
    """A store begun with another pin than its header's is refused, and nothing is written."""
    first = make_pin()
    place.open().begin(first)
    before = place.lines()
    other = make_pin(planner="claude-opus-4-1")

    with pytest.raises(TaskPinMismatch) as caught:
        place.open().begin(other)

    assert caught.value.stored == first.fingerprint
    assert caught.value.given == other.fingerprint
    assert str(caught.value) == (
        f"{place.where}: the task was begun with pin {first.fingerprint}, not {other.fingerprint} "
        "(differs in: roles.planner); resume it with resume(token), or begin a new task in "
        "another file"
    )
    assert place.lines() == before


def test_old_events_only_file_reads_and_is_not_a_task(place: Place) -> None:
    """A log of bare events (the format before task records) reads as before; begin and
    resume say it has no header and leave it unchanged."""
    events = [UserText(text="a"), AssistantText(text="b", model="m")]
    place.plant(dump_jsonl(StoredEvent.now(n, e) for n, e in enumerate(events)).splitlines())
    before = place.lines()

    found = place.open().read()

    assert [r.event for r in found.events] == events
    assert found.records == found.events
    assert found.header is None
    assert found.usage == UsageTotals()
    with pytest.raises(TaskHeaderMissing, match="holds events but no task header"):
        place.open().begin(make_pin())
    with pytest.raises(TaskHeaderMissing, match="holds events but no task header"):
        place.open().resume(TOKEN, base_url=BASE_URL)
    assert place.lines() == before
    assert place.open().append_event(UserText(text="c")).seq == 2


def test_resume_of_a_missing_file_creates_nothing(tmp_path: Path) -> None:
    """Resuming a task file that does not exist fails clearly and creates no file."""
    with pytest.raises(TaskHeaderMissing, match="no such task file"):
        FileTaskStore(tmp_path / "absent.jsonl").resume(TOKEN, base_url=BASE_URL)
    assert not (tmp_path / "absent.jsonl").exists()


def test_a_header_goes_only_first(place: Place) -> None:
    """Appending a header after other records is refused; a log with one later is corrupt."""
    store = place.open().begin(make_pin())
    header = StoredHeader.now(5, TaskHeader(pin=make_pin().record()))

    with pytest.raises(LogSequenceError, match="a task header must be the file's first record"):
        store.append(header)

    place.plant([json.dumps(header.model_dump(mode="json")).encode()])
    with pytest.raises(LogCorrupt, match=re.escape(f"{place.where}:2: a task header after")):
        place.open().read()


def test_resume_rebuilds_pin_events_pending_calls_and_usage(place: Place) -> None:
    """From the store alone: the pin (with the caller's token), the events in order, the
    unanswered tool calls and the usage totals, per role and overall."""
    pin = make_pin()
    store = place.open().begin(pin)
    answered = ToolCall(call_id="call_a", tool="read", arguments={"path": "a"})
    pending = ToolCall(call_id="call_b", tool="read", arguments={"path": "b"})
    events = [
        UserText(text="fix it"),
        answered,
        pending,
        ToolResult(call_id="call_a", output="contents"),
    ]
    store.append_events(events[:3])
    calls = [call_record(n) for n in range(1, 7)]
    for record in calls[:3]:
        store.append_call(record)
    store.append_event(events[3])
    for record in calls[3:]:
        store.append_call(record)

    written = store.read().records
    task = place.open().resume(TOKEN, base_url=BASE_URL)

    assert task.pin == pin
    assert task.pin.token.get_secret_value() == TOKEN
    assert task.events == events
    assert task.pending_calls == [pending]
    assert task.repaired is None
    assert task.store.read().records == written
    # n = 5 has no cost; the others cost 0.000000(n+1) dollars.
    assert task.usage.total == UsageTotal(
        input=sum(100 + n for n in range(1, 7)),
        output=sum(range(1, 7)),
        cache_read=sum(n % 7 for n in range(1, 7)),
        cache_write=sum(n % 3 for n in range(1, 7)),
        calls=6,
        cost_usd=Decimal("0.000021"),
        unpriced_calls=1,
    )  # fmt: skip
    assert set(task.usage.by_role) == {"executor", "planner", "delegate"}
    assert task.usage.by_role["executor"].calls == 2  # n = 3, 6
    assert task.usage.by_role["executor"].input == 103 + 106
    assert sum((t for t in task.usage.by_role.values()), UsageTotal()) == task.usage.total


def test_resume_removes_a_torn_tail(tmp_path: Path) -> None:
    """A crash's torn last line is removed by resume (returned as ``repaired``), so the
    resumed agent can append at once."""
    path = tmp_path / "task.jsonl"
    FileTaskStore(path).begin(make_pin()).append_event(UserText(text="a"))
    with path.open("ab") as file:
        file.write(b'{"seq":2,"at":"2026')

    task = FileTaskStore(path).resume(TOKEN, base_url=BASE_URL)

    assert task.repaired == b'{"seq":2,"at":"2026'
    assert task.store.append_event(UserText(text="b")).seq == 2
    assert FileTaskStore(path).read().torn_tail is None


def test_begin_removes_a_torn_header(tmp_path: Path) -> None:
    """A header cut by a crash is no task: begin removes it and writes the header whole."""
    path = tmp_path / "task.jsonl"
    pin = make_pin()
    whole = dump_jsonl([StoredEvent.now(0, UserText(text="x"))])
    path.write_bytes(whole[:20])

    FileTaskStore(path).begin(pin)

    assert FileTaskStore(path).read().header is not None
    assert FileTaskStore(path).resume(TOKEN, base_url=BASE_URL).pin == pin


def test_a_damaged_pin_record_is_a_config_error(place: Place) -> None:
    """A header whose pin record was edited fails its fingerprint on resume."""
    place.open().begin(make_pin())
    place.replace("gpt-4.1-mini", "gpt-4.1-nano")

    with pytest.raises(ConfigError, match="fingerprint does not match"):
        place.open().resume(TOKEN, base_url=BASE_URL)


def test_resume_sends_the_token_only_to_the_operators_base_url(
    place: Place, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A task whose header names another base URL than the operator's is refused naming
    both, and without a base URL (argument or NISSE_LLM_BASE_URL) resume says what it
    needs."""
    place.open().begin(make_pin())

    with pytest.raises(TaskPinMismatch) as caught:
        place.open().resume(TOKEN, base_url="http://127.0.0.1:5000")
    assert f"names the proxy {BASE_URL!r}, not the caller's 'http://127.0.0.1:5000'" in str(
        caught.value
    )
    monkeypatch.delenv("NISSE_LLM_BASE_URL", raising=False)
    with pytest.raises(ConfigError, match="needs the operator's base URL"):
        place.open().resume(TOKEN)
    monkeypatch.setenv("NISSE_LLM_BASE_URL", BASE_URL)
    assert place.open().resume(TOKEN).pin == make_pin()


def test_usage_total_adds_cost_as_an_exact_decimal() -> None:
    """Totals add tokens like `Usage` and costs as exact decimals; an unknown cost adds
    nothing and is counted as unpriced; adding a plain `Usage` adds tokens only."""
    priced = CallRecord(
        model="m",
        route="openai_chat",
        usage=Usage(input=3, output=1),
        call=CallInfo(cost_usd=Decimal("0.1")),
    )
    unpriced = CallRecord(model="m", route="openai_chat", usage=Usage(input=2), call=None)

    total = UsageTotals.of([priced, priced, priced, unpriced]).total

    assert total.cost_usd == Decimal("0.3")  # float addition would give 0.30000000000000004
    assert (total.calls, total.unpriced_calls, total.input, total.output) == (4, 1, 11, 3)
    assert UsageTotals.of([unpriced]).by_role == {}
    assert total + Usage(output=5) == total.model_copy(update={"output": 8})


def test_every_record_kind_matches_the_published_schema(place: Place) -> None:
    """Header, event, call, tool-run and batch records, as stored, validate against
    schemas/stored-record.schema.json, and a line with none of the five keys does not; a
    database, whose write is whole or absent by itself, writes no batch record."""
    store = place.open().begin(make_pin())
    store.append_event(UserText(text="a"))
    store.append_call(call_record(3))
    start = store.append_tool_run(ToolRunRecord(call_id="call_1", tool="write_file"))
    store.append_tool_outcome(
        ToolRunRecord(call_id="call_1", tool="write_file", outcome="unknown", start=start.seq),
        ToolResult(call_id="call_1", output="x", is_error=True),
    )
    store.append_batch([AssistantText(text="b", model="m"), UserText(text="c")])

    lines = [json.loads(line) for line in place.lines()]

    kinds = ("header", "event", "llm_call", "tool_run", "batch")
    assert [next(k for k in kinds if k in x) for x in lines] == [
        "header",
        "event",
        "llm_call",
        "tool_run",
        "tool_run",
        "event",
        *(["batch"] if place.kind == "file" else []),
        "event",
        "event",
    ]
    assert [r.tool_run.outcome for r in place.open().read().tool_runs] == ["started", "unknown"]
    for line in lines:
        jsonschema.validate(line, SCHEMA)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"seq": 1, "at": "2026-01-01T00:00:00Z"}, SCHEMA)


def test_a_batch_cut_by_a_crash_is_what_the_batch_record_lacks(tmp_path: Path) -> None:
    """A batch whose write kept its record and its first event lacks the rest; a whole
    batch lacks nothing; a single event needs no batch record."""
    path = tmp_path / "task.jsonl"
    store = FileTaskStore(path).begin(make_pin())
    reply = [AssistantText(text="a", model="m"), ToolCall(call_id="call_1", tool="t", arguments={})]
    store.append_batch(reply)
    assert unfinished_batch(FileTaskStore(path).read().records) == []
    store.append_batch([UserText(text="one")])
    assert [type(r).__name__ for r in FileTaskStore(path).read().records][-1] == "StoredEvent"

    lines = path.read_bytes().splitlines(keepends=True)
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(b"".join(lines[:-2]))  # the batch record and its first event
    assert unfinished_batch(FileTaskStore(cut).read().records) == reply[1:]
    cut.write_bytes(b"".join(lines[:-3]))  # the batch record alone
    assert unfinished_batch(FileTaskStore(cut).read().records) == reply


def test_a_line_of_no_known_kind_names_the_keys(place: Place) -> None:
    """A complete line holding none of event, llm_call, tool_run, batch, tools, repin, program or
    header is corrupt, said plainly."""
    place.plant([b'{"seq": 0, "at": "2026-01-01T00:00:00Z", "note": "x"}'])

    with pytest.raises(LogCorrupt) as caught:
        place.open().read()

    assert str(caught.value) == (
        f"{place.where}:1: not a valid log record (a record holds one of 'event', 'llm_call', "
        "'tool_run', 'batch', 'tools', 'repin', 'program', 'approval', 'parent' "
        "or 'header')"
    )


def _check_mixed(store: TaskStore, writers: int, each: int) -> None:
    """Header first, numbers 0..n without a gap, and every writer's records all there."""
    found = store.read()
    assert isinstance(found.records[0], StoredHeader)
    assert [r.seq for r in found.records] == list(range(1 + 2 * writers * each))
    texts = sorted(r.event.text for r in found.events)  # type: ignore[union-attr]
    assert texts == sorted(f"{w}:{n}" for w in range(writers) for n in range(each))
    roles = sorted(r.llm_call.role or "" for r in found.calls)
    assert roles == sorted(f"agent-{w}" for w in range(writers) for _ in range(each))


def _record(worker: int) -> CallRecord:
    return CallRecord(role=f"agent-{worker}", model="m", route="openai_chat")


def _threads_append(store_for: Callable[[], TaskStore]) -> None:
    def work(worker: int) -> None:
        store = store_for()
        for n in range(25):
            store.append_event(UserText(text=f"{worker}:{n}"))
            store.append_call(_record(worker))

    threads = [threading.Thread(target=work, args=(w,)) for w in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def test_threads_sharing_a_store_append_events_and_calls_without_loss(place: Place) -> None:
    """Eight threads sharing one store append events and call records: all arrive,
    numbered in order with no gap or repeat."""
    common = place.open().begin(make_pin())

    _threads_append(lambda: common)

    _check_mixed(common, 8, 25)


def test_threads_each_with_a_file_store_append_without_loss(tmp_path: Path) -> None:
    """Eight threads, each with its own `TaskStore` on the same file, append events and
    call records: the file lock serialises them (a Postgres task has one driver instead)."""
    path = tmp_path / "task.jsonl"
    FileTaskStore(path).begin(make_pin())

    _threads_append(lambda: FileTaskStore(path).begin(make_pin()))

    _check_mixed(FileTaskStore(path), 8, 25)


def test_asyncio_tasks_append_to_one_store_without_loss(place: Place) -> None:
    """Eight asyncio tasks appending through one store (directly and via to_thread; an
    async store awaited) lose nothing and keep sequence order."""
    store = place.open().begin(make_pin())
    if place.is_async:
        opened = place.open_async()

        async def awaited() -> None:
            async with opened as shared:

                async def agent(worker: int) -> None:
                    for n in range(25):
                        await shared.append_event(UserText(text=f"{worker}:{n}"))
                        await shared.append_call(_record(worker))

                await asyncio.gather(*(agent(w) for w in range(8)))

        asyncio.run(awaited())
        _check_mixed(place.open(), 8, 25)
        return

    async def agent(worker: int) -> None:
        for n in range(25):
            if n % 2:
                await asyncio.to_thread(store.append_event, UserText(text=f"{worker}:{n}"))
            else:
                store.append_event(UserText(text=f"{worker}:{n}"))
            await asyncio.sleep(0)
            store.append_call(_record(worker))

    async def main() -> None:
        await asyncio.gather(*(agent(w) for w in range(8)))

    asyncio.run(main())

    _check_mixed(store, 8, 25)


_PROCESS_AGENT = """
import sys
from nisse_llm.events.canonical import UserText
from nisse_llm.task.logstore import FileTaskStore, TaskStore
from nisse_llm.task.records import CallRecord
from tests.task.helpers import make_pin
worker = int(sys.argv[2])
store = FileTaskStore(sys.argv[1]).begin(make_pin())
for n in range(40):
    store.append_event(UserText(text=f"{worker}:{n}"))
    store.append_call(CallRecord(role=f"agent-{worker}", model="m", route="openai_chat"))
"""


def test_processes_beginning_one_task_at_once_are_serialised(tmp_path: Path) -> None:
    """Four processes begin the same new task file at once and append: one header, then
    every record, numbered without a gap (the file lock serialises them)."""
    path = tmp_path / "task.jsonl"
    writers = [
        subprocess.Popen([sys.executable, "-c", _PROCESS_AGENT, str(path), str(w)], cwd=ROOT)
        for w in range(4)
    ]
    assert [writer.wait(timeout=120) for writer in writers] == [0, 0, 0, 0]

    _check_mixed(FileTaskStore(path), 4, 40)
    assert sum(isinstance(r, StoredHeader) for r in FileTaskStore(path).read().records) == 1


def test_append_events_is_one_write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A reply's events go to the file in one write, numbered in order."""
    path = tmp_path / "task.jsonl"
    store = FileTaskStore(path).begin(make_pin())
    writes: list[int] = []
    real_write = __import__("os").write

    def spy(fd: int, data: bytes) -> int:
        writes.append(len(data))
        return int(real_write(fd, data))

    monkeypatch.setattr("nisse_llm.task._files.os.write", spy)
    stored = store.append_events([UserText(text="a"), AssistantText(text="b", model="m")])

    assert [r.seq for r in stored] == [1, 2]
    assert len(writes) == 1
    assert store.append_events([]) == []


def test_stored_call_round_trips(place: Place) -> None:
    """A call record reads back equal, cost as the same Decimal."""
    store = place.open().begin(make_pin())
    written = store.append_call(call_record(7))

    (read,) = place.open().read().calls

    assert read == written
    assert isinstance(read, StoredCall)
    assert read.llm_call.call is not None
    assert read.llm_call.call.cost_usd == Decimal("0.000008")
