"""`AsyncTask` and `AsyncRoleRouter` await their store: a task file or PostgreSQL.

While a store write waits (the task file's ``flock`` held by another writer, the records
table locked by another database session) the event loop keeps running, through an
`AsyncTask` step and through a router call's start record, and the upstream gets no
request until that start record is written. A sync store object given to either is a
`TypeError` naming the async class.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from nisse_llm import (
    AsyncFileTaskStore,
    AsyncPostgresTaskStore,
    AsyncTask,
    AsyncTaskStore,
    FileTaskStore,
    UserText,
)
from nisse_llm.testing import Script, ScriptedTransport, ToolUse, reply
from nisse_llm.testing.postgres import LocalPostgres
from nisse_llm.testing.router import AsyncScriptedRouter
from nisse_llm.transport.routers import AsyncRoleRouter
from tests.agent.helpers import QUESTION, SideEffects, numbered, two_steps
from tests.agent.test_task import _box
from tests.task._held import Held, Ticker, records_table_lock, task_file_flock
from tests.task.helpers import make_pin

KINDS = ("file", "postgres")
_keys = itertools.count()


class Where:
    """One task's place for the async stores, and how to hold its writes up from outside."""

    def __init__(self, kind: str, tmp_path: Path, server: LocalPostgres | None) -> None:
        self.kind = kind
        self.path = tmp_path / "task.jsonl"
        self.server = server
        self.key = f"async-{next(_keys)}-{tmp_path.name}"

    def store(self) -> AsyncTaskStore:
        if self.server is None:
            return AsyncFileTaskStore(self.path)
        return AsyncPostgresTaskStore(self.server.url, self.key)

    def held(self) -> Held:
        """The store's writes held up: the file's ``flock``, or the records table locked."""
        if self.server is None:
            return task_file_flock(self.path)
        return records_table_lock(self.server.url)


@pytest.fixture(params=KINDS)
def where(request: pytest.FixtureRequest, tmp_path: Path) -> Where:
    server = request.getfixturevalue("postgres") if request.param == "postgres" else None
    return Where(request.param, tmp_path, server)


@asynccontextmanager
async def _held_while(
    where: Where, started: Callable[[], object]
) -> AsyncIterator[tuple[asyncio.Task[object], Ticker]]:
    """Hold the store's writes, start ``started()`` as a task, and let the ticker turn 50
    times while it waits; then let go and finish it."""
    async with Ticker() as ticker, where.held() as held:
        running: asyncio.Task[object] = asyncio.create_task(started())  # type: ignore[arg-type]
        await asyncio.wait_for(ticker.turns(50), 60)
        yield running, ticker
        held.release()
        await running
    assert not held.gave_up, "the loop stood still while the store waited"


async def test_an_async_task_runs_to_the_end_on_either_store(where: Where) -> None:
    """An `AsyncTask` over the async store (a file, or the real PostgreSQL server) runs a
    two-tool task to its end, each tool once, and reopened is done with the same log."""
    tools = SideEffects(where.path.parent / "effects.jsonl")
    store = where.store()
    llm = AsyncScriptedRouter({"executor": two_steps()}, store=store)
    async with llm, AsyncTask.open(store, llm.pin, router=llm, prompt=QUESTION) as task:
        result = await task.run("executor", tools=_box(tools))
        history = await task.history
        usage = await task.usage
    await store.aclose()  # a database store holds the task's lease until closed
    assert result.text == "Fixed it."
    assert usage.total.calls == 3
    assert [r["tool"] for r in tools.runs()] == ["read_file", "write_file"]
    again = where.store()
    idle = AsyncScriptedRouter({"executor": []}, store=again)
    async with idle, AsyncTask.open(again, idle.pin, router=idle) as reopened:
        assert reopened.done
        assert numbered(await reopened.history) == numbered(history)
        assert await reopened.unknown_calls == []
    await again.aclose()


async def test_the_loop_runs_while_a_step_waits_on_its_store(where: Where) -> None:
    """A step whose first write waits (another writer's lock) leaves the loop running: the
    ticker turns, the step has not returned, the model has no request; let go, the step
    ends with its records written."""
    store = where.store()
    llm = AsyncScriptedRouter(
        {"executor": [reply("Reading.", ToolUse("read_file", {"path": "a.py"}))]}, store=store
    )
    tools = SideEffects(where.path.parent / "effects.jsonl")
    async with llm, AsyncTask.open(store, llm.pin, router=llm, prompt=QUESTION) as task:
        async with _held_while(where, lambda: task.step("executor", tools=_box(tools))) as (
            step,
            _,
        ):
            assert not step.done()
            assert llm.script.requests == []
            assert tools.runs() == []
        assert [r["tool"] for r in tools.runs()] == ["read_file"]
        assert (await task.usage).total.calls == 1
    await store.aclose()


async def test_the_loop_runs_while_a_start_record_waits(where: Where) -> None:
    """A router call whose start record waits on the store leaves the loop running and
    sends nothing until the record is written; then it is sent, ends, and is recorded."""
    store = where.store()
    script = Script().chat(reply("done"))
    pin = make_pin()
    async with AsyncRoleRouter.from_pin(
        pin, store=store, transport=ScriptedTransport(script)
    ) as llm:
        await llm.begin_task()
        say = [UserText(text="go")]
        async with _held_while(where, lambda: llm.complete("executor", say, None)) as (call, _):
            assert not call.done()
            assert script.requests == []
        assert len(script.requests) == 1
        found = await store.read()
        assert [c.llm_call.outcome for c in found.calls] == ["ok"]
        assert found.calls[0].llm_call.start == found.starts[0].seq
    await store.aclose()


async def test_a_sync_store_object_is_refused_by_the_async_task_and_router(
    tmp_path: Path,
) -> None:
    """A `TaskStore` given to `AsyncTask.open`, `AsyncRoleRouter.from_pin` or an async
    scripted router is a `TypeError` naming its async twin; nothing is written."""
    path = tmp_path / "task.jsonl"
    sync = FileTaskStore(path)
    with pytest.raises(TypeError, match=r"AsyncFileTaskStore\(\.\.\.\)"):
        AsyncRoleRouter.from_pin(make_pin(), store=sync)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"AsyncFileTaskStore\(\.\.\.\)"):
        AsyncScriptedRouter({"executor": ["Done."]}, store=sync)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"AsyncFileTaskStore\(\.\.\.\)"):
        await AsyncTask.open(sync, make_pin())  # type: ignore[arg-type]
    assert not path.exists()


async def test_a_path_gives_the_async_router_its_own_async_store(tmp_path: Path) -> None:
    """``store=path`` opens an `AsyncTaskStore` there, closed with the router."""
    path = tmp_path / "task.jsonl"
    script = Script().chat(reply("done"))
    async with AsyncRoleRouter.from_pin(
        make_pin(), store=path, transport=ScriptedTransport(script)
    ) as llm:
        assert isinstance(llm.store, AsyncTaskStore)
        await llm.complete("executor", [UserText(text="go")], None)
    assert [c.llm_call.outcome for c in FileTaskStore(path).read().calls] == ["ok"]
