"""The log store: round trips, torn tails, corrupt lines, sequence rules, and SIGKILL mid-append."""

from __future__ import annotations

import os
import random
import signal
import stat
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from pydantic_core import PydanticSerializationError

from nisse_llm.events.canonical import (
    CanonicalEvent,
    StoredEvent,
    ToolCall,
    ToolResult,
    UserText,
    dump_jsonl,
    load_jsonl,
)
from nisse_llm.task.logstore import (
    FileTaskStore,
    LogCorrupt,
    LogRead,
    LogSequenceError,
    LogTornTail,
)
from tests.corpus import corpus
from tests.reliability import figures
from tests.reliability._crash_writer import MAX_BATCH, payload
from tests.strategies import logs
from tests.task.stores import Place

ROOT = Path(__file__).resolve().parents[2]


def _records(events: list[CanonicalEvent], *, first: int = 0) -> list[StoredEvent]:
    return [StoredEvent.now(first + index, event) for index, event in enumerate(events)]


def _corpus_events() -> list[CanonicalEvent]:
    return [event for conversation in corpus() for event in conversation.events]


def test_round_trip_of_every_corpus_event(place: Place) -> None:
    """Records appended one at a time and in batches read back equal, stored as
    `dump_jsonl` bytes (in a file, and row by row in PostgreSQL)."""
    records = _records(_corpus_events())
    store = place.open()
    store.append(records[0])
    store.append(records[1:5])
    for record in records[5:]:
        store.append(record)

    found = place.open().read()

    assert found == LogRead(records=records)
    stored = b"".join(line + b"\n" for line in place.lines())
    assert stored == dump_jsonl(records)
    assert load_jsonl(stored) == records


