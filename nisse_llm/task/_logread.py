"""What both task stores share beside their I/O: a read of the records (`LogRead`), a
line's parse and order checks, the file's tail, and the task id and pin of a header.
Plain functions over bytes and descriptors; `nisse_llm.task.logstore` says what a store
promises."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import SecretStr, TypeAdapter, ValidationError

from nisse_llm.errors import LogCorrupt, LogSequenceError
from nisse_llm.events.canonical import StoredEvent, ToolCall, ToolResult
from nisse_llm.task._files import NEWLINE, READ_CHUNK, TAIL_CHUNK, last_newline_before
from nisse_llm.task.records import (
    StoredApproval,
    StoredBatch,
    StoredCall,
    StoredHeader,
    StoredParent,
    StoredProgram,
    StoredRecord,
    StoredRepin,
    StoredToolRun,
    StoredTools,
    UsageTotals,
    ViewItem,
    compacted_view,
    pin_in_force,
    unknown_calls,
)

if TYPE_CHECKING:
    from nisse_llm.config.settings import Pin

__all__ = [
    "STORED",
    "LogRead",
    "RecordT",
    "Tail",
    "check_batch",
    "check_export",
    "check_order",
    "decode",
    "encode",
    "first_record",
    "ids_after",
    "parse",
    "parse_line",
    "pin_from_record",
    "pin_record",
    "scan_tail",
    "task_id",
]

STORED: TypeAdapter[StoredRecord] = TypeAdapter(StoredRecord)
#: A stored record of the kinds the appends make.
RecordT = TypeVar(
    "RecordT",
    bound=StoredEvent
    | StoredCall
    | StoredToolRun
    | StoredBatch
    | StoredTools
    | StoredRepin
    | StoredProgram
    | StoredApproval
    | StoredParent
    | StoredHeader,
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
    def repins(self) -> list[StoredRepin]:
        """The repin records (``nisse-llm task repin``), in order."""
        return [r for r in self.records if isinstance(r, StoredRepin)]

    @property
    def approvals(self) -> list[StoredApproval]:
        """The approval records (a tool call's approval pending, given or refused), in
        order."""
        return [r for r in self.records if isinstance(r, StoredApproval)]

    @property
    def pin(self) -> dict[str, Any] | None:
        """The pin record the task runs with: its last repin's, else its header's (None:
        no header)."""
        return pin_in_force(self.records) if self.header is not None else None

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
class Tail:
    """What an append needs to know of the file: where it ends and its last number."""

    size: int
    mtime_ns: int
    last_seq: int | None
    torn_offset: int | None


def ids_after(
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


def parse(fd: int, path: Path) -> LogRead:
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
            record = parse_line(pending[start:stop], path, number)
            check_order(records, record, path, number)
            records.append(record)
            start = stop + 1
        del pending[:start]
    if not pending:
        return LogRead(records=records)
    return LogRead(records=records, torn_tail=bytes(pending), torn_offset=offset - len(pending))


def check_order(
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


def parse_line(line: bytes | bytearray, path: Path | str, number: int) -> StoredRecord:
    try:
        return STORED.validate_json(line)
    except ValidationError as exc:
        first = exc.errors(include_url=False, include_input=False)[0]
        # The first step names the record kind ("event"), not a field: leave it out.
        loc = first["loc"][1:] if first["type"] != "record_kind" else first["loc"]
        where = ".".join(str(part) for part in loc)
        detail = f"{where}: {first['msg']}" if where else first["msg"]
        raise LogCorrupt(
            f"{path}:{number}: not a valid log record ({detail})", path=path, line=number
        ) from None


def scan_tail(fd: int, path: Path, size: int, mtime_ns: int) -> Tail:
    """The last complete record's number and any torn tail, reading backwards from the end."""
    torn_offset: int | None = None
    line_end = size
    if size and os.pread(fd, 1, size - 1) != NEWLINE:
        line_end = last_newline_before(fd, size) + 1
        torn_offset = line_end
    if line_end == 0:
        return Tail(size=size, mtime_ns=mtime_ns, last_seq=None, torn_offset=torn_offset)
    line_start = last_newline_before(fd, line_end - 1) + 1
    line = os.pread(fd, line_end - 1 - line_start, line_start)
    try:
        record = STORED.validate_json(line)
    except ValidationError:
        # Count lines only on this error path, so the message can name the line.
        number = os.pread(fd, line_start, 0).count(NEWLINE) + 1
        parse_line(line, path, number)
        raise
    return Tail(size=size, mtime_ns=mtime_ns, last_seq=record.seq, torn_offset=torn_offset)


def first_record(fd: int, path: Path) -> StoredRecord:
    """The file's first record (the caller knows there is one), reading only its line."""
    offset, chunks = 0, []
    while True:
        chunk = os.pread(fd, TAIL_CHUNK, offset)
        found = chunk.find(NEWLINE)
        if found >= 0:
            chunks.append(chunk[:found])
            return parse_line(b"".join(chunks), path, 1)
        chunks.append(chunk)
        offset += len(chunk)


def task_id(header: StoredHeader) -> str:
    """The task's id: a digest of its header record, which is written once and never changes."""
    digest = hashlib.sha256(header.model_dump_json().encode()).hexdigest()
    return f"task_{digest[:32]}"


def pin_record(pin: Pin) -> dict[str, Any]:
    """The record a task header holds for ``pin`` (the one place that makes it)."""
    return pin.record()


def pin_from_record(record: dict[str, Any], token: str | SecretStr, base_url: str | None) -> Pin:
    """The pin of a task header, given the token and the operator's base URL (the one
    place that rebuilds it)."""
    from nisse_llm.config.settings import Pin

    return Pin.from_record(record, token, base_url=base_url)


def check_batch(
    where: Path | str, last_seq: int | None, batch: Sequence[StoredRecord]
) -> int | None:
    """`LogSequenceError` unless ``batch`` numbers rise above ``last_seq`` and a header
    comes only first; the batch's last number."""
    previous = last_seq
    for record in batch:
        if previous is not None and record.seq <= previous:
            raise LogSequenceError(
                f"{where}: sequence number {record.seq} is not above {previous}; "
                "nothing was written"
            )
        if previous is not None and isinstance(record, StoredHeader):
            raise LogSequenceError(
                f"{where}: a task header must be the file's first record; nothing was written"
            )
        previous = record.seq
    return previous


def encode(batch: Iterable[StoredRecord]) -> list[bytes]:
    """Each record's line, without its newline: the bytes every store keeps."""
    return [STORED.dump_json(record) for record in batch]


def decode(lines: Iterable[bytes], where: Path | str) -> LogRead:
    """The records of complete lines, checked as a file's are (`LogCorrupt` naming the
    1-based line)."""
    records: list[StoredRecord] = []
    for number, line in enumerate(lines, 1):
        record = parse_line(line, where, number)
        check_order(records, record, where, number)
        records.append(record)
    return LogRead(records=records)


def check_export(lines: Sequence[bytes], where: Path | str) -> list[StoredRecord]:
    """The records of an export (``task export``'s lines) to import as a whole task;
    `LogSequenceError` for an empty export, one whose first record is not the task's
    header, or a gap or a repeat in its numbers (a task is numbered 0, 1, 2... without a
    gap), and `LogCorrupt` for a line that is no record: nothing is to be written."""
    if not lines:
        raise LogSequenceError(f"{where}: the export holds no record; nothing was written")
    records: list[StoredRecord] = []
    for number, line in enumerate(lines, 1):
        record = parse_line(line, where, number)
        if number == 1 and not isinstance(record, StoredHeader):
            raise LogSequenceError(
                f"{where}: the export's first record is not a task header (an export begins "
                "with its header: import a whole `task export`); nothing was written"
            )
        if record.seq != number - 1:
            kind = "a repeat" if record.seq < number - 1 else "a gap"
            raise LogSequenceError(
                f"{where}: line {number} of the export is record {record.seq}, not "
                f"{number - 1}: {kind} in its numbers (a task is numbered 0, 1, 2... "
                "without a gap); nothing was written"
            )
        check_order(records, record, where, number)
        records.append(record)
    return records
