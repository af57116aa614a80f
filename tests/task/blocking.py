"""A sync face of an async task store, so the tests that hold the sync stores to their
promises hold the async ones to the same: each method runs the async store's coroutine
on a loop of the adapter's own. It is a `TaskStore` for the code that takes one (routers,
tasks), and defers everything to the async store it wraps."""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from collections.abc import Callable, Coroutine, Iterable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Self, TypeVar

from pydantic import SecretStr

from nisse_llm.config.settings import Pin
from nisse_llm.events.canonical import CanonicalEvent, LogLike, StoredEvent, ToolResult
from nisse_llm.task.delegation import ParentRecord, StoredParent
from nisse_llm.task.lease import FileLease
from nisse_llm.task.logstore import (
    AsyncTaskStore,
    LogRead,
    TaskStore,
)
from nisse_llm.task.records import (
    ApprovalRecord,
    CallRecord,
    OpenedPin,
    ProgramRecord,
    RepinRecord,
    ResumedTask,
    StoredApproval,
    StoredCall,
    StoredProgram,
    StoredRecord,
    StoredRepin,
    StoredToolRun,
    StoredTools,
    ToolRunRecord,
    ToolsRecord,
)

T = TypeVar("T")
_DEFERRED = "the adapter defers every method to the async store it wraps"


class Blocking(TaskStore):
    """``inner``'s methods, each run to its end on this adapter's own event loop."""

    def __init__(self, inner: AsyncTaskStore) -> None:  # no TaskStore state: all deferred
        self.inner = inner
        self.path = getattr(inner, "path", Path("-"))
        self._runner = asyncio.Runner()
        # One loop runs one coroutine at a time: threads sharing the adapter take turns
        # (coroutines sharing an async store are tested on one loop, in test_async_stores).
        self._turn = threading.Lock()

    def _run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        with self._turn:
            return self._runner.run(coroutine)

    def __repr__(self) -> str:
        return f"Blocking({self.inner!r})"

    @property
    def task_id(self) -> str | None:
        return self.inner.task_id

    @property
    def place(self) -> tuple[str, ...]:
        return self.inner.place

    @property
    def _where(self) -> str:
        return repr(self.inner)

    @property
    def task_key(self) -> str:
        return self.inner.task_key

    def sibling(self, key: str) -> Self:
        return type(self)(self.inner.sibling(key))

    def abandon(self) -> None:
        self.inner.abandon()

    def watch(self, written: Callable[[Sequence[StoredRecord]], None]) -> Callable[[], None]:
        return self.inner.watch(written)

    # The record logic's hooks: never reached, as every public method is the inner store's.

    def _exclusive(self) -> AbstractContextManager[None]:
        raise AssertionError(_DEFERRED)

    def _x_check_begun(self) -> None:
        raise AssertionError(_DEFERRED)

    def _x_last_seq(self) -> int | None:
        raise AssertionError(_DEFERRED)

    def _x_state(self) -> object:
        raise AssertionError(_DEFERRED)

    def _x_read(self) -> LogRead:
        raise AssertionError(_DEFERRED)

    def _x_first(self) -> StoredRecord:
        raise AssertionError(_DEFERRED)

    def _x_repair(self) -> bytes | None:
        raise AssertionError(_DEFERRED)

    def _x_write(self, batch: Sequence[StoredRecord], lines: Sequence[bytes] | None = None) -> None:
        raise AssertionError(_DEFERRED)

    def _x_clear(self) -> None:
        raise AssertionError(_DEFERRED)

    def _x_delete(self) -> None:
        raise AssertionError(_DEFERRED)

    def delete(self) -> int:
        return self._run(self.inner.delete())

    def _next_seq(self) -> int:
        return self._run(self.inner.next_seq())

    def close(self) -> None:
        self._run(self.inner.aclose())

    def shutdown(self) -> None:
        """Close the store and the adapter's loop (the adapter is done with)."""
        self.close()
        self._runner.close()

    def lease(self) -> FileLease | None:
        return self._run(self.inner.lease())

    def read(self) -> LogRead:
        return self._run(self.inner.read())

    def export_lines(self) -> list[bytes]:
        return self._run(self.inner.export_lines())

    def import_lines(self, lines: Iterable[bytes], *, replace: bool = False) -> int:
        return self._run(self.inner.import_lines(lines, replace=replace))

    def append(self, records: StoredRecord | Iterable[StoredRecord]) -> None:
        self._run(self.inner.append(records))

    def append_event(self, event: CanonicalEvent) -> StoredEvent:
        return self._run(self.inner.append_event(event))

    def append_events(self, events: Iterable[CanonicalEvent]) -> list[StoredEvent]:
        return self._run(self.inner.append_events(events))

    def append_batch(
        self, events: Iterable[CanonicalEvent], *, call: ProgramRecord | None = None
    ) -> list[StoredEvent]:
        return self._run(self.inner.append_batch(events, call=call))

    def append_compaction(self, compacted: LogLike) -> StoredEvent:
        return self._run(self.inner.append_compaction(compacted))

    def append_call(self, record: CallRecord) -> StoredCall:
        return self._run(self.inner.append_call(record))

    def append_tool_run(self, record: ToolRunRecord) -> StoredToolRun:
        return self._run(self.inner.append_tool_run(record))

    def append_program(self, record: ProgramRecord) -> StoredProgram:
        return self._run(self.inner.append_program(record))

    def append_parent(self, record: ParentRecord) -> StoredParent:
        return self._run(self.inner.append_parent(record))

    def append_approval(self, record: ApprovalRecord) -> StoredApproval:
        return self._run(self.inner.append_approval(record))

    def append_tools(self, record: ToolsRecord) -> StoredTools:
        return self._run(self.inner.append_tools(record))

    def append_tool_outcome(self, record: ToolRunRecord, result: ToolResult) -> None:
        self._run(self.inner.append_tool_outcome(record, result))

    def append_repin(self, record: RepinRecord) -> StoredRepin:
        return self._run(self.inner.append_repin(record))

    def open_pin(self, pin: Pin, *, strict_pin: bool = False) -> OpenedPin:
        return self._run(self.inner.open_pin(pin, strict_pin=strict_pin))

    def begin(self, pin: Pin) -> Self:
        self._run(self.inner.begin(pin))
        return self

    def resume(self, token: str | SecretStr, *, base_url: str | None = None) -> ResumedTask[Self]:
        found = self._run(self.inner.resume(token, base_url=base_url))
        return dataclasses.replace(found, store=self)  # type: ignore[arg-type, return-value]

    def repair(self) -> bytes | None:
        return self._run(self.inner.repair())