@settings(
    max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(events=logs())
def test_round_trip_of_generated_logs(tmp_path: Path, events: list[CanonicalEvent]) -> None:
    """Any valid canonical log, appended with `append_event`, reads back event for event."""
    path = tmp_path / f"log-{os.urandom(6).hex()}.jsonl"
    with FileTaskStore(path) as store:
        stored = [store.append_event(event) for event in events]

    found = FileTaskStore(path).read()

    assert found.records == stored
    assert [record.event for record in found.records] == events
    assert [record.seq for record in found.records] == list(range(len(events)))
    assert found.torn_tail is None


def test_missing_file_is_an_empty_log(place: Place) -> None:
    """Reading a log that was never written gives no records, next seq 0, and creates
    nothing (no file; no row)."""
    store = place.open()

    assert store.read() == LogRead(records=[])
    assert store.next_seq == 0
    assert not place.path.exists()
    assert place.lines() == []


def test_append_event_numbers_from_zero_and_stamps_utc(tmp_path: Path) -> None:
    """`append_event` assigns 0, 1, 2 ... after the last record and a UTC timestamp."""
    store = FileTaskStore(tmp_path / "log.jsonl")
    assert store.next_seq == 0

    first = store.append_event(UserText(text="one"))
    store.append(StoredEvent.now(10, UserText(text="jump")))
    after_jump = store.append_event(UserText(text="two"))

    assert (first.seq, after_jump.seq, store.next_seq) == (0, 11, 12)
    assert first.at.utcoffset() is not None
    assert first.at.utcoffset().total_seconds() == 0  # type: ignore[union-attr]


def test_new_file_is_private(tmp_path: Path) -> None:
    """The store creates its file readable and writable by its owner only."""
    store = FileTaskStore(tmp_path / "log.jsonl")
    store.append_event(UserText(text="secret plans"))

    assert stat.S_IMODE((tmp_path / "log.jsonl").stat().st_mode) == 0o600


def test_append_fsyncs_the_file_and_a_new_files_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each append fsyncs the log; creating the file also fsyncs its directory, once."""
    synced: list[str] = []
    real_fsync = os.fsync

    def spy(fd: int) -> None:
        synced.append("dir" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file")
        real_fsync(fd)

    monkeypatch.setattr("nisse_llm.task._filelog.os.fsync", spy)
    store = FileTaskStore(tmp_path / "log.jsonl")
    store.append_event(UserText(text="a"))
    store.append_event(UserText(text="b"))
    store.close()
    FileTaskStore(tmp_path / "log.jsonl").append_event(UserText(text="c"))

    assert synced == ["dir", "file", "file", "file"]


def _three_record_file(path: Path) -> tuple[bytes, int]:
    """Write two short records and a long last one; return the bytes and where the last starts."""
    records = _records(
        [
            UserText(text="first"),
            ToolResult(call_id="call_1", output="ok"),
            # Multi-byte characters, escapes and nesting, so cuts land everywhere.
            UserText(text='last line: åß∂ 漢字 🙂 "quoted" \\ back\nslash ' * 3),
        ]
    )
    FileTaskStore(path).append(records)
    data = path.read_bytes()
    return data, data.rindex(b"\n", 0, len(data) - 1) + 1


def test_torn_tail_at_every_truncation_length(tmp_path: Path) -> None:
    """Cut anywhere inside the last line, a read returns the complete records and the torn bytes."""
    path = tmp_path / "log.jsonl"
    data, last_start = _three_record_file(path)
    complete = FileTaskStore(path).read().records
    assert len(complete) == 3

    for cut in range(last_start, len(data) + 1):
        path.write_bytes(data[:cut])
        found = FileTaskStore(path).read()
        if cut == last_start:
            assert found == LogRead(records=complete[:2]), cut
        elif cut == len(data):
            assert found == LogRead(records=complete), cut
        else:
            assert found == LogRead(
                records=complete[:2], torn_tail=data[last_start:cut], torn_offset=last_start
            ), cut


def test_repair_after_every_truncation_length_then_append(tmp_path: Path) -> None:
    """Repair removes exactly the torn bytes, whatever the cut, and appending resumes after them."""
    path = tmp_path / "log.jsonl"
    data, last_start = _three_record_file(path)
    kept = FileTaskStore(path).read().records[:2]

    for cut in range(last_start + 1, len(data)):
        path.write_bytes(data[:cut])
        store = FileTaskStore(path)
        assert store.next_seq == 2, cut
        with pytest.raises(LogTornTail) as caught:
            store.append_event(UserText(text="refused"))
        assert (caught.value.offset, caught.value.tail) == (last_start, data[last_start:cut])
        assert path.read_bytes() == data[:cut]

        assert store.repair() == data[last_start:cut]
        assert path.read_bytes() == data[:last_start]
        resumed = store.append_event(UserText(text="resumed"))
        assert resumed.seq == 2
        assert store.read() == LogRead(records=[*kept, resumed])
        store.close()


def test_torn_tail_refusal_message(tmp_path: Path) -> None:
    """Appending after a torn line names the file, the torn size and offset, and the remedy."""
    path = tmp_path / "log.jsonl"
    FileTaskStore(path).append_event(UserText(text="a"))
    size = path.stat().st_size
    with path.open("ab") as file:
        file.write(b'{"seq":1,"at"')

    with pytest.raises(LogTornTail) as caught:
        FileTaskStore(path).append_event(UserText(text="b"))

    assert str(caught.value) == (
        f"{path}: ends in a torn line of 13 bytes at offset {size}; call repair() before appending"
    )
    assert isinstance(caught.value, LogCorrupt)


def test_repair_without_torn_tail_changes_nothing(tmp_path: Path) -> None:
    """Repairing a clean log returns None and leaves every byte in place."""
    path = tmp_path / "log.jsonl"
    FileTaskStore(path).append(_records([UserText(text="a"), UserText(text="b")]))
    before = path.read_bytes()

    assert FileTaskStore(path).repair() is None
    assert path.read_bytes() == before


def test_whole_file_torn_is_an_empty_log_with_a_tail(tmp_path: Path) -> None:
    """A file holding only a torn first line has no records and reports the tail at offset 0."""
    path = tmp_path / "log.jsonl"
    path.write_bytes(b'{"seq":0,"at":"2026-')
    store = FileTaskStore(path)

    assert store.read() == LogRead(records=[], torn_tail=b'{"seq":0,"at":"2026-', torn_offset=0)
    assert store.next_seq == 0
    assert store.repair() == b'{"seq":0,"at":"2026-'
    assert path.read_bytes() == b""


@pytest.mark.parametrize(
    ("bad_line", "detail"),
    [
        (b'{"seq": 1, "at": ', "Invalid JSON: EOF while parsing a value at line 1 column 17"),
        (b"", "Invalid JSON: EOF while parsing a value at line 1 column 0"),
        (b'{"seq": 1, "event": {"kind": "user_text", "text": "x"}}', "at: Field required"),
        (
            b'{"seq": 1, "at": "2026-01-01T00:00:00Z", "event": {"kind": "shout", "text": "x"}}',
            "event: Input tag 'shout' found using 'kind' does not match any of the expected "
            "tags: 'user_text', 'user_image', 'assistant_text', 'tool_call', 'tool_result', "
            "'reasoning', 'compaction'",
        ),
        (b"\xff\xfe not utf-8", "Invalid JSON: expected value at line 1 column 1"),
    ],
    ids=["bad-json", "blank", "missing-field", "unknown-kind", "not-utf8"],
)
def test_corrupt_middle_line_names_its_line(tmp_path: Path, bad_line: bytes, detail: str) -> None:
    """A complete line that is not a valid record is an error naming its 1-based line number."""
    path = tmp_path / "log.jsonl"
    lines = dump_jsonl(_records([UserText(text=str(n)) for n in range(4)])).splitlines(True)
    path.write_bytes(b"".join([lines[0], lines[1], bad_line + b"\n", lines[3]]))

    with pytest.raises(LogCorrupt) as caught:
        FileTaskStore(path).read()

    assert caught.value.line == 3
    assert caught.value.path == path
    assert str(caught.value) == f"{path}:3: not a valid log record ({detail})"


def test_corrupt_line_wins_over_a_torn_tail(tmp_path: Path) -> None:
    """A torn tail does not hide a corrupt line before it: the read still fails on that line."""
    path = tmp_path / "log.jsonl"
    good = dump_jsonl(_records([UserText(text="a")]))
    path.write_bytes(good + b"garbage\n" + b'{"seq":')

    with pytest.raises(LogCorrupt) as caught:
        FileTaskStore(path).read()

    assert caught.value.line == 2
    with pytest.raises(LogCorrupt):
        FileTaskStore(path).repair()
    assert path.read_bytes() == good + b"garbage\n" + b'{"seq":'


def test_out_of_order_numbers_in_the_file_name_their_line(tmp_path: Path) -> None:
    """A file whose numbers do not strictly increase is corrupt at the first offending line."""
    path = tmp_path / "log.jsonl"
    path.write_bytes(
        dump_jsonl(_records([UserText(text="a"), UserText(text="b")]))
        + dump_jsonl(_records([UserText(text="again")], first=1))
    )

    with pytest.raises(LogCorrupt) as caught:
        FileTaskStore(path).read()

    assert str(caught.value) == f"{path}:3: sequence number 1 is not above 1 on the line before"


def test_append_after_corrupt_last_line_is_refused(tmp_path: Path) -> None:
    """Appending to a log whose last complete line is invalid fails, naming that line."""
    path = tmp_path / "log.jsonl"
    path.write_bytes(dump_jsonl(_records([UserText(text="a")])) + b"{not json}\n")

    with pytest.raises(LogCorrupt) as caught:
        FileTaskStore(path).append_event(UserText(text="b"))

    assert caught.value.line == 2
    assert str(caught.value).startswith(f"{path}:2: not a valid log record (Invalid JSON")


@pytest.mark.parametrize("seq", [3, 2, 0])
def test_duplicate_or_lower_seq_is_refused(place: Place, seq: int) -> None:
    """A record numbered at or below the last one is refused and nothing is written."""
    store = place.open()
    store.append(_records([UserText(text="a"), UserText(text="b")], first=2))
    before = place.lines()

    with pytest.raises(LogSequenceError) as caught:
        store.append(StoredEvent.now(seq, UserText(text="dup")))

    assert str(caught.value) == (
        f"{place.where}: sequence number {seq} is not above 3; nothing was written"
    )
    assert place.lines() == before
    assert place.open().read().records[-1].seq == 3


def test_batch_out_of_order_is_refused_whole(place: Place) -> None:
    """A batch whose numbers do not increase inside it is refused before anything is written."""
    store = place.open()
    store.append_event(UserText(text="a"))
    before = place.lines()
    batch = [
        StoredEvent.now(1, UserText(text="b")),
        StoredEvent.now(5, UserText(text="c")),
        StoredEvent.now(5, UserText(text="d")),
    ]

    with pytest.raises(LogSequenceError, match="sequence number 5 is not above 5"):
        store.append(batch)

    assert place.lines() == before
    store.append([])
    assert place.lines() == before


def test_unencodable_record_is_refused_before_writing(tmp_path: Path) -> None:
    """Arguments nested 10,000 deep (past pydantic-core's encoder limit) fail and write nothing."""
    path = tmp_path / "log.jsonl"
    store = FileTaskStore(path)
    store.append_event(UserText(text="a"))
    before = path.read_bytes()
    deep: dict[str, Any] = {"a": 1}
    for _ in range(9_999):
        deep = {"a": deep}

    # pydantic-core words the limit by where it trips: its depth counter, or its recursion
    # guard where the event's models are shared definitions (a batch record holds events too).
    too_deep = "Maximum serialization depth exceeded|Circular reference detected"
    with pytest.raises(PydanticSerializationError, match=too_deep):
        store.append_event(ToolCall(call_id="call_deep", tool="deep", arguments=deep))

    assert path.read_bytes() == before
    assert store.append_event(UserText(text="b")).seq == 1


def test_threads_share_one_store_without_losing_or_reusing_numbers(tmp_path: Path) -> None:
    """Eight threads appending through one store produce 400 records numbered 0..399."""
    store = FileTaskStore(tmp_path / "log.jsonl")

    def work(worker: int) -> None:
        for n in range(50):
            store.append_event(UserText(text=f"{worker}:{n}"))

    threads = [threading.Thread(target=work, args=(worker,)) for worker in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    records = store.read().records
    assert [record.seq for record in records] == list(range(400))
    texts = sorted(record.event.text for record in records)  # type: ignore[union-attr]
    assert texts == sorted(f"{w}:{n}" for w in range(8) for n in range(50))


def test_two_stores_on_one_file_see_each_others_records(tmp_path: Path) -> None:
    """Two stores on one file continue each other's numbering instead of trusting a stale cache."""
    path = tmp_path / "log.jsonl"
    first, second = FileTaskStore(path), FileTaskStore(path)

    seqs = [
        first.append_event(UserText(text="1")).seq,
        second.append_event(UserText(text="2")).seq,
        first.append_event(UserText(text="3")).seq,
    ]
    with pytest.raises(LogSequenceError):
        second.append(StoredEvent.now(2, UserText(text="stale")))

    assert seqs == [0, 1, 2]
    assert [r.seq for r in FileTaskStore(path).read().records] == [0, 1, 2]


_PROCESS_WRITER = """
import sys
from nisse_llm.events.canonical import UserText
from nisse_llm.task.logstore import FileTaskStore, TaskStore
store = FileTaskStore(sys.argv[1])
for n in range(100):
    store.append_event(UserText(text=sys.argv[2] + str(n)))
"""


def test_processes_appending_at_once_never_reuse_a_number(tmp_path: Path) -> None:
    """Four processes appending to one file at once leave 400 records numbered 0..399."""
    path = tmp_path / "log.jsonl"
    writers = [
        subprocess.Popen([sys.executable, "-c", _PROCESS_WRITER, str(path), f"p{n}-"])
        for n in range(4)
    ]
    assert [writer.wait(timeout=60) for writer in writers] == [0, 0, 0, 0]

    records = FileTaskStore(path).read().records
    assert [record.seq for record in records] == list(range(400))


@dataclass
class _CrashFigures:
    kills: int = 0
    torn_tails: int = 0
    records: int = 0
    bytes: int = 0
    seconds: float = 0.0


def _kill_writer_repeatedly(directory: Path, kills: int, *, budget_s: float) -> _CrashFigures:
    """SIGKILL a writer ``kills`` times at random moments, checking the log after each kill.

    Each log file takes 10 kills, then a new one starts, so reading back stays cheap.
    """
    seed = int.from_bytes(os.urandom(4), "big")
    rng = random.Random(seed)
    tally = _CrashFigures()
    previous: list[StoredEvent] = []
    start = time.monotonic()
    while tally.kills < kills and time.monotonic() - start < budget_s:
        where = f"seed {seed}, kill {tally.kills + 1}"
        path = directory / f"log-{tally.kills // 10}.jsonl"
        if tally.kills % 10 == 0:
            previous = []
        writer = subprocess.Popen(
            [sys.executable, "-m", "tests.reliability._crash_writer", str(path)],
            cwd=ROOT,
            # Unbuffered: a buffered readline could swallow seqs that communicate() never sees.
            bufsize=0,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert writer.stdout is not None
        if rng.random() < 0.1:
            time.sleep(rng.uniform(0, 0.4))  # sometimes during start-up or repair
        else:
            assert writer.stdout.readline() == b"ready\n", where
            time.sleep(rng.uniform(0, 0.15))
        writer.send_signal(signal.SIGKILL)
        out, err = writer.communicate(timeout=30)
        assert writer.returncode == -signal.SIGKILL, (where, err.decode()[-2000:])
        tally.kills += 1

        # Only whole lines count: a seq cut mid-print was never reported.
        printed = [int(line) for line in out.split(b"\n")[:-1] if line not in (b"ready", b"")]
        # The writer resumes after every complete record, reported or not.
        assert printed == list(range(len(previous), len(previous) + len(printed))), where
        reported = len(previous) + len(printed)

        found = FileTaskStore(path).read()
        records = found.records
        assert [record.seq for record in records] == list(range(len(records))), where
        # Every reported record is there; at most one unreported batch is too.
        assert reported <= len(records) <= reported + MAX_BATCH, where
        assert records[: len(previous)] == previous, where
        for record in records[len(previous) :]:
            assert record.event == UserText(text=payload(record.seq)), where
        if found.torn_tail is not None:
            tally.torn_tails += 1
            assert found.torn_offset == path.stat().st_size - len(found.torn_tail), where
            expected = b'{"seq":%d,"at":"' % len(records)
            assert found.torn_tail[: len(expected)] == expected[: len(found.torn_tail)], where
        previous = records
        if tally.kills % 10 == 0:
            tally.records += len(records)
            tally.bytes += path.stat().st_size
    tally.seconds = time.monotonic() - start
    return tally


def _report(tally: _CrashFigures) -> None:
    figures.record(
        f"log store crash test: {tally.kills} SIGKILLs, {tally.torn_tails} torn tails, "
        f"{tally.records} records ({tally.bytes / 2**20:.1f} MiB) intact, "
        f"{tally.seconds:.1f} s"
    )


def test_sigkill_mid_append_never_loses_a_reported_record(tmp_path: Path) -> None:
    """After each of 50 SIGKILLs every reported record reads back intact, in order, once."""
    tally = _kill_writer_repeatedly(tmp_path, 50, budget_s=120)
    _report(tally)

    assert tally.kills == 50
    assert tally.records > 0


@pytest.mark.slow
def test_sigkill_mid_append_full_run(tmp_path: Path) -> None:
    """The full run: after each of 500 SIGKILLs every reported record reads back intact."""
    tally = _kill_writer_repeatedly(tmp_path, 500, budget_s=1200)
    _report(tally)

    assert tally.kills == 500
    assert tally.torn_tails > 0
