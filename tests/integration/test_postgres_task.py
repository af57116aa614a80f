"""A task in PostgreSQL through the real proxy: one driver at a time, the database stopped
mid-call (``pg_ctl stop -m immediate``) and the task resumed after its restart, with the
database password in no output, log line, span, record or error of the whole run."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from typing import TypeVar

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import nisse_llm
from nisse_llm.config.settings import load_settings
from nisse_llm.errors import TaskBusy, TaskStoreUnavailable, UpstreamUnavailable
from nisse_llm.events.canonical import AssistantText, CanonicalEvent, ToolCall, ToolResult, UserText
from nisse_llm.task.postgres import PostgresTaskStore
from nisse_llm.testing import Script, Tokens, ToolUse, reply, slow
from nisse_llm.testing.postgres import LocalPostgres
from nisse_llm.testing.proxy import LiteLLMProxy
from nisse_llm.transport.routers import RoleRouter
from tests.corpus import READ_FILE

T = TypeVar("T")

pytestmark = pytest.mark.proxy

PASSWORD = "pg-Secret-4b9e-Zz"
ROLES = {
    "planner": "claude-scripted",
    "executor": "gpt-scripted",
    "delegate": "claude-alt",
    "consultant": "gpt-down",
}


@pytest.fixture
def database() -> Iterator[LocalPostgres]:
    """A server of the test's own, with a password the test looks for everywhere."""
    with LocalPostgres(password=PASSWORD) as server:
        yield server


#: A lease its holder could not release (the database was down) runs out within the
#: default lease, 15 s, after its last renewal; the slack is a loaded machine's.
LEASE_FREED_S = 15.0 + 10.0


def _when_free(attempt: Callable[[], T]) -> T:
    """``attempt()`` once the task's lease is free: retried while it is `TaskBusy`."""
    deadline = time.monotonic() + LEASE_FREED_S
    while True:
        try:
            return attempt()
        except TaskBusy:
            assert time.monotonic() < deadline
            time.sleep(0.1)


