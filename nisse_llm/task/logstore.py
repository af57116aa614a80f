"""A crash-safe JSON-lines file holding one task: its pin, its canonical log and its calls.

Each line is one record (`nisse_llm.task.records`): a header holding the pin record
(first, written once by `LogStore.begin`), a `StoredEvent`, or a call record. Files of
events alone (written before task records existed) read unchanged.

Guarantees (POSIX): a record is on disk once `append` returns (written in one ``write``
on an ``O_APPEND`` descriptor, then ``fsync``; the directory is fsynced when the file is
created); bytes already in the file are never rewritten; sequence numbers strictly
increase. A line is complete only with its newline, so a crash mid-append leaves at most
one torn tail, which `read` reports and never raises on (a crash inside a batch may keep
the batch's first records: each is whole and in order). `append` refuses to write after
a torn tail (the new line would merge into the garbage) until `repair` truncates it.
Writers take an exclusive ``flock`` for each append and a thread lock, so several
`LogStore` objects or processes on one file never interleave or reuse a number.

A record is acknowledged only if the path still names the file it went into: the path
is opened without following a symlink planted in its place, and before each append the
descriptor's device and inode are compared with the path's, so a file renamed away,
replaced (log rotation) or deleted (``rm``, ``git clean``) raises `LogFileReplaced`
instead of acknowledging records nobody can read back.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import SecretStr, TypeAdapter, ValidationError

from nisse_llm._closing import Closing
from nisse_llm.errors import (
    LogCorrupt,
    LogDuplicateId,
    LogFileReplaced,
    LogSequenceError,
    LogTornTail,
)
from nisse_llm.log.canonical import CanonicalEvent, LogLike, StoredEvent, ToolCall, ToolResult
from nisse_llm.task._files import (
    NEWLINE,
    READ_CHUNK,
    TAIL_CHUNK,
    Flock,
    check_same_file,
    fsync_dir,
    last_newline_before,
    open_no_symlink,
    read_all,
    write_all,
)
from nisse_llm.task.records import (
    RECORD_TYPES,
    BatchRecord,
    CallRecord,
    ResumedTask,
    StoredBatch,
    StoredCall,
    StoredHeader,
    StoredRecord,
    StoredToolRun,
    StoredTools,
    TaskHeader,
    TaskHeaderMissing,
    TaskPinMismatch,
    ToolRunRecord,
    ToolsRecord,
    UsageTotals,
    ViewItem,
    compacted_view,
    compaction_record,
    offered_tools,
    pending_calls,
    pin_difference,
    unknown_calls,
)

if TYPE_CHECKING:
    from nisse_llm.config.settings import Pin
    from nisse_llm.task.lease import FileLease

__all__ = [
    "LogCorrupt",
    "LogDuplicateId",
    "LogFileReplaced",
    "LogRead",
    "LogSequenceError",
    "LogStore",
    "LogTornTail",
    "TaskHeaderMissing",
    "TaskPinMismatch",
]

_STORED: TypeAdapter[StoredRecord] = TypeAdapter(StoredRecord)
R = TypeVar(
    "R", bound=StoredEvent | StoredCall | StoredToolRun | StoredBatch | StoredTools | StoredHeader
)


@dataclass(frozen=True, slots=True)
class LogRead:
    """What a log file holds: its complete records, and a torn last line if a crash left one."""

    #: Every complete record in file order: the header, events and call records.
    records: list[StoredRecord]
    #: The bytes after the last newline, when there are any.
    torn_tail: bytes | None = None
    #: Byte offset where ``torn_tail`` starts (None when there is no torn tail).
    torn_offset: int | None = None

    @property
    def header(self) -> StoredHeader | None:
        """The task header (the first record), or None for a file of events alone."""
        first = self.records[0] if self.records else None
        return first if isinstance(first, StoredHeader) else None

    @property
    def events(self) -> list[StoredEvent]:
        """The event records, in order."""
        return [r for r in self.records if isinstance(r, StoredEvent)]

    @property
    def calls(self) -> list[StoredCall]:
        """The records of calls that ended, in order (one per call)."""
        return [
            r for r in self.records if isinstance(r, StoredCall) and r.llm_call.outcome != "started"
        ]

    @property
    def starts(self) -> list[StoredCall]:
        """The records written as calls started, in order (see `unknown_calls`)."""
        return [
            r for r in self.records if isinstance(r, StoredCall) and r.llm_call.outcome == "started"
        ]

    @property
    def unknown_calls(self) -> list[StoredCall]:
        """The start records of calls that never ended: outcome unknown, possibly billed."""
        return unknown_calls(self.starts, self.calls)

    @property
    def tool_runs(self) -> list[StoredToolRun]:
        """The tool-run records, in order (a start before each tool runs; see
        `ToolRunRecord`)."""
        return [r for r in self.records if isinstance(r, StoredToolRun)]

    @property
    def usage(self) -> UsageTotals:
        """Usage totals of every call record (tokens and cost, overall and per role), calls
        of unknown outcome counted apart."""
        unknown = [record.llm_call for record in self.unknown_calls]
        return UsageTotals.of((record.llm_call for record in self.calls), unknown)

    @property
    def view(self) -> list[ViewItem]:
        """The compacted view of the events: every `Compaction` applied (`compacted_view`)."""
        return compacted_view(self.events)


@dataclass(frozen=True, slots=True)
class _Tail:
    """What an append needs to know of the file: where it ends and its last number."""

    size: int
    mtime_ns: int
    last_seq: int | None
    torn_offset: int | None


class LogStore(Closing):
    """One canonical log in one JSON-lines file: append-only, fsynced, readable after a crash.

    It is also the task store interface: the record logic (header and pin check, numbering,
    id claims, compaction, resume) is written here once, over a few ``_x_*`` methods that
    work inside ``_exclusive()``; another store (`PostgresLogStore`) overrides only those,
    `read`, `next_seq`, `close` and ``_where``.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._fd: int | None = None
        # The file's state after our last append; trusted only while size and mtime match.
        self._tail: _Tail | None = None
        self._init_records()

    def _init_records(self) -> None:
        """The state the record logic keeps, whatever holds the records."""
        self._lock = threading.Lock()
        # The call ids and answered ids in the log, as of the log state ``_ids_at``.
        self._ids: tuple[set[str], set[str]] | None = None
        self._ids_at: object = None
        self._task_id: str | None = None

    @property
    def _where(self) -> Path | str:
        """What messages and errors name as the task's place."""
        return self.path

    @property
    def task_id(self) -> str | None:
        """An opaque id of the task this file holds, the same on every resume (a digest of
        its header); None until `begin` or `resume` has read or written the header."""
        return self._task_id

    def __repr__(self) -> str:
        return f"LogStore({str(self.path)!r})"

    def close(self) -> None:
        """Close the write descriptor (reopened by the next append)."""
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None
            self._tail = None

    def lease(self) -> FileLease | None:
        """Take the task's driver lease, for one driver per task (`Task.open` does): a
        `FileLease` on ``<file>.lease`` (`nisse_llm.task.lease`), which the caller closes,
        or `TaskBusy` naming its holder. Appending never needs it: several writers of one
        file stay serialised by each append's ``flock``."""
        from nisse_llm.task.lease import FileLease

        return FileLease.take(self.path)

    @property
    def next_seq(self) -> int:
        """The sequence number the next `append_event` will use (0 for an empty log)."""
        with self._lock:
            if self._fd is None and not self.path.exists():
                return 0
            fd = self._open()
            with Flock(fd, fcntl.LOCK_SH):
                check_same_file(fd, self.path)
                tail = self._current_tail(fd)
            return 0 if tail.last_seq is None else tail.last_seq + 1

    def read(self) -> LogRead:
        """Every complete record, in order, and the torn last line if there is one.

        A missing file is an empty log. Raises `LogCorrupt`, naming the 1-based line,
        when a complete line is not a valid record or its number does not increase.
        """
        try:
            fd = open_no_symlink(self.path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
        except FileNotFoundError:
            return LogRead(records=[])
        try:
            with Flock(fd, fcntl.LOCK_SH):
                return _parse(fd, self.path)
        finally:
            os.close(fd)

    def append(self, records: StoredRecord | Iterable[StoredRecord]) -> None:
        """Append one record or several, durably, in one write; refuse any out-of-order number.

        Raises `LogSequenceError` when a number is not above the one before it (in the
        file or in ``records``) or a header is not the first record of the file,
        `LogTornTail` when the file ends in a torn line, and pydantic-core's
        ``PydanticSerializationError`` for a record it cannot encode (nesting past its
        limit of 254 levels); in each case nothing is written.
        """
        batch = [records] if isinstance(records, RECORD_TYPES) else list(records)
        if not batch:
            return
        with self._exclusive():
            self._x_write(batch)

    def export_lines(self) -> list[bytes]:
        """Every complete record's line as stored (no newline), in order: what ``task
        export`` prints. A torn tail is left out; `LogCorrupt` for an invalid line."""
        try:
            fd = open_no_symlink(self.path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
        except FileNotFoundError:
            return []
        try:
            with Flock(fd, fcntl.LOCK_SH):
                data = read_all(fd)
        finally:
            os.close(fd)
        lines = data.split(NEWLINE)[:-1]
        self._decode(lines)
        return lines

    def import_lines(self, lines: Iterable[bytes]) -> int:
        """Append records given as their lines (``task export``), each validated and kept
        byte for byte, in one write; return how many. Their numbers must rise above the
        log's last (`LogSequenceError`, nothing written): import into a new task."""
        batch = [line.rstrip(b"\r\n") for line in lines if line.strip()]
        records = self._decode(batch).records
        if records:
            with self._exclusive():
                self._x_write(records, batch)
        return len(records)

    def append_event(self, event: CanonicalEvent) -> StoredEvent:
        """Append an event as the next record, stamped with the current UTC time; return it.

        A `ToolCall` whose id the file already holds, or a `ToolResult` for a call already
        answered, raises `LogDuplicateId` and nothing is written (a log holding it would
        be refused by every route).
        """
        return self._append_next([event], StoredEvent.now)[0]

    def append_events(self, events: Iterable[CanonicalEvent]) -> list[StoredEvent]:
        """Append events as the next records, in one write (a reply is logged whole or not at
        all); `LogDuplicateId` as for `append_event`."""
        return self._append_next(list(events), StoredEvent.now)

    def append_batch(self, events: Iterable[CanonicalEvent]) -> list[StoredEvent]:
        """`append_events`, all or nothing even across a crash: several events follow a
        batch record holding them, in the same write, so a write a crash cut short is
        finished from it (`nisse_llm.task.records.unfinished_batch`)."""
        events = list(events)
        if len(events) < 2:
            return self.append_events(events)

        def make(seq: int, item: BatchRecord | CanonicalEvent) -> StoredBatch | StoredEvent:
            if isinstance(item, BatchRecord):
                return StoredBatch.now(seq, item)
            return StoredEvent.now(seq, item)

        written = self._append_next([BatchRecord(events=events), *events], make)
        return [record for record in written if isinstance(record, StoredEvent)]

    def append_compaction(self, compacted: LogLike) -> StoredEvent:
        """Record that the task's log is now ``compacted`` (`compact` or `summarize` applied
        to the view `resume` gives, perhaps with events not yet appended at its end).

        Appends one `Compaction` event naming the records it replaces and carrying the
        summary, if any; the records stay in the file (``ResumedTask.history``) and
        ``ResumedTask.events`` is the compacted view from then on. `ValueError` (nothing
        written) if ``compacted`` is not a compaction of the file's log.
        """
        from nisse_llm.log.canonical import as_events

        events = as_events(compacted)
        with self._exclusive():
            found = self._x_read()
            record = compaction_record(compacted_view(found.events), events)
            last_seq = self._x_last_seq()
            stored = StoredEvent.now(0 if last_seq is None else last_seq + 1, record)
            self._x_write([stored])
        return stored

    def append_call(self, record: CallRecord) -> StoredCall:
        """Append a call record (role, model, route, usage, cost, outcome); return it.

        `RoleRouter.from_pin(pin, store=...)` calls this for every call it makes.
        """
        return self._append_next([record], StoredCall.now)[0]

    def append_tool_run(self, record: ToolRunRecord) -> StoredToolRun:
        """Append a tool-run record (a tool's start, before it runs); return it."""
        return self._append_next([record], StoredToolRun.now)[0]

    def append_tools(self, record: ToolsRecord) -> StoredTools:
        """Append the tool specs a step offers (see `ToolsRecord`); return the record."""
        return self._append_next([record], StoredTools.now)[0]

    def append_tool_outcome(self, record: ToolRunRecord, result: ToolResult) -> None:
        """Append a tool-run record and the `ToolResult` that answers its call, in one write
        (both or neither are in the file after a crash); `LogDuplicateId` as for
        `append_event`."""

        def make(seq: int, item: ToolRunRecord | ToolResult) -> StoredToolRun | StoredEvent:
            if isinstance(item, ToolRunRecord):
                return StoredToolRun.now(seq, item)
            return StoredEvent.now(seq, item)

        self._append_next([record, result], make)

    def begin(self, pin: Pin) -> LogStore:
        """Start the task ``pin`` in this file, or check that the file's task is this one.

        An empty or missing file gets the header (``pin.record()``, no token) as its first
        record. A file already begun is checked: a header of another pin raises
        `TaskPinMismatch`, a file of events without a header `TaskHeaderMissing`. A torn
        tail a crash left is removed first, as `repair` does. Returns the store itself, so
        ``store = LogStore(path).begin(pin)`` reads naturally.
        """
        record = _pin_record(pin)
        with self._exclusive():
            self._x_repair()
            if self._x_last_seq() is None:
                header = StoredHeader.now(0, TaskHeader(pin=record))
                self._x_write([header])
                self._task_id = _task_id(header)
                return self
            first = self._x_first()
        found = self._header_of(first)
        stored = found.header.pin
        if stored != record:
            raise TaskPinMismatch(
                f"{self._where}: the task was begun with pin {stored.get('fingerprint')}, "
                f"not {record.get('fingerprint')}{pin_difference(stored, record)}; "
                "resume it with resume(token), or begin a new task in another file",
                path=self._where,
                stored=str(stored.get("fingerprint")),
                given=str(record.get("fingerprint")),
            )
        self._task_id = _task_id(found)
        return self

    def resume(
        self, token: str | SecretStr, *, base_url: str | None = None
    ) -> ResumedTask[LogStore]:
        """Everything this task file holds, ready to continue: pin, events, pending calls, usage.

        ``events`` is the compacted view, repaired where a record would make it unrenderable
        (``repairs`` says how; the file is not changed); ``history`` every event record;
        ``unknown_calls`` the calls that started and never ended.

        The pin is rebuilt from the header with ``token`` (never stored) by
        `Pin.from_record`: the record's base URL must be the operator's (``base_url``, else
        ``NISSE_LLM_BASE_URL``). A torn tail a crash left is removed first (its bytes are
        in ``repaired``). Raises `TaskHeaderMissing` for a missing file or one without a
        header, `LogCorrupt` for an invalid line, and `ConfigError` for a header whose pin
        record was damaged or names another base URL.
        """
        self._x_check_begun()
        with self._exclusive():
            repaired = self._x_repair()
            found = self._x_read()
        from nisse_llm.task.compaction import repair

        header = self._header_of(found.records[0] if found.records else None)
        self._task_id = _task_id(header)
        events, fixes = repair([item.event for item in found.view], answer_dangling=False)
        return ResumedTask(
            pin=_pin_from_record(header.header.pin, token, base_url),
            events=events,
            pending_calls=pending_calls(events),
            usage=found.usage,
            store=self,
            repaired=repaired,
            history=found.events,
            repairs=fixes,
            unknown_calls=found.unknown_calls,
            tool_runs=found.tool_runs,
            offered_tools=offered_tools(found.records),
        )

    def _header_of(self, first: StoredRecord | None) -> StoredHeader:
        if isinstance(first, StoredHeader):
            return first
        what = "is empty" if first is None else "holds events but no task header"
        raise TaskHeaderMissing(
            f"{self._where}: {what}; begin(pin) starts a task in a new or empty file",
            path=self._where,
        )

    def _append_next(self, items: Sequence[Any], make: Callable[[int, Any], R]) -> list[R]:
        """Number ``items`` after the file's last record, stamp them now, append in one write."""
        if not items:
            return []
        with self._exclusive():
            if any(isinstance(item, ToolCall | ToolResult) for item in items):
                self._check_ids(items)
            last_seq = self._x_last_seq()
            seq = 0 if last_seq is None else last_seq + 1
            records = [make(seq + n, item) for n, item in enumerate(items)]
            self._x_write(records)
            if self._ids is not None:
                _ids_after(self._ids, items)
                self._ids_at = self._x_state()
        return records

    def _check_ids(self, items: Sequence[Any]) -> None:
        """`LogDuplicateId` if ``items`` reuse a call id of the log or of each other.

        The log's ids are read once and kept while the log is only appended to by this
        store (another writer's append changes its state: it is read again)."""
        state = self._x_state()
        if self._ids is None or self._ids_at != state:
            found = self._x_read()
            self._ids = _ids_after((set(), set()), [r.event for r in found.events])
            self._ids_at = state
        calls, answered = self._ids
        new_calls: set[str] = set()
        new_answers: set[str] = set()

        def claim(call_id: str, in_file: set[str], new: set[str], taken: str) -> None:
            if call_id in in_file or call_id in new:
                detail = taken.format(call_id)
                raise LogDuplicateId(f"{self._where}: {detail}; nothing was written")
            new.add(call_id)

        for item in items:
            if isinstance(item, ToolCall):
                claim(item.call_id, calls, new_calls, "the tool call id {!r} is already in the log")
            elif isinstance(item, ToolResult):
                claim(
                    item.call_id,
                    answered,
                    new_answers,
                    "the tool call {!r} already has its result in the log",
                )

    def repair(self) -> bytes | None:
        """Truncate a torn last line left by a crash and return its bytes (None if none).

        Only the bytes after the last newline go: never a complete record, and those
        bytes were never acknowledged by an `append`. Raises `LogCorrupt` if a complete
        line is invalid, which is not a crash's doing and needs a person.
        """
        with self._exclusive():
            return self._x_repair()

    @contextmanager
    def _exclusive(self) -> Iterator[None]:
        """Hold the log for a read-then-write (the ``_x_*`` methods work only inside it):
        the file store takes its thread lock and an exclusive ``flock``."""
        with self._lock:
            fd = self._open()
            with Flock(fd, fcntl.LOCK_EX):
                yield

    def _x_check_begun(self) -> None:
        if self._fd is None and not self.path.exists():
            raise TaskHeaderMissing(
                f"{self.path}: no such task file; begin(pin) starts one", path=self.path
            )

    def _x_fd(self) -> int:
        assert self._fd is not None, "only inside _exclusive()"
        return self._fd

    def _x_last_seq(self) -> int | None:
        return self._current_tail(self._x_fd()).last_seq

    def _x_state(self) -> object:
        """A value that changes whenever the log does (the ids read are kept while it holds)."""
        return self._current_tail(self._x_fd())

    def _x_read(self) -> LogRead:
        fd = self._x_fd()
        check_same_file(fd, self.path)
        return _parse(fd, self.path)

    def _x_first(self) -> StoredRecord:
        return _first_record(self._x_fd(), self.path)

    def _x_repair(self) -> bytes | None:
        return self._repair_locked(self._x_fd())

    def _x_write(self, batch: Sequence[StoredRecord], lines: Sequence[bytes] | None = None) -> None:
        """Append ``batch`` (encoded as ``lines`` when given: bytes kept as they came)."""
        self._append_locked(self._x_fd(), batch, lines)

    def _repair_locked(self, fd: int) -> bytes | None:
        check_same_file(fd, self.path)
        self._tail = None
        found = _parse(fd, self.path)
        if found.torn_offset is None:
            return None
        os.ftruncate(fd, found.torn_offset)
        os.fsync(fd)
        return found.torn_tail

    def _open(self) -> int:
        """The write descriptor, opened on first use; a new file's directory is fsynced."""
        if self._fd is not None:
            return self._fd
        # Read-write so the tail can be read back through the descriptor being written.
        flags = os.O_RDWR | os.O_APPEND | os.O_CLOEXEC | os.O_NOFOLLOW
        try:
            fd = os.open(self.path, flags | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            fd = open_no_symlink(self.path, flags)
        else:
            # The new name must survive a crash too, not only the data behind it.
            fsync_dir(self.path.parent)
        try:
            check_same_file(fd, self.path)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        return fd

    def _current_tail(self, fd: int) -> _Tail:
        stat = os.fstat(fd)
        cached = self._tail
        if cached is not None and (cached.size, cached.mtime_ns) == (
            stat.st_size,
            stat.st_mtime_ns,
        ):
            return cached
        tail = _scan_tail(fd, self.path, stat.st_size, stat.st_mtime_ns)
        self._tail = tail
        return tail

    def _append_locked(
        self, fd: int, batch: Sequence[StoredRecord], lines: Sequence[bytes] | None = None
    ) -> None:
        check_same_file(fd, self.path)
        tail = self._current_tail(fd)
        if tail.torn_offset is not None:
            torn = os.pread(fd, tail.size - tail.torn_offset, tail.torn_offset)
            raise LogTornTail(
                f"{self.path}: ends in a torn line of {tail.size - tail.torn_offset} bytes "
                f"at offset {tail.torn_offset}; call repair() before appending",
                path=self.path,
                offset=tail.torn_offset,
                tail=torn,
            )
        previous = self._check_batch(tail.last_seq, batch)
        data = b"".join(line + NEWLINE for line in lines or self._encode(batch))
        self._tail = None
        write_all(fd, data)
        os.fsync(fd)
        stat = os.fstat(fd)
        self._tail = _Tail(
            size=stat.st_size, mtime_ns=stat.st_mtime_ns, last_seq=previous, torn_offset=None
        )

    def _check_batch(self, last_seq: int | None, batch: Sequence[StoredRecord]) -> int | None:
        """`LogSequenceError` unless ``batch`` numbers rise above ``last_seq`` and a header
        comes only first; the batch's last number."""
        previous = last_seq
        for record in batch:
            if previous is not None and record.seq <= previous:
                raise LogSequenceError(
                    f"{self._where}: sequence number {record.seq} is not above {previous}; "
                    "nothing was written"
                )
            if previous is not None and isinstance(record, StoredHeader):
                raise LogSequenceError(
                    f"{self._where}: a task header must be the file's first record; "
                    "nothing was written"
                )
            previous = record.seq
        return previous

    @staticmethod
    def _encode(batch: Iterable[StoredRecord]) -> list[bytes]:
        """Each record's line, without its newline: the bytes every store keeps."""
        return [_STORED.dump_json(record) for record in batch]

    def _decode(self, lines: Iterable[bytes]) -> LogRead:
        """The records of complete lines, checked as a file's are (`LogCorrupt` naming the
        1-based line)."""
        records: list[StoredRecord] = []
        for number, line in enumerate(lines, 1):
            record = _parse_line(line, self._where, number)
            _check_order(records, record, self._where, number)
            records.append(record)
        return LogRead(records=records)


def _ids_after(
    ids: tuple[set[str], set[str]], events: Iterable[object]
) -> tuple[set[str], set[str]]:
    """The (call ids, answered ids) sets grown by ``events`` (in place)."""
    calls, answered = ids
    for event in events:
        if isinstance(event, ToolCall):
            calls.add(event.call_id)
        elif isinstance(event, ToolResult):
            answered.add(event.call_id)
    return calls, answered


def _parse(fd: int, path: Path) -> LogRead:
    """Read the file's records and torn tail, a chunk at a time: memory holds one chunk,
    the line being parsed and the records (an image event's base64 is held once, as its
    record's string, never also as the whole file's bytes). Raises on an invalid line."""
    records: list[StoredRecord] = []
    pending = bytearray()
    offset = 0
    number = 0
    while chunk := os.pread(fd, READ_CHUNK, offset):
        offset += len(chunk)
        pending += chunk
        start = 0
        while (stop := pending.find(NEWLINE, start)) != -1:
            number += 1
            record = _parse_line(pending[start:stop], path, number)
            _check_order(records, record, path, number)
            records.append(record)
            start = stop + 1
        del pending[:start]
    if not pending:
        return LogRead(records=records)
    return LogRead(records=records, torn_tail=bytes(pending), torn_offset=offset - len(pending))


def _check_order(
    records: list[StoredRecord], record: StoredRecord, path: Path | str, number: int
) -> None:
    if records and record.seq <= records[-1].seq:
        raise LogCorrupt(
            f"{path}:{number}: sequence number {record.seq} is not above "
            f"{records[-1].seq} on the line before",
            path=path,
            line=number,
        )
    if records and isinstance(record, StoredHeader):
        raise LogCorrupt(
            f"{path}:{number}: a task header after the first line", path=path, line=number
        )


def _parse_line(line: bytes | bytearray, path: Path | str, number: int) -> StoredRecord:
    try:
        return _STORED.validate_json(line)
    except ValidationError as exc:
        first = exc.errors(include_url=False, include_input=False)[0]
        # The first step names the record kind ("event"), not a field: leave it out.
        loc = first["loc"][1:] if first["type"] != "record_kind" else first["loc"]
        where = ".".join(str(part) for part in loc)
        detail = f"{where}: {first['msg']}" if where else first["msg"]
        raise LogCorrupt(
            f"{path}:{number}: not a valid log record ({detail})", path=path, line=number
        ) from None


def _scan_tail(fd: int, path: Path, size: int, mtime_ns: int) -> _Tail:
    """The last complete record's number and any torn tail, reading backwards from the end."""
    torn_offset: int | None = None
    line_end = size
    if size and os.pread(fd, 1, size - 1) != NEWLINE:
        line_end = last_newline_before(fd, size) + 1
        torn_offset = line_end
    if line_end == 0:
        return _Tail(size=size, mtime_ns=mtime_ns, last_seq=None, torn_offset=torn_offset)
    line_start = last_newline_before(fd, line_end - 1) + 1
    line = os.pread(fd, line_end - 1 - line_start, line_start)
    try:
        record = _STORED.validate_json(line)
    except ValidationError:
        # Count lines only on this error path, so the message can name the line.
        number = os.pread(fd, line_start, 0).count(NEWLINE) + 1
        _parse_line(line, path, number)
        raise
    return _Tail(size=size, mtime_ns=mtime_ns, last_seq=record.seq, torn_offset=torn_offset)


def _first_record(fd: int, path: Path) -> StoredRecord:
    """The file's first record (the caller knows there is one), reading only its line."""
    offset, chunks = 0, []
    while True:
        chunk = os.pread(fd, TAIL_CHUNK, offset)
        found = chunk.find(NEWLINE)
        if found >= 0:
            chunks.append(chunk[:found])
            return _parse_line(b"".join(chunks), path, 1)
        chunks.append(chunk)
        offset += len(chunk)


def _task_id(header: StoredHeader) -> str:
    """The task's id: a digest of its header record, which is written once and never changes."""
    digest = hashlib.sha256(header.model_dump_json().encode()).hexdigest()
    return f"task_{digest[:32]}"


def _pin_record(pin: Pin) -> dict[str, Any]:
    """The record a task header holds for ``pin`` (the one place that makes it)."""
    return pin.record()


def _pin_from_record(record: dict[str, Any], token: str | SecretStr, base_url: str | None) -> Pin:
    """The pin of a task header, given the token and the operator's base URL (the one
    place that rebuilds it)."""
    from nisse_llm.config.settings import Pin

    return Pin.from_record(record, token, base_url=base_url)
