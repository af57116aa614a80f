"""The durable agent loop, written once: ``_async/task.py`` is the source, ``_sync/task.py``
is generated from it by ``scripts/gen_sync.py`` (unasync).

``AsyncTask.open(path, pin, prompt=...)`` begins the task or resumes it; ``run`` steps until
the model answers without tool calls. Every step is written before it acts (see
`nisse_llm.agent.plan`, which decides what a resumed task does), so a task killed at any
instant reopens to the log an uninterrupted run would have. Each ``say``, ``step``, ``run``
and ``run_as`` is a call of the task's program, recorded as it starts and ends, so a
program run again from the top replays what it did (`nisse_llm.agent.program`).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterable
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

from nisse_llm import defaults
from nisse_llm._closing import AsyncClosing
from nisse_llm.agent._async import io, opening
from nisse_llm.agent._async.reads import AsyncTaskReads
from nisse_llm.agent._base import (
    AsyncReconcile,
    AsyncStoreArg,
    areconciled,
    checked_router,
    open_async_store,
    router_pin,
    toolbox_of,
)
from nisse_llm.agent.plan import (
    Finish,
    RunCounts,
    RunLimits,
    RunResult,
    Step,
    answer_request,
    asked_for_answer,
    final_text,
    finish_plan,
    fresh_plan,
    is_done,
    native_answer,
    run_limits,
    run_result,
    run_result_record,
    typed_answer,
    unknown_result,
    waiting_step,
)
from nisse_llm.agent.program import (
    Recorded,
    program_of,
    replayed_step,
    resumed_reply,
    run_counts_since,
    step_events,
    step_result,
)
from nisse_llm.events.canonical import (
    CanonicalEvent,
    ToolResult,
    UserImage,
    UserText,
)
from nisse_llm.task.approvals import (
    ApprovalRecord,
    PendingApproval,
    approvals_of,
    decision_record,
    denied_result,
)
from nisse_llm.task.delegation import ParentRecord, child_key, parent_of
from nisse_llm.task.records import (
    ProgramRecord,
    ToolRunRecord,
    pending_calls,
)
from nisse_llm.task.repin import default_by
from nisse_llm.tools import Toolbox
from nisse_llm.transport.routers import AsyncRoleRouter

if TYPE_CHECKING:
    from pydantic import BaseModel

    from nisse_llm.config.options import RequestOptions
    from nisse_llm.config.settings import Pin, Settings
    from nisse_llm.events.images import Image
    from nisse_llm.task.lease import FileLease
    from nisse_llm.task.logstore import AsyncTaskStore
    from nisse_llm.task.records import (
        ResumedTask,
    )
    from nisse_llm.task.summaries import CompactionPolicy

    M = TypeVar("M", bound=BaseModel)

__all__ = ["AsyncTask"]

Tools = Toolbox | Iterable[Callable[..., Any]] | None
R = TypeVar("R")


class AsyncTask(AsyncTaskReads, AsyncClosing):
    """One durable agent task in one task file: open it, say, run; kill it and open again."""

    def __init__(
        self,
        store: AsyncTaskStore,
        pin: Pin,
        router: AsyncRoleRouter,
        resumed: ResumedTask[AsyncTaskStore],
        *,
        pin_changes: tuple[str, ...] = (),
        owned: bool,
        owns_router: bool,
        lease: FileLease | None,
        reconcile: AsyncReconcile | None,
        program: list[Recorded] | None = None,
    ) -> None:
        """A task opened by `open` (which does the opening's I/O): use that."""
        self._router = router
        self._owns_router = owns_router
        #: Whether every tool call of the log is answered (unknown until searched).
        self._settled = False
        #: The calls the last tool runs left awaiting a person's approval.
        self._awaiting: list[PendingApproval] = []
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
            program=program,
            records=resumed.records,
        )

    @classmethod
    @io.opening
    async def open(
        cls,
        store: AsyncStoreArg,
        pin: Pin,
        *,
        router: AsyncRoleRouter | None = None,
        compaction: CompactionPolicy | None = None,
        prompt: str | None = None,
        reconcile: AsyncReconcile | None = None,
        settings: Settings | None = None,
        strict_pin: bool = False,
    ) -> AsyncTask:
        """Begin the task ``pin`` in ``store``, or resume it, as its one driver:
        ``async with AsyncTask.open(...) as task`` (closed on leaving), or
        ``task = await AsyncTask.open(...)`` (then ``await task.aclose()``).

        ``store`` is a task file's path, a store object (`AsyncTaskStore`,
        `AsyncPostgresTaskStore`), or a task key: a string with no path separator and no
        ``.jsonl`` suffix, such as ``"fix-issue-123"``, opened with `open_async_task_store`
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
        calls in the same file; it takes the task's own pin as it begins. A task begun
        before replays its program: its ``say``, ``step``, ``run`` and ``run_as`` calls,
        asked again from the top, meet their records (see `nisse_llm.agent.program`;
        `TaskDiverged` for a program that asks something else). ``reconcile(call)`` (see
        `AsyncReconcile`) is asked for the result of a cut run of a tool that may not run
        again (None: unknown).
        """
        opened, owned = open_async_store(store, settings)
        if router is not None:
            opened = checked_router(router, opened, compaction)
            owned = False
        lease = await opening.take_lease(opened, owned)
        try:
            if router is None:
                found = await opened.open_pin(pin, strict_pin=strict_pin)
            else:
                await router.begin_task()
                found = router_pin(router, pin, strict_pin=strict_pin)
            records = await opening.begin(opened, prompt)
            in_force = found.pin
            resumed = await opened.resume(in_force.token, base_url=in_force.base_url)
            driver = router or AsyncRoleRouter.from_pin(
                in_force, store=opened, compaction=compaction
            )
        except BaseException:
            await opening.release(opened, owned, lease)
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
            program=program_of(records),
        )

    @property
    def router(self) -> AsyncRoleRouter:
        """The router the task's model calls go through."""
        self._check_open("router")
        return self._router

    async def approve(self, call_id: str, *, by: str | None = None) -> None:
        """Approve the call ``call_id`` awaiting approval, ``by`` whom (default:
        ``user@host``): the next run runs it. `ApprovalRefused` (nothing written) for a
        call that awaits no approval or was decided before."""
        self._check_open("approve()")
        await self._decide(call_id, "approved", by, None)

    async def deny(self, call_id: str, reason: str, *, by: str | None = None) -> None:
        """Deny the call ``call_id`` awaiting approval, ``by`` whom: the next run answers it
        with an error result carrying ``reason``. Refused as `approve` is."""
        self._check_open("deny()")
        await self._decide(call_id, "denied", by, reason)

    async def _decide(
        self,
        call_id: str,
        outcome: Literal["approved", "denied"],
        by: str | None,
        reason: str | None,
    ) -> None:
        found = await self._store.read()
        record = decision_record(
            found.records, call_id, outcome, by=by or default_by(), reason=reason
        )
        await self._store.append_approval(record)
        self._settled = False  # the next step finishes the call as decided

    async def say(self, text: str, *, images: Iterable[Image] = ()) -> None:
        """Append a user message (its text, then its images), durably, in one write; a
        ``say`` the task recorded at this point of its program writes nothing again."""
        self._check_open("say()")
        images = list(images)
        asked = ProgramRecord(op="say", text=text, images=len(images), outcome="done")
        if self._enter(asked) is not None:
            return
        events: list[CanonicalEvent] = [UserText(text=text)]
        events += [UserImage(image=image) for image in images]
        written = await self._store.append_batch(events, call=asked)
        self._log += [record.event for record in written]
        self._program.append(Recorded(asked, written[0].seq - 1, self._system))

    async def step(
        self,
        role: str,
        *,
        tools: Tools = None,
        options: RequestOptions | None = None,
        system: str | None = None,
        max_concurrent_tools: int = 1,
    ) -> Step:
        """One model call for ``role`` with the task's log and ``system`` prompt, its reply
        appended before this returns, then each tool call it asked for run and its result
        appended (at most ``max_concurrent_tools`` at once, results in call order).

        Tool calls a cut step left unanswered are answered first (`finish_plan`). A step
        the task recorded done at this point of its program returns what it returned.
        """
        self._check_open("step()")
        box = toolbox_of(tools)
        found = self._enter(ProgramRecord(op="step", role=role))
        if found is not None and found.done is not None:
            return await self._replayed_step(found)
        if found is None:
            found = await self._started(ProgramRecord(op="step", role=role), system)
            step = await self._step(role, box, options, found.system, max_concurrent_tools)
        else:
            step = await self._resumed_step(role, box, options, found, max_concurrent_tools)
        if step.pending_approvals:
            return step  # not done: asked again once they are decided, it goes on
        await self._ended(found, step_result(step))
        return step

    async def _step(
        self,
        role: str,
        box: Toolbox,
        options: RequestOptions | None,
        system: str | None,
        limit: int,
    ) -> Step:
        """The model call of a step and its tool runs (the cut step's calls answered)."""
        finished = await self._finish(box, limit)
        if self._awaiting:
            return waiting_step(finished, self._awaiting)
        await self._offer(box)
        completion = await self._router.completion(role, self._log, box, system, options=options)
        self._log += [record.event for record in await self._store.append_batch(completion.events)]
        self._settled = False
        results = await self._run_tools(
            box, fresh_plan(completion.events, box.needs_approval), limit
        )
        self._settled = not self._awaiting
        return Step(
            completion=completion,
            results=results,
            finished=finished,
            pending_approvals=tuple(self._awaiting),
        )

    async def _resumed_step(
        self,
        role: str,
        box: Toolbox,
        options: RequestOptions | None,
        found: Recorded,
        limit: int,
    ) -> Step:
        """A step a kill cut: its reply's calls answered if the reply was written, else
        its model call made (with the system prompt the cut step sent)."""
        finished = await self._finish(box, limit)
        records = (await self._store.read()).records
        resumed = resumed_reply(records, found.seq)
        if resumed is None:
            step = await self._step(role, box, options, found.system, limit)
            return Step(
                completion=step.completion,
                results=step.results,
                finished=finished,
                pending_approvals=step.pending_approvals,
            )
        completion, results = resumed
        return Step(completion=completion, results=results, pending_approvals=tuple(self._awaiting))

    async def _replayed_step(self, found: Recorded) -> Step:
        """A step the task recorded done, as it returned (read back from the file)."""
        assert found.done is not None
        assert found.done.result is not None
        records = (await self._store.read()).records
        added = step_events(records, found.seq, found.done_seq)
        finished, completion, results = replayed_step(found.done.result, added)
        return Step(completion=completion, results=results, finished=finished)

    async def run(
        self,
        role: str,
        *,
        tools: Tools,
        max_steps: int = defaults.RUN_MAX_STEPS,
        max_cost_usd: Decimal | float | None = None,
        max_tokens: int | None = None,
        options: RequestOptions | None = None,
        system: str | None = None,
        max_concurrent_tools: int = 1,
    ) -> RunResult[str]:
        """Step until the model answers without tool calls; its answer is the result.
        ``system`` is the run's system prompt; a reply's tool calls run at most
        ``max_concurrent_tools`` at once.

        A run the task recorded done at this point of its program returns its recorded
        result without calling the model; one a kill cut goes on (its limits count what it
        spent before). A log the model already answered is not asked again. Before each
        model call the run's limits are checked: `RunLimitReached` names the one reached,
        and the task stays resumable. Other errors are `complete`'s.
        """
        self._check_open("run()")
        limits = run_limits(max_steps, max_cost_usd, max_tokens)
        asked = ProgramRecord(op="run", role=role)
        found = self._enter(asked)
        if found is not None and found.done is not None:
            assert found.done.result is not None
            return run_result(found.done.result, None)
        found, counts = await self._run_begun(found, asked, system)
        with self._agent_span(role) as span:
            try:
                await self._steps(
                    role, toolbox_of(tools), limits, counts, options, found.system,
                    max_concurrent_tools,
                )  # fmt: skip
            finally:
                span.ended(counts.steps, counts.usage)
        result = counts.result(self._log, final_text(self._log), self._awaiting)
        if not result.pending_approvals:  # else not done: run again once they are decided
            await self._ended(found, run_result_record(result, None))
        return result

    async def run_as(
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
        system: str | None = None,
        max_concurrent_tools: int = 1,
    ) -> RunResult[M]:
        """`run` for an answer of ``output_type``: the result's ``output`` is the answer.

        Where ``role``'s model and route take a native structured output, every step asks
        for it beside the tools, and the reply that calls no tool is the answer: one call
        (a reply that does not validate is told why, in the log, ``repair_attempts``
        times). Elsewhere the run ends as `run` does, then a user message asking for the
        answer is appended and ``complete_as`` answers through its answer tool.

        A `run_as` the task recorded done at this point of its program returns its
        validated answer from the file, without calling the model."""
        self._check_open("run_as()")
        limits = run_limits(max_steps, max_cost_usd, max_tokens)
        asked = ProgramRecord(op="run_as", role=role, output_type=output_type.__name__)
        found = self._enter(asked)
        if found is not None and found.done is not None:
            assert found.done.result is not None
            return run_result(found.done.result, output_type)
        box = toolbox_of(tools)
        # A finished answer at the log's end is this call's when it was cut before its done
        # record, or a file's from before program records.
        answered = found is not None or not self._program
        found, counts = await self._run_begun(found, asked, system)
        with self._agent_span(role) as span:
            try:
                value = await self._answer(
                    role, output_type, box, limits, counts, options, repair_attempts,
                    found.system, max_concurrent_tools, answered=answered,
                )  # fmt: skip
            finally:
                span.ended(counts.steps, counts.usage)
        if value is None:  # stopped on calls awaiting approval: not done, no answer yet
            return counts.result(self._log, cast("M", None), self._awaiting)
        result = counts.result(self._log, value)
        await self._ended(found, run_result_record(result, value))
        return result

    async def _answer(
        self,
        role: str,
        output_type: type[M],
        box: Toolbox,
        limits: RunLimits,
        counts: RunCounts,
        options: RequestOptions | None,
        repair_attempts: int,
        system: str | None,
        limit: int,
        *,
        answered: bool,
    ) -> M | None:
        """The typed answer of a `run_as`: in the steps' replies where the route takes a
        native format, else by a call of its own after the steps (``answered``: an answer
        the log ends with is this run's); None while calls await approval."""
        taken = [spec.name for spec in box.specs]
        found = typed_answer(self._log, output_type) if answered else None
        if found is not None:
            return found
        native = self._router.answer_options(role, output_type, options, taken)
        if native is not None:
            attempts = 0
            if is_done(self._log) and not asked_for_answer(self._log, output_type):
                await self._said(answer_request(output_type, native=True))
            while True:
                await self._steps(role, box, limits, counts, native, system, limit)
                if self._awaiting:
                    return None
                value = native_answer(self._log, output_type, attempts, repair_attempts)
                if not isinstance(value, str):
                    return value
                attempts += 1
                await self._said(value)
        if not asked_for_answer(self._log, output_type):
            await self._steps(role, box, limits, counts, options, system, limit)
            if self._awaiting:
                return None
            counts.check(limits)
            await self._said(answer_request(output_type, native=False))
        await self._offer(box)  # a run that made no step still records what it offers
        typed = await self._router.complete_as(
            output_type,
            role,
            self._log,
            box,
            system,
            options=options,
            repair_attempts=repair_attempts,
        )
        self._log += [r.event for r in await self._store.append_batch(typed.events)]
        counts.add(typed.usage, *typed.calls)
        return typed.value

    async def delegate(
        self,
        role: str,
        prompt: str,
        *,
        tools: Tools,
        system: str | None = None,
        max_steps: int = defaults.RUN_MAX_STEPS,
        max_cost_usd: Decimal | float | None = None,
    ) -> RunResult[str]:
        """Run ``prompt`` as a sub-task for ``role``: a child task in this task's store under
        a key derived from this one's (``fix.1-delegate``), its key recorded here first, its
        parent recorded there; its ``run`` result is returned (and recorded here, so a
        replay returns it). Reopened and replayed, a ``delegate`` done returns the child's
        recorded result; one not done opens the same child, whose program replays in turn,
        so no child call is made twice and no child begun twice. Errors are the child's
        `run`'s (an `UpstreamUnavailable`: a budget, the network): the child keeps its
        branch, and this task reopened later resumes it."""
        self._check_open("delegate()")
        asked = ProgramRecord(op="delegate", role=role, text=prompt)
        found = self._enter(asked)
        if found is not None and found.done is not None:
            assert found.done.result is not None
            return run_result(found.done.result, None)
        parent = self._store
        if found is None:
            # Numbered by the call's place in the program (1 first), known before any await:
            # two delegations started at once (a reply's concurrent tool calls) differ.
            key = child_key(parent.task_key, self._position, role)
            found = await self._started(asked.model_copy(update={"child": key}), self._system)
        assert found.asked.child is not None
        async with (
            parent.sibling(found.asked.child) as store,  # closed with the child: its lease too
            self._router.for_store(store) as router,
            AsyncTask.open(store, self._pin, router=router) as child,
        ):
            if parent_of((await store.read()).records) is None:
                await store.append_parent(ParentRecord(key=parent.task_key, role=role))
            await child.say(prompt)
            result = await child.run(
                role, tools=tools, system=system, max_steps=max_steps, max_cost_usd=max_cost_usd
            )
        if not result.pending_approvals:
            await self._ended(found, run_result_record(result, None))
        return result

    async def _said(self, text: str) -> None:
        """Append a user message the loop itself adds (not a call of the program)."""
        self._log.append((await self._store.append_event(UserText(text=text))).event)

    async def _run_begun(
        self, found: Recorded | None, asked: ProgramRecord, system: str | None
    ) -> tuple[Recorded, RunCounts]:
        """A run's program call, recorded as started if new, and its counts so far (what a
        cut run spent before the kill)."""
        if found is None:
            return await self._started(asked, system), RunCounts()
        records = (await self._store.read()).records
        steps, usage, cost = run_counts_since(records, found.seq)
        return found, RunCounts(steps=steps, usage=usage, cost_usd=cost)

    async def _started(self, asked: ProgramRecord, system: str | None) -> Recorded:
        """Record a new call of the program as started, with its system prompt if it
        changed."""
        change = self._system_change(system)
        record = asked.model_copy(update={"system": change})
        stored = await self._store.append_program(record)
        self._system = system or None
        found = Recorded(record, stored.seq, self._system)
        self._program.append(found)
        return found

    async def _ended(self, found: Recorded, result: dict[str, Any]) -> None:
        """Record a call of the program as done, with what it returned."""
        record = ProgramRecord(op=found.asked.op, outcome="done", start=found.seq, result=result)
        stored = await self._store.append_program(record)
        at = self._program.index(found)
        self._program[at] = found.finished(record, stored.seq)

    async def _steps(
        self,
        role: str,
        box: Toolbox,
        limits: RunLimits,
        counts: RunCounts,
        options: RequestOptions | None,
        system: str | None,
        limit: int,
    ) -> None:
        if is_done(self._log):
            return
        while True:
            await self._finish(box, limit)
            if self._awaiting:
                return
            counts.check(limits)
            step = await self._step(role, box, options, system, limit)
            counts.add(step.completion.usage, step.completion.call)
            if not step.more or step.pending_approvals:
                return

    async def _finish(self, box: Toolbox, limit: int = 1) -> list[ToolResult]:
        """Answer the tool calls a cut step left unanswered (the log is searched for them
        only after an opening or a cut step, the file's tool-run records read only when
        there are some)."""
        if self._settled:
            return []
        self._awaiting = []
        if pending_calls(self._log):
            found = await self._store.read()
            approvals = approvals_of(found.records)
            plan = finish_plan(
                self._log, found.tool_runs, box.is_repeatable, approvals, box.needs_approval
            )
            finished = await self._run_tools(box, plan, limit)
        else:
            finished = []
        self._settled = not self._awaiting
        return finished

    async def _run_tools(self, box: Toolbox, plan: list[Finish], limit: int) -> list[ToolResult]:
        """Answer each of ``plan``'s calls, at most ``limit`` at once: each start written
        before its tool runs, the results appended in call order as they come."""
        if limit < 1:
            raise ValueError(f"max_concurrent_tools must be at least 1, got {limit}")
        results = []
        self._awaiting = []
        runs = [functools.partial(self._run_tool, box, finish) for finish in plan]
        async for result in io.ordered(runs, limit):
            if isinstance(result, PendingApproval):
                self._awaiting.append(result)
            else:
                results.append(await self._answered(result))
        return results

    async def _run_tool(
        self, box: Toolbox, finish: Finish
    ) -> ToolResult | _GivenUp | PendingApproval:
        """Answer one tool call as ``finish`` says: its start written before it runs, its
        result returned for the caller to append in call order (a call awaiting approval:
        its pending record written if it was not, and it returned unanswered)."""
        call = finish.call
        if finish.how == "await":
            if finish.approval is None:
                pending = ApprovalRecord(
                    call_id=call.call_id, tool=call.tool, arguments=call.arguments
                )
                stored = await self._store.append_approval(pending)
                finish = dataclasses.replace(finish, approval=stored)
            return finish.waiting()
        if finish.how == "deny":
            assert finish.approval is not None
            return denied_result(call, finish.approval.approval)
        if finish.how == "reconcile" and self._reconcile is not None:
            found = await areconciled(self._reconcile, call)
            if found is not None:
                return found.model_copy(update={"call_id": call.call_id})
        if finish.how in ("reconcile", "unknown"):
            record = ToolRunRecord(
                call_id=call.call_id, tool=call.tool, outcome="unknown", start=finish.start
            )
            return _GivenUp(record, unknown_result(call))
        await self._store.append_tool_run(ToolRunRecord(call_id=call.call_id, tool=call.tool))
        (result,) = await box.arun([call])
        return result

    async def _answered(self, result: ToolResult | _GivenUp) -> ToolResult:
        """Append a tool's result to the log and the file (a run given up as unknown with
        its record, in the same write)."""
        if isinstance(result, _GivenUp):
            await self._store.append_tool_outcome(result.record, result.result)
            self._log.append(result.result)
            return result.result
        self._log.append((await self._store.append_event(result)).event)
        return result

    async def _offer(self, box: Toolbox) -> None:
        """Record the specs a step offers when they differ from the last recorded (see
        `TaskBase._offered_record`)."""
        record = self._offered_record(box)
        if record is not None:
            await self._store.append_tools(record)

    async def aclose(self) -> None:
        """Close what the task opened: its router and its file (not those it was given);
        every method of a closed task raises `TaskClosed` (closing again does nothing)."""
        if not self._closing():
            return
        if self._owns_router:
            await self._router.aclose()
        await opening.release(self._store, self._owned, self._held)


class _GivenUp:
    """The result standing for a tool run given up as unknown, and the record saying so."""

    __slots__ = ("record", "result")

    def __init__(self, record: ToolRunRecord, result: ToolResult) -> None:
        self.record = record
        self.result = result
