# Generated from nisse_llm/task/_async/store.py by scripts/gen_sync.py (unasync); do not edit.
"""The task store, written once: the record logic (header and pin check, numbering, id
claims, batches, compaction, resume, import) in `TaskStore`, over a few abstract
``_x_*`` hooks that its siblings implement: `FileTaskStore` (``filestore.py``) and
`PostgresTaskStore` (``postgres.py``). ``_sync/store.py`` (`TaskStore`) is generated
from this source by ``scripts/gen_sync.py``.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from pydantic import SecretStr

from nisse_llm._closing import Closing
from nisse_llm.errors import ApprovalRefused, LogDuplicateId, LogSequenceError
from nisse_llm.events.canonical import CanonicalEvent, LogLike, StoredEvent, ToolCall, ToolResult
from nisse_llm.task._logread import (
    LogRead,
    RecordT,
    check_export,
    ids_after,
    pin_from_record,
    pin_record,
    task_id,
)
from nisse_llm.task._sync import io
from nisse_llm.task.approvals import decision_problem
from nisse_llm.task.delegation import ParentRecord, StoredParent
from nisse_llm.task.records import (
    RECORD_TYPES,
    ApprovalRecord,
    BatchRecord,
    CallRecord,
    OpenedPin,
    ProgramRecord,
    RepinRecord,
    ResumedTask,
    StoredApproval,
    StoredBatch,
    StoredCall,
    StoredHeader,
    StoredProgram,
    StoredRecord,
    StoredRepin,
    StoredToolRun,
    StoredTools,
    TaskHeader,
    TaskHeaderMissing,
    TaskPinMismatch,
    ToolRunRecord,
    ToolsRecord,
    compacted_view,
    compaction_record,
    offered_tools,
    pending_calls,
    pin_changes_message,
    pin_difference,
    pin_keys,
)

if TYPE_CHECKING:
    from nisse_llm.config.settings import Pin
    from nisse_llm.task.lease import FileLease

__all__ = ["TaskStore"]

logger = logging.getLogger("nisse_llm")


class TaskStore(io.NextSeq, Closing, ABC):
    """One task's records, wherever they are kept: the record logic, written once.

    The logic works over the abstract ``_x_*`` hooks, called only inside ``_exclusive()``
    (a read-then-write no other writer interleaves with); a store says how its records
    are held, read, leased and closed, and nothing outside the stores asks which kind it
    is: `same_task` says whether two store objects hold one task.
    """

    #: Whether a write is whole or absent after a crash by itself (a database's
    #: transaction); where not (a file), several events follow a batch record.
    _atomic_writes = False

    def __init__(self) -> None:
        self._lock = io.new_lock()
        # The call ids and answered ids in the log, as of the log state ``_ids_at``.
        self._ids: tuple[set[str], set[str]] | None = None
        self._ids_at: object = None
        self._task_id: str | None = None
        # The log as this store last read or wrote it, and the log state it was then: a
        # task opened (pin, prompt, resume, first id check) reads its records once.
        self._known: tuple[object, LogRead] | None = None
        # Told of each batch this store object writes (an open task keeps its records so).
        self._watchers: list[Callable[[Sequence[StoredRecord]], None]] = []

    @property
    @abstractmethod
    def _where(self) -> Path | str:
        """What messages and errors name as the task's place."""

    @property
    @abstractmethod
    def place(self) -> tuple[str, ...]:
        """What names the task's place, equal for every store object of one task (a file's
        real path; a database and a key)."""

    def same_task(self, other: object) -> bool:
        """Whether ``other`` is a store of this very task (`place` compared)."""
        return other is self or (isinstance(other, TaskStore) and other.place == self.place)

    @property
    def task_id(self) -> str | None:
        """An opaque id of the task this store holds, the same on every resume (a digest of
        its header); None until `begin` or `resume` has read or written the header."""
        return self._task_id

    @property
    @abstractmethod
    def task_key(self) -> str:
        """The task's key in its store (a file's name without ``.jsonl``)."""

    @abstractmethod
    def sibling(self, key: str) -> Self:
        """The store of task ``key`` beside this one (a sub-task's: the same folder or
        database)."""

    @abstractmethod
    def close(self) -> None:
        """Release what the store holds (a descriptor, a connection); reopened by the next use."""

    @abstractmethod
    def abandon(self) -> None:
        """Let go of what the store holds, without blocking or awaiting (a task dropped
        open does, from its finalizer)."""

    @abstractmethod
    def lease(self) -> FileLease | None:
        """Take the task's driver lease, for one driver per task (`Task.open` does), or
        `TaskBusy` naming its holder."""

    @abstractmethod
    def read(self) -> LogRead:
        """Every complete record, in order (a task never written is an empty log);
        `LogCorrupt` naming the record that is not valid."""

    @abstractmethod
    def export_lines(self) -> list[bytes]:
        """Every complete record's line as stored (no newline), in order: what ``task
        export`` prints."""

    def watch(self, written: Callable[[Sequence[StoredRecord]], None]) -> Callable[[], None]:
        """Call ``written`` with each batch this store object appends, once it is durable
        (an open task keeps its records so, reading none back); returns what stops it."""
        self._watchers.append(written)
        return lambda: self._watchers.remove(written)

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
            self._write(batch)

    def import_lines(self, lines: Iterable[bytes], *, replace: bool = False) -> int:
        """Write a whole task given as its lines (``task export``), each validated and kept
        byte for byte, in one write; return how many. Refused before anything is written
        (`check_export`: `LogSequenceError`, `LogCorrupt`): an empty export, one without
        its header first, a gap or a repeat in its numbers; and a task that exists
        (`LogSequenceError`) unless ``replace``, which removes its records first (in the
        same transaction in a database; a file is emptied, then written)."""
        batch = [line.rstrip(b"\r\n") for line in lines if line.strip()]
        records = check_export(batch, self._where)
        with self._exclusive():
            self._x_repair()
            last_seq = self._x_last_seq()
            if last_seq is not None and not replace:
                raise LogSequenceError(
                    f"{self._where}: the task exists already (records 0..{last_seq}): import "
                    "under another key, or replace it (`task import --replace`); nothing "
                    "was written"
                )
            if last_seq is not None:
                self._x_clear()
                self._ids, self._task_id, self._known = None, None, None
            self._write(records, batch)
        return len(records)

    def delete(self) -> int:
        """Remove the task, every record of it (``nisse-llm task prune``), and return how
        many there were; the caller holds its lease (`lease`), so no driver has it open."""
        with self._exclusive():
            count = len((self._x_current()).records)
            self._x_delete()
            self._ids, self._task_id, self._known = None, None, None
        return count

    def append_event(self, event: CanonicalEvent) -> StoredEvent:
        """Append an event as the next record, stamped with the current UTC time; return it.

        A `ToolCall` whose id the file already holds, or a `ToolResult` for a call already
        answered, raises `LogDuplicateId` and nothing is written (a log holding it would
        be refused by every route).
        """
        return (self._append_next([event], StoredEvent.now))[0]

    def append_events(self, events: Iterable[CanonicalEvent]) -> list[StoredEvent]:
        """Append events as the next records, in one write (a reply is logged whole or not at
        all); `LogDuplicateId` as for `append_event`."""
        return self._append_next(list(events), StoredEvent.now)

    def append_batch(
        self, events: Iterable[CanonicalEvent], *, call: ProgramRecord | None = None
    ) -> list[StoredEvent]:
        """`append_events`, all or nothing even across a crash: several events follow a
        batch record holding them, in the same write, so a write a crash cut short is
        finished from it (`nisse_llm.task.records.unfinished_batch`); a store whose write
        is whole or absent by itself (a database's) needs no such record. ``call`` is the
        program's ``say`` the events are (then the batch record is written, in any store,
        for one event too)."""
        events = list(events)
        if call is None and (len(events) < 2 or self._atomic_writes):
            return self.append_events(events)

        def make(seq: int, item: BatchRecord | CanonicalEvent) -> StoredBatch | StoredEvent:
            if isinstance(item, BatchRecord):
                return StoredBatch.now(seq, item)
            return StoredEvent.now(seq, item)

        written = self._append_next([BatchRecord(events=events, call=call), *events], make)
        return [record for record in written if isinstance(record, StoredEvent)]

    def append_compaction(self, compacted: LogLike) -> StoredEvent:
        """Record that the task's log is now ``compacted`` (`compact` or `summarize` applied
        to the view `resume` gives, perhaps with events not yet appended at its end).

        Appends one `Compaction` event naming the records it replaces and carrying the
        summary, if any; the records stay in the file (``ResumedTask.history``) and
        ``ResumedTask.events`` is the compacted view from then on. `ValueError` (nothing
        written) if ``compacted`` is not a compaction of the file's log.
        """
        from nisse_llm.events.canonical import as_events

        events = as_events(compacted)
        with self._exclusive():
            found = self._x_current()
            record = compaction_record(compacted_view(found.events), events)
            last_seq = self._x_last_seq()
            stored = StoredEvent.now(0 if last_seq is None else last_seq + 1, record)
            self._write([stored])
        return stored

    def append_call(self, record: CallRecord) -> StoredCall:
        """Append a call record (role, model, route, usage, cost, outcome); return it.

        `RoleRouter.from_pin(pin, store=...)` calls this for every call it makes.
        """
        return (self._append_next([record], StoredCall.now))[0]

    def append_tool_run(self, record: ToolRunRecord) -> StoredToolRun:
        """Append a tool-run record (a tool's start, before it runs); return it."""
        return (self._append_next([record], StoredToolRun.now))[0]

    def append_program(self, record: ProgramRecord) -> StoredProgram:
        """Append a program record (a call of the task's program started or done; see
        `ProgramRecord`); return it."""
        return (self._append_next([record], StoredProgram.now))[0]

    def append_parent(self, record: ParentRecord) -> StoredParent:
        """Append the record naming the task that delegated this one; return it."""
        return (self._append_next([record], StoredParent.now))[0]

    def append_approval(self, record: ApprovalRecord) -> StoredApproval:
        """Append an approval record. A ``"pending"`` one is appended as it is; a decision
        (``"approved"``, ``"denied"``) is checked against the file in the same exclusive
        write (`decision_problem`): `ApprovalRefused` with the reason, nothing written, for
        a call that awaits no approval or was decided before. A decision is written as the
        task's driver (its lease held): a torn tail a killed writer left is cut first."""
        with self._exclusive():
            if record.outcome != "pending":
                self._x_repair()
                found = self._x_current()
                problem = decision_problem(
                    found.records, (r.event for r in found.events), record.call_id
                )
                if problem is not None:
                    raise ApprovalRefused(
                        f"{self._where}: {record.outcome[:-1]} refused, nothing written: {problem}",
                        call_id=record.call_id,
                        reason=problem,
                    )
            last_seq = self._x_last_seq()
            stored = StoredApproval.now(0 if last_seq is None else last_seq + 1, record)
            self._write([stored])
        return stored

    def append_tools(self, record: ToolsRecord) -> StoredTools:
        """Append the tool specs a step offers (see `ToolsRecord`); return the record."""
        return (self._append_next([record], StoredTools.now))[0]

    def append_repin(self, record: RepinRecord) -> StoredRepin:
        """Append a repin record (``nisse-llm task repin``): the task runs with its pin from
        the next opening on; return it. `TaskHeaderMissing` for a task never begun."""
        with self._exclusive():
            found = self._x_current()
            self._header_of(found.records[0] if found.records else None)
            last_seq = self._x_last_seq()
            stored = StoredRepin.now(0 if last_seq is None else last_seq + 1, record)
            self._write([stored])
        return stored

    def append_tool_outcome(self, record: ToolRunRecord, result: ToolResult) -> None:
        """Append a tool-run record and the `ToolResult` that answers its call, in one write
        (both or neither are in the file after a crash); `LogDuplicateId` as for
        `append_event`."""

        def make(seq: int, item: ToolRunRecord | ToolResult) -> StoredToolRun | StoredEvent:
            if isinstance(item, ToolRunRecord):
                return StoredToolRun.now(seq, item)
            return StoredEvent.now(seq, item)

        self._append_next([record, result], make)

    def begin(self, pin: Pin) -> Self:
        """Start the task ``pin`` in this file, or check that the file's task is this one.

        An empty or missing file gets the header (``pin.record()``, no token) as its first
        record. A file already begun is checked: a header of another pin raises
        `TaskPinMismatch`, a file of events without a header `TaskHeaderMissing`. A torn
        tail a crash left is removed first, as `repair` does. Returns the store itself, so
        ``store = FileTaskStore(path).begin(pin)`` reads naturally.
        """
        record = pin_record(pin)
        with self._exclusive():
            if self._x_header_written(record):
                return self
            first = self._x_first()
        found = self._header_of(first)
        stored = found.header.pin
        if stored != record:
            raise self._mismatch(stored, record)
        self._task_id = task_id(found)
        return self

    def open_pin(self, pin: Pin, *, strict_pin: bool = False) -> OpenedPin:
        """Begin the task with ``pin`` if the store holds none; else the pin the task was
        begun with (or last repinned to), rebuilt with ``pin``'s token: the pin in force.

        Where ``pin`` differs from the task's, the task opens anyway with its own pin, one
        WARNING naming the keys that differ is logged, and the result's ``changes`` names
        them; with ``strict_pin`` it is `TaskPinMismatch` instead (as `begin`). A task
        whose pin names another base URL than ``pin`` is `TaskPinMismatch` naming both,
        whatever ``strict_pin`` says: the token goes only to the caller's proxy. A torn
        tail a crash left is removed first. Nothing else is written.
        """
        record = pin_record(pin)
        with self._exclusive():
            if self._x_header_written(record):
                return OpenedPin(pin=pin)
            found = self._x_current()
        self._task_id = task_id(self._header_of(found.records[0]))
        stored = found.pin or {}
        self._check_base_url(stored, pin.base_url, record)
        changes = tuple(pin_keys(stored, record))
        if not changes:
            return OpenedPin(pin=pin)
        if strict_pin:
            raise self._mismatch(stored, record)
        in_force = pin.restored(stored)
        logger.warning(pin_changes_message(self._where, stored, record, changes))
        return OpenedPin(pin=in_force, changes=changes)

    def _x_header_written(self, record: dict[str, Any]) -> bool:
        """Write the header of pin ``record`` if the store holds no record (a torn tail a
        crash left removed first); whether it did."""
        self._x_repair()
        if self._x_last_seq() is not None:
            return False
        header = StoredHeader.now(0, TaskHeader(pin=record))
        self._write([header])
        self._task_id = task_id(header)
        return True

    def _check_base_url(self, stored: dict[str, Any], base_url: str, given: dict[str, Any]) -> None:
        """`TaskPinMismatch` naming both URLs unless the task's pin names ``base_url``."""
        if stored.get("base_url") != base_url.rstrip("/"):
            raise TaskPinMismatch(
                f"{self._where}: the task's pin names the proxy {stored.get('base_url')!r}, "
                f"not the caller's {base_url.rstrip('/')!r}: the token is sent only to the "
                "caller's proxy; open it with that URL configured, or move the task with "
                "`nisse-llm task repin KEY --base-url URL`",
                path=self._where,
                stored=str(stored.get("fingerprint")),
                given=str(given.get("fingerprint")),
            )

    def _mismatch(self, stored: dict[str, Any], record: dict[str, Any]) -> TaskPinMismatch:
        return TaskPinMismatch(
            f"{self._where}: the task was begun with pin {stored.get('fingerprint')}, "
            f"not {record.get('fingerprint')}{pin_difference(stored, record)}; "
            "resume it with resume(token), or begin a new task in another file",
            path=self._where,
            stored=str(stored.get("fingerprint")),
            given=str(record.get("fingerprint")),
        )

    def resume(self, token: str | SecretStr, *, base_url: str | None = None) -> ResumedTask[Self]:
        """Everything this task holds, ready to continue: pin, events, pending calls, usage.

        ``events`` is the compacted view, repaired where a record would make it unrenderable
        (``repairs`` says how; the file is not changed); ``history`` every event record;
        ``unknown_calls`` the calls that started and never ended.

        The pin is rebuilt from the header, or from the last repin record (``nisse-llm task
        repin``), with ``token`` (never stored) by `Pin.from_record`: the record's base URL
        must be the operator's (``base_url``: `TaskPinMismatch` naming both; else
        ``NISSE_LLM_BASE_URL``). A torn tail a crash left is removed first (its bytes are
        in ``repaired``). Raises `TaskHeaderMissing` for a missing file or one without a
        header, `LogCorrupt` for an invalid line, and `ConfigError` for a header whose pin
        record was damaged or names another base URL.
        """
        self._x_check_begun()
        with self._exclusive():
            repaired = self._x_repair()
            found = self._x_current()
        from nisse_llm.task.compaction import repair

        header = self._header_of(found.records[0] if found.records else None)
        self._task_id = task_id(header)
        stored = found.pin or header.header.pin
        if base_url is not None:
            self._check_base_url(stored, base_url, stored)
        events, fixes = repair([item.event for item in found.view], answer_dangling=False)
        return ResumedTask(
            pin=pin_from_record(stored, token, base_url),
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
            records=list(found.records),
        )

    def repair(self) -> bytes | None:
        """Truncate a torn last line left by a crash and return its bytes (None if none).

        Only the bytes after the last newline go: never a complete record, and those
        bytes were never acknowledged by an `append`. Raises `LogCorrupt` if a complete
        line is invalid, which is not a crash's doing and needs a person.
        """
        with self._exclusive():
            return self._x_repair()

    def _header_of(self, first: StoredRecord | None) -> StoredHeader:
        if isinstance(first, StoredHeader):
            return first
        what = "is empty" if first is None else "holds events but no task header"
        raise TaskHeaderMissing(
            f"{self._where}: {what}; begin(pin) starts a task in a new or empty file",
            path=self._where,
        )

    def _append_next(
        self, items: Sequence[Any], make: Callable[[int, Any], RecordT]
    ) -> list[RecordT]:
        """Number ``items`` after the log's last record, stamp them now, append in one write."""
        if not items:
            return []
        with self._exclusive():
            if any(isinstance(item, ToolCall | ToolResult) for item in items):
                self._check_ids(items)
            last_seq = self._x_last_seq()
            seq = 0 if last_seq is None else last_seq + 1
            records = [make(seq + n, item) for n, item in enumerate(items)]
            self._write(records)
            if self._ids is not None:
                ids_after(self._ids, items)
                self._ids_at = self._x_state()
        return records

    def _check_ids(self, items: Sequence[Any]) -> None:
        """`LogDuplicateId` if ``items`` reuse a call id of the log or of each other.

        The log's ids are read once and kept while the log is only appended to by this
        store (another writer's append changes its state: it is read again)."""
        state = self._x_state()
        if self._ids is None or self._ids_at != state:
            found = self._x_current()
            self._ids = ids_after((set(), set()), [r.event for r in found.events])
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

    def _x_current(self) -> LogRead:
        """Every record (inside ``_exclusive()``): read once, then kept while the log's state
        is the one it was read or written at (another writer's append changes it)."""
        state = self._x_state()
        if self._known is None or self._known[0] != state:
            self._known = (state, self._x_read())
        return self._known[1]

    def _write(self, batch: Sequence[StoredRecord], lines: Sequence[bytes] | None = None) -> None:
        """`_x_write`, and the kept log extended by ``batch`` if it was current."""
        known = self._known
        if known is not None and known[0] != self._x_state():
            known = None
        self._known = None  # a write that raises leaves nothing known
        after = None if known is None else LogRead(records=[*known[1].records, *batch])
        self._x_write(batch, lines, after)
        if after is not None:
            self._known = (self._x_state(), after)
        for written in list(self._watchers):
            written(batch)

    # The hooks: what a store does inside ``_exclusive()``, and how it gets it.

    @abstractmethod
    def _exclusive(self) -> AbstractContextManager[None]:
        """Hold the log for a read-then-write (the ``_x_*`` methods work only inside it)."""

    @abstractmethod
    def _x_check_begun(self) -> None:
        """`TaskHeaderMissing` where the store can tell, before any lock, that the task was
        never begun."""

    @abstractmethod
    def _x_last_seq(self) -> int | None:
        """The last record's number (None for an empty log)."""

    @abstractmethod
    def _x_state(self) -> object:
        """A value that changes whenever the log does (the ids read are kept while it holds)."""

    @abstractmethod
    def _x_read(self) -> LogRead:
        """Every record, as `read`."""

    @abstractmethod
    def _x_first(self) -> StoredRecord:
        """The first record (the task has one)."""

    @abstractmethod
    def _x_repair(self) -> bytes | None:
        """Remove a torn tail a crash left, and return its bytes (None if none)."""

    @abstractmethod
    def _x_write(
        self,
        batch: Sequence[StoredRecord],
        lines: Sequence[bytes] | None = None,
        after: LogRead | None = None,
    ) -> None:
        """Append ``batch`` (encoded as ``lines`` when given: bytes kept as they came);
        ``after`` is the whole log with it, when this store knows it."""

    @abstractmethod
    def _x_delete(self) -> None:
        """Remove the task and its records (`delete`)."""

    @abstractmethod
    def _x_clear(self) -> None:
        """Remove every record of the task (``import_lines(..., replace=True)``)."""