def test_an_agent_keeps_its_task_through_a_database_crash(
    proxy: LiteLLMProxy,
    script: Script,
    database: LocalPostgres,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    """A second driver of the running task gets `TaskBusy`; the database stopped while a
    reply is on its way makes that call a `TaskStoreUnavailable` (resumable: the work is
    kept); after the restart a new driver resumes (once the first driver's lease, which it
    could not release, has run out) with every acknowledged record, the
    interrupted call listed as unknown, and finishes; the password shows up nowhere."""
    caplog.set_level(logging.DEBUG)  # every logger: psycopg's, httpx's and ours
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    nisse_llm.instrument(provider)
    errors: list[BaseException] = []
    pin = load_settings(
        None, llm={"base_url": proxy.base_url, "token": proxy.token}, roles=ROLES
    ).pin()
    script.chat(
        reply(ToolUse("read_file", {"path": "a.py"}), usage=Tokens(100, 7)),
        slow(reply("done, first try", usage=Tokens(200, 9)), 1.5),
        reply("done", usage=Tokens(300, 11)),
    )
    try:
        store = PostgresTaskStore(database.url, "fix-issue-123", holder="worker-1")
        log: list[CanonicalEvent] = [UserText(text="Fix a.py.")]
        with RoleRouter.from_pin(pin, store=store) as llm:
            store.append_events(log)
            turn = llm.complete("executor", log, [READ_FILE])
            store.append_events(turn)
            log += turn
            call = log[-1]
            assert isinstance(call, ToolCall)
            result = ToolResult(call_id=call.call_id, output="print('a')")
            store.append_event(result)
            log.append(result)

            second = PostgresTaskStore(database.url, "fix-issue-123", holder="worker-2")
            with pytest.raises(TaskBusy) as busy:
                RoleRouter.from_pin(pin, store=second)
            assert (busy.value.holder, busy.value.task) == ("worker-1", "fix-issue-123")
            errors.append(busy.value)
            second.close()

            stopper = threading.Timer(0.5, database.stop, kwargs={"mode": "immediate"})
            stopper.start()
            with pytest.raises(TaskStoreUnavailable) as gone:
                llm.complete("executor", log, [READ_FILE])
            stopper.join()
            assert isinstance(gone.value, UpstreamUnavailable)
            errors.append(gone.value)
        store.close()

        database.start()
        resumed_store = PostgresTaskStore(database.url, "fix-issue-123", holder="worker-2")
        task = _when_free(lambda: resumed_store.resume(proxy.token, base_url=proxy.base_url))
        assert task.events == log
        assert [c.llm_call.outcome for c in task.unknown_calls] == ["started"]
        with RoleRouter.from_pin(task.pin, store=resumed_store) as llm:
            final = llm.complete("executor", task.events, [READ_FILE])
        resumed_store.append_events(final)
        assert final == [AssistantText(text="done", model="gpt-scripted")]
        found = resumed_store.read()
        assert [r.seq for r in found.records] == list(range(len(found.records)))
        assert found.usage.total.calls == 2
        assert found.usage.total.unknown_calls == 1
        lines = resumed_store.export_lines()
        resumed_store.close()
    finally:
        nisse_llm.uninstrument()
        provider.shutdown()

    out, err = capfd.readouterr()
    spans = [span.to_json() for span in exporter.get_finished_spans()]
    assert spans
    shown = [
        out,
        err,
        caplog.text,
        *spans,
        *(line.decode() for line in lines),
        *(f"{e!s} {e!r} {''.join(traceback.format_exception(e))}" for e in errors),
    ]
    leaks = [text for text in shown if PASSWORD in text]
    assert leaks == []


def test_an_async_task_keeps_its_task_through_a_database_crash(
    proxy: LiteLLMProxy,
    script: Script,
    database: LocalPostgres,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    """The same through `AsyncTask` on the async store, opened by key from the
    ``task_store`` setting: the database stopped while a reply is on its way makes the run
    a `TaskStoreUnavailable` (resumable: the work is kept), a second driver meanwhile gets
    `TaskBusy`; after the restart the task is opened again, its tool run and the cut call's
    start kept, and finishes; the password shows up nowhere."""
    caplog.set_level(logging.DEBUG)
    settings = load_settings(
        None,
        llm={"base_url": proxy.base_url, "token": proxy.token},
        roles=ROLES,
        task_store=database.url,
    )
    pin = settings.pin()
    script.chat(
        reply(ToolUse("read_file", {"path": "a.py"}), usage=Tokens(100, 7)),
        slow(reply("done, first try", usage=Tokens(200, 9)), 3.0),
        reply("done", usage=Tokens(300, 11)),
    )
    reads: list[str] = []
    stoppers: list[threading.Timer] = []

    def read_file(path: str) -> str:
        """Read a file (the first time, the database is stopped during the next call)."""
        reads.append(path)
        if len(reads) == 1:
            stoppers.append(threading.Timer(0.5, database.stop, kwargs={"mode": "immediate"}))
            stoppers[-1].start()
        return "print('a')"

    tools = nisse_llm.Toolbox([read_file], repeatable={"read_file"})
    errors: list[BaseException] = []

    async def first_driver() -> None:
        async with nisse_llm.AsyncTask.open(
            "fix-async", pin, prompt="Fix a.py.", settings=settings
        ) as task:
            with pytest.raises(TaskBusy) as busy:
                await nisse_llm.AsyncTask.open("fix-async", pin, settings=settings)
            errors.append(busy.value)
            try:
                with pytest.raises(TaskStoreUnavailable) as gone:
                    await task.run("executor", tools=tools, max_steps=5)
            finally:
                for stopper in stoppers:
                    stopper.join()
            assert isinstance(gone.value, UpstreamUnavailable)
            errors.append(gone.value)

    async def opened() -> nisse_llm.AsyncTask:
        # The crashed driver could not release its lease: it runs out, then is taken.
        deadline = time.monotonic() + LEASE_FREED_S
        while True:
            try:
                return await nisse_llm.AsyncTask.open("fix-async", pin, settings=settings)
            except TaskBusy:
                assert time.monotonic() < deadline
                await asyncio.sleep(0.1)

    async def second_driver() -> tuple[str, int, int, list[bytes]]:
        async with await opened() as task:
            unknown = len(await task.unknown_calls)
            result = await task.run("executor", tools=tools, max_steps=5)
            history = await task.history
        store = nisse_llm.AsyncPostgresTaskStore(database.url, "fix-async")
        async with store:
            lines = await store.export_lines()
        return result.text, unknown, len(history), lines

    asyncio.run(first_driver())
    database.start()
    text, unknown, events, lines = asyncio.run(second_driver())

    assert text == "done"
    assert reads == ["a.py"]  # the tool's result was kept: it did not run again
    assert unknown == 1  # the call cut by the crash: started, never ended
    assert events == 4  # the prompt, the tool call, its result, the answer
    out, err = capfd.readouterr()
    shown = [
        out,
        err,
        caplog.text,
        *(line.decode() for line in lines),
        *(f"{e!s} {e!r} {''.join(traceback.format_exception(e))}" for e in errors),
    ]
    assert [text for text in shown if PASSWORD in text] == []
