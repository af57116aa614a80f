"""The async stores await their I/O: the loop runs on while a write waits, and a cancelled
write keeps the task's promises (the two-store tests hold them to the rest, through a
blocking adapter).

A write is made to wait the way production makes it wait: the task file's ``flock`` held
through another descriptor, or the records table locked by another PostgreSQL session.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import psycopg
import pytest

from nisse_llm.errors import TaskBusy
from nisse_llm.events.canonical import UserText
from nisse_llm.task.logstore import AsyncTaskStore
from nisse_llm.task.postgres import AsyncPostgresTaskStore
from nisse_llm.task.records import StoredEvent, StoredHeader
from nisse_llm.testing.postgres import LocalPostgres
from tests.task.helpers import make_pin
from tests.task.stores import Place

#: How long the other holder keeps the store waiting.
HELD_S = 0.6


@contextlib.contextmanager
def _file_held(path: Path) -> Iterator[Callable[[], None]]:
    """The task file's ``flock``, taken through a descriptor of our own (a second
    descriptor conflicts as another process's would); yields its release."""
    fd = os.open(path, os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        yield lambda: fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


@contextlib.contextmanager
def _table_held(server: LocalPostgres) -> Iterator[Callable[[], None]]:
    """The records table locked by another session until the release commits."""
    conn = psycopg.connect(server.url)
    conn.execute("LOCK TABLE nisse.nisse_task_records IN ACCESS EXCLUSIVE MODE")
    try:
        yield conn.commit
    finally:
        conn.close()


@contextlib.contextmanager
def _held(place: Place) -> Iterator[Callable[[], None]]:
    if place.server is None:
        with _file_held(place.path) as release:
            yield release
    else:
        with _table_held(place.server) as release:
            yield release


async def _ticking(stop: asyncio.Event) -> int:
    """How many times a coroutine on the loop got to run until ``stop``."""
    ticks = 0
    while not stop.is_set():
        await asyncio.sleep(0.01)
        ticks += 1
    return ticks


@contextlib.asynccontextmanager
async def _opened(place: Place) -> AsyncIterator[AsyncTaskStore]:
    async with place.open_async() as store:
        await store.begin(make_pin())
        await store.append_event(UserText(text="before"))
        yield store


@pytest.fixture(params=["file", "postgres", "pgbouncer"])
def async_place(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Place]:
    server = request.getfixturevalue("postgres") if request.param != "file" else None
    pool = request.getfixturevalue("pgbouncer") if request.param == "pgbouncer" else None
    found = Place(f"{request.param}-async", tmp_path, server, pool)
    yield found
    found.close()


def test_the_loop_runs_on_while_a_write_waits(async_place: Place) -> None:
    """An append waiting for the file's lock (or the table's) leaves the loop free: a ticker
    keeps running, and the append lands once the other holder lets go."""

    async def main() -> tuple[int, bool, StoredEvent]:
        async with _opened(async_place) as store:
            with _held(async_place) as release:
                released = threading.Event()

                def let_go() -> None:
                    released.set()
                    release()

                # A thread lets go: a blocked loop could not, and would show no ticks.
                timer = threading.Timer(HELD_S, let_go)
                stop = asyncio.Event()
                ticker = asyncio.create_task(_ticking(stop))
                timer.start()
                try:
                    stored = await store.append_event(UserText(text="waited"))
                finally:
                    timer.join()
                landed_after_release = released.is_set()
                stop.set()
                return await ticker, landed_after_release, stored

    ticks, landed_after_release, stored = asyncio.run(main())
    assert landed_after_release
    assert ticks >= 5, f"the loop ran only {ticks} times while the append waited"
    found = async_place.open().read()
    assert found.records[-1] == stored
    assert [r.seq for r in found.records] == [0, 1, 2]


def test_a_cancelled_write_keeps_the_promises(async_place: Place) -> None:
    """An append cancelled while it waits: on the file, the caller is held until the
    worker thread is done and the next write starts only after; either way the record is
    whole or absent, numbers stay without a gap, the other holder can lock again, and the
    store writes on afterwards."""

    async def main() -> tuple[bool, list[int]]:
        async with _opened(async_place) as store:
            with _held(async_place) as release:
                first = asyncio.create_task(store.append_event(UserText(text="cancelled")))
                await asyncio.sleep(0.2)
                first.cancel()
                second = asyncio.create_task(store.append_event(UserText(text="next")))
                await asyncio.sleep(0.2)
                # The file store's cancelled caller waits for its thread, still at the lock.
                held_in_place = not first.done() if async_place.server is None else True
                assert not second.done()
                await asyncio.to_thread(release)
                with pytest.raises(asyncio.CancelledError):
                    await first
                stored = await second
            after = await store.append_event(UserText(text="after"))
            return held_in_place, [stored.seq, after.seq]

    held_in_place, numbers = asyncio.run(main())
    assert held_in_place, "a cancelled append let its caller go while its thread still ran"
    found = async_place.open().read()
    texts = [r.event.text for r in found.events if isinstance(r.event, UserText)]
    assert isinstance(found.records[0], StoredHeader)
    assert [r.seq for r in found.records] == list(range(len(found.records)))
    assert texts in (["before", "next", "after"], ["before", "cancelled", "next", "after"])
    assert numbers == [found.records[-2].seq, found.records[-1].seq]
    if async_place.server is None:
        # The flock the cancelled append took in its thread was released.
        fd = os.open(async_place.path, os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(fd)


def test_a_cancelled_postgres_write_lands_nothing_and_the_store_keeps_its_lease(
    postgres: LocalPostgres, tmp_path: Path
) -> None:
    """A PostgreSQL append cancelled while it waits writes nothing (its one statement is
    cancelled whole); the store keeps the task's lease (another driver gets `TaskBusy`),
    takes it again as its own and writes on with the next number."""
    place = Place("postgres-async", tmp_path, postgres)

    async def main() -> None:
        async with _opened(place) as store:
            with _table_held(postgres) as release:
                pending = asyncio.create_task(store.append_event(UserText(text="cut")))
                await asyncio.sleep(0.2)
                pending.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await pending
                await asyncio.to_thread(release)
            async with AsyncPostgresTaskStore(postgres.url, place.key, holder="other") as other:
                with pytest.raises(TaskBusy):
                    await other.append_event(UserText(text="refused"))
            await store.append_event(UserText(text="resumed"))

    asyncio.run(main())
    found = place.open().read()
    texts = [r.event.text for r in found.events if isinstance(r.event, UserText)]
    assert texts == ["before", "resumed"]
    assert [r.seq for r in found.records] == list(range(len(found.records)))
    place.close()
