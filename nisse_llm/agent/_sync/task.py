# Generated from nisse_llm/agent/_async/task.py by tests/gen_sync.py (unasync); do not edit.
"""The durable agent loop, written once: ``_async/task.py`` is the source, ``_sync/task.py``
is generated from it by ``tests/gen_sync.py`` (unasync).

``Task.open(path, pin, prompt=...)`` begins the task or resumes it; ``run`` steps until
the model answers without tool calls. Every step is written before it acts (see
`nisse_llm.agent.plan`, which decides what a resumed task does), so a task killed at any
instant reopens to the log an uninterrupted run would have.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from decimal import Decimal
from typing import TYPE_CHECKING, Any, TypeVar

from nisse_llm import defaults
from nisse_llm._closing import Closing
from nisse_llm.agent._base import (
    Reconcile,
    StoreArg,
    TaskBase,
    checked_router,
    history_of,
    open_store,
    reconciled,
    router_pin,
    tool_runs_of,
    toolbox_of,
    unknown_calls_of,
    unknown_tool_runs_of,
    usage_of,
    view_of,
)
from nisse_llm.agent._sync import io
from nisse_llm.agent.plan import (
    Finish,
    RunCounts,
    RunLimits,
    RunResult,
    Step,
    final_text,
    finish_plan,
    typed_answer,
    unknown_result,
)
from nisse_llm.log.canonical import CanonicalEvent, ToolCall, ToolResult, UserImage, UserText
from nisse_llm.log.toolbox import Toolbox
from nisse_llm.task.records import ToolRunRecord, pending_calls, unfinished_batch
from nisse_llm.transport.routers import RoleRouter

if TYPE_CHECKING:
    from pydantic import BaseModel

    from nisse_llm.config.options import RequestOptions
    from nisse_llm.config.settings import Pin, Settings
    from nisse_llm.log.images import Image
    from nisse_llm.task.lease import FileLease
    from nisse_llm.task.logstore import LogRead, TaskStore
    from nisse_llm.task.records import ResumedTask, StoredCall, StoredToolRun, UsageTotals
    from nisse_llm.task.summaries import CompactionPolicy

    M = TypeVar("M", bound=BaseModel)

__all__ = ["Task"]

Tools = Toolbox | Iterable[Callable[..., Any]] | None
R = TypeVar("R")


class Task(TaskBase["TaskStore"], Closing):
    """One durable agent task in one task file: open it, say, run; kill it and open again."""

    def __init__(
        self,
        store: TaskStore,
        pin: Pin,
        router: RoleRouter,
        resumed: ResumedTask[TaskStore],
        *,
        pin_changes: tuple[str, ...] = (),
        owned: bool,
        owns_router: bool,
        lease: FileLease | None,
        reconcile: Reconcile | None,
    ) -> None:
        """A task opened by `open` (which does the opening's I/O): use that."""
        self._router = router
        self._owns_router = owns_router
        #: Whether every tool call of the log is answered (unknown until searched).
        self._settled = False
        super().__init__(
            store,
            pin,
            resumed.events,
            owned=owned,
            reconcile=reconcile,
            repairs=resumed.repairs,
            lease=lease,
            offered_tools=resumed.offered_tools,
            pin_changes=pin_changes,
        )

    @classmethod
    @io.opening
    def open(
        cls,
        store: StoreArg,
        pin: Pin,
        *,
        router: RoleRouter | None = None,
        compaction: CompactionPolicy | None = None,
        prompt: str | None = None,
        reconcile: Reconcile | None = None,
        settings: Settings | None = None,
        strict_pin: bool = False,
    ) -> Task:
        """Begin the task ``pin`` in ``store``, or resume it, as its one driver:
        ``with Task.open(...) as task`` (closed on leaving), or
        ``task = Task.open(...)`` (then ``task.close()``).

        ``store`` is a task file's path, a store object (`TaskStore`,
        `PostgresTaskStore`), or a task key: a string with no path separator and no
        ``.jsonl`` suffix, such as ``"fix-issue-123"``, opened with `open_task_store`
        where ``settings`` say tasks live (default: where `load_task_store` finds: no
        token, no role needed). The task's lease is taken first:
        `TaskBusy` while another driver holds it (see `nisse_llm.task.lease`); closing
        the task releases it.

        A new or empty file gets the pin's header and, with ``prompt``, the first user
        message. A task begun before keeps its own pin (the one it was begun with, or
        repinned to by ``nisse-llm task repin``), rebuilt with ``pin``'s token: ``pin``
        only begins a new task. Where they differ the task opens anyway, with one WARNING
        naming the keys (`pin_changes`); ``strict_pin=True`` makes it `TaskPinMismatch`.
        A task whose pin names another base URL than ``pin`` is `TaskPinMismatch` naming
        both, whatever ``strict_pin`` says, before any request. The file is repaired of a
        torn tail and continued; ``prompt`` is then not written again. ``router``
        (default: one built over the pin in force, with ``compaction``) must record its
        calls in the same file; it takes the task's own pin as it begins.
        ``reconcile(call)`` (see `Reconcile`) is asked for the result of a cut run of
        a tool that may not run again (None: unknown).
        """
        opened, owned = open_store(store, settings)
        if router is not None:
            opened = checked_router(router, opened, compaction)
            owned = False
        lease = _lease(opened, owned)
        try:
            if router is None:
                found = opened.open_pin(pin, strict_pin=strict_pin)
            else:
                router.begin_task()
                found = router_pin(router, pin, strict_pin=strict_pin)
            _begin(opened, prompt)
            in_force = found.pin
            resumed = opened.resume(in_force.token, base_url=in_force.base_url)
            driver = router or RoleRouter.from_pin(in_force, store=opened, compaction=compaction)
        except BaseException:
            _release(opened, owned, lease)
            raise
        return cls(
            opened,
            in_force,
            driver,
            resumed,
            pin_changes=found.changes,
            owned=owned,
            owns_router=router is None,
            lease=lease,
            reconcile=reconcile,
        )

    @property
    def router(self) -> RoleRouter:
        """The router the task's model calls go through."""
        return self._router

    @property
    def events(self) -> io.Read[list[CanonicalEvent]]:
        """The log the next request sends: the file's compacted view, repaired (read from
        the store: ``task.events``)."""
        return self._reading(view_of)

    @property
    def history(self) -> io.Read[list[CanonicalEvent]]:
        """Every event the task file holds, compactions included, in file order (read from
        the store: ``task.history``)."""
        return self._reading(history_of)

    @property
    def usage(self) -> io.Read[UsageTotals]:
        """The usage of every recorded call (tokens and cost, overall and per role; read
        from the store: ``task.usage``)."""
        return self._reading(usage_of)

    @property
    def unknown_calls(self) -> io.Read[list[StoredCall]]:
        """The start records of model calls that never ended: possibly billed (read from the
        store: ``task.unknown_calls``)."""
        return self._reading(unknown_calls_of)

    @property
    def unknown_tool_runs(self) -> io.Read[list[ToolCall]]:
        """The tool calls whose run was cut and whose outcome is unknown (answered by an
        error result saying so; read from the store: ``task.unknown_tool_runs``)."""
        return self._reading(unknown_tool_runs_of)

    @property
    def tool_runs(self) -> io.Read[list[StoredToolRun]]:
        """Every tool-run record of the file (read from the store: ``task.tool_runs``)."""
        return self._reading(tool_runs_of)

    def _reading(self, part: Callable[[LogRead], R]) -> R:
        return part(self._store.read())

    def say(self, text: str, *, images: Iterable[Image] = ()) -> None:
        """Append a user message (its text, then its images), durably, in one write."""
        events: list[CanonicalEvent] = [UserText(text=text)]
        events += [UserImage(image=image) for image in images]
        self._log += [record.event for record in self._store.append_batch(events)]

    def step(
        self, role: str, *, tools: Tools = None, options: RequestOptions | None = None
    ) -> Step:
        """One model call for ``role`` with the task's log, its reply appended before this
        returns, then each tool call it asked for run and its result appended as it comes.

        Tool calls a cut step left unanswered are answered first (`finish_plan`).
        """
        box = toolbox_of(tools)
        finished = self._finish(box)
        self._offer(box)
        completion = self._router.completion(role, self._log, box, options=options)
        self._log += [record.event for record in self._store.append_batch(completion.events)]
        self._settled = False
        results = [
            self._run_tool(box, Finish(e, "run"))
            for e in completion.events
            if isinstance(e, ToolCall)
        ]
        self._settled = True
        return Step(completion=completion, results=results, finished=finished)

    def run(
        self,
        role: str,
        *,
        tools: Tools,
        max_steps: int = defaults.RUN_MAX_STEPS,
        max_cost_usd: Decimal | float | None = None,
        max_tokens: int | None = None,
        options: RequestOptions | None = None,
    ) -> RunResult[str]:
        """Step until the model answers without tool calls; its answer is the result.

        A task already done returns its answer without calling the model. Before each
        model call the run's limits are checked: `RunLimitReached` names the one reached,
        and the task stays resumable. Other errors are `complete`'s.
        """
        limits = _limits(max_steps, max_cost_usd, max_tokens)
        counts = RunCounts()
        with self._agent_span(role) as span:
            try:
                self._steps(role, tools, limits, counts, options)
            finally:
                span.ended(counts.steps, counts.usage)
        return counts.result(self._log, final_text(self._log))

    def run_as(
        self,
        role: str,
        output_type: type[M],
        *,
        tools: Tools,
        max_steps: int = defaults.RUN_MAX_STEPS,
        max_cost_usd: Decimal | float | None = None,
        max_tokens: int | None = None,
        options: RequestOptions | None = None,
        repair_attempts: int = 0,
    ) -> RunResult[M]:
        """`run`, then a typed answer through ``complete_as`` (one more step, its exchange
        appended); the result's ``output`` is the answer. A task whose log ends with such
        an answer (a `run_as` that finished) returns it without calling the model."""
        limits = _limits(max_steps, max_cost_usd, max_tokens)
        counts = RunCounts()
        found = typed_answer(self._log, output_type)
        if found is not None:
            return counts.result(self._log, found)
        with self._agent_span(role) as span:
            try:
                box = toolbox_of(tools)
                self._steps(role, box, limits, counts, options)
                counts.check(limits)
                self._offer(box)  # a run that made no step still records what it offers
                typed = self._router.complete_as(
                    output_type,
                    role,
                    self._log,
                    box,
                    options=options,
                    repair_attempts=repair_attempts,
                )
                self._log += [r.event for r in self._store.append_batch(typed.events)]
                counts.add(typed.usage, *typed.calls)
            finally:
                span.ended(counts.steps, counts.usage)
        return counts.result(self._log, typed.value)

    def _steps(
        self,
        role: str,
        tools: Tools,
        limits: RunLimits,
        counts: RunCounts,
        options: RequestOptions | None,
    ) -> None:
        box = toolbox_of(tools)
        if self.done:
            return
        while True:
            self._finish(box)
            counts.check(limits)
            step = self.step(role, tools=box, options=options)
            counts.add(step.completion.usage, step.completion.call)
            if not step.more:
                return

    def _finish(self, box: Toolbox) -> list[ToolResult]:
        """Answer the tool calls a cut step left unanswered (the log is searched for them
        only after an opening or a cut step, the file's tool-run records read only when
        there are some)."""
        if self._settled:
            return []
        if pending_calls(self._log):
            runs = (self._store.read()).tool_runs
            plan = finish_plan(self._log, runs, box.is_repeatable)
            finished = [self._run_tool(box, finish) for finish in plan]
        else:
            finished = []
        self._settled = True
        return finished

    def _run_tool(self, box: Toolbox, finish: Finish) -> ToolResult:
        """Answer one tool call as ``finish`` says: its start written before it runs, its
        result as soon as it exists."""
        call = finish.call
        if finish.how == "reconcile" and self._reconcile is not None:
            found = reconciled(self._reconcile, call)
            if found is not None:
                return self._answered(found.model_copy(update={"call_id": call.call_id}))
        if finish.how in ("reconcile", "unknown"):
            result = unknown_result(call)
            record = ToolRunRecord(
                call_id=call.call_id, tool=call.tool, outcome="unknown", start=finish.start
            )
            self._store.append_tool_outcome(record, result)
            self._log.append(result)
            return result
        self._store.append_tool_run(ToolRunRecord(call_id=call.call_id, tool=call.tool))
        (result,) = box.run([call])
        return self._answered(result)

    def _answered(self, result: ToolResult) -> ToolResult:
        self._log.append((self._store.append_event(result)).event)
        return result

    def _offer(self, box: Toolbox) -> None:
        """Record the specs a step offers when they differ from the last recorded (see
        `TaskBase._offered_record`)."""
        record = self._offered_record(box)
        if record is not None:
            self._store.append_tools(record)

    def close(self) -> None:
        """Close what the task opened: its router and its file (not those it was given)."""
        if self._owns_router:
            self._router.close()
        _release(self._store, self._owned, self._held)


def _lease(store: TaskStore, owned: bool) -> FileLease | None:
    """Take the task's lease as its one driver (`TaskStore.lease`); `TaskBusy` while
    another holds it (a store the task opened is closed first)."""
    try:
        return store.lease()
    except BaseException:
        if owned:
            store.close()
        raise


def _release(store: TaskStore, owned: bool, lease: FileLease | None) -> None:
    """Close the store if the task opened it, then release the lease."""
    try:
        if owned:
            store.close()
    finally:
        if lease is not None:
            lease.close()


def _begin(store: TaskStore, prompt: str | None) -> None:
    """Finish a batch a crash cut short in the begun task, and write ``prompt`` if the task
    holds no event yet."""
    found = store.read()
    missing = unfinished_batch(found.records)
    if missing:
        store.append_batch(missing)
    if prompt is not None and not found.events:
        store.append_event(UserText(text=prompt))


def _limits(
    max_steps: int, max_cost_usd: Decimal | float | None, max_tokens: int | None
) -> RunLimits:
    cost = None if max_cost_usd is None else Decimal(str(max_cost_usd))
    return RunLimits(max_steps=max_steps, max_cost_usd=cost, max_tokens=max_tokens)
