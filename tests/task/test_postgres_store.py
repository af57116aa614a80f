"""What only the PostgreSQL store has: its lease between processes, its tables, and typed
failures when the database is gone (the promises both stores share are tested on both)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest
from pydantic import SecretStr

from nisse_llm.errors import (
    TaskBusy,
    TaskStoreMisconfigured,
    TaskStoreUnavailable,
    UpstreamUnavailable,
)
from nisse_llm.events.canonical import UserText
from nisse_llm.task.postgres import SCHEMA_VERSION, PostgresTaskStore, connect
from nisse_llm.testing.postgres import LocalPostgres
from tests.task.helpers import BASE_URL, TOKEN, make_pin

ROOT = Path(__file__).resolve().parents[2]
#: The stated bound for a dead holder's lease (its session ends as its socket closes).
LEASE_FREED_S = 10.0


def _holder(server: LocalPostgres, key: str, name: str) -> subprocess.Popen[bytes]:
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.task._lease_holder", key, name],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "NISSE_TEST_PG_URL": server.url},
    )
    assert process.stdout is not None
    assert process.stdout.readline() == b"held\n", process.stderr.read() if process.stderr else ""
    return process


def test_a_second_driver_gets_task_busy_and_takes_over_when_the_holder_dies(
    postgres: LocalPostgres,
) -> None:
    """While a process holds a task, another's begin, resume and append are refused with
    `TaskBusy` naming the holder and since when, and reading works; once the holder is
    SIGKILLed the other resumes within the stated bound and its records follow the dead
    holder's."""
    key = "lease-two-processes"
    before = datetime.now(UTC)
    holder = _holder(postgres, key, "worker-a")
    try:
        store = PostgresTaskStore(postgres.url, key, holder="worker-b")
        for attempt in (
            lambda: store.begin(make_pin()),
            lambda: store.resume(TOKEN, base_url=BASE_URL),
            lambda: store.append_event(UserText(text="interleaved")),
        ):
            with pytest.raises(TaskBusy) as caught:
                attempt()
            assert caught.value.holder == "worker-a"
            assert caught.value.task == key
            assert caught.value.since is not None
            assert before - timedelta(seconds=5) <= caught.value.since <= datetime.now(UTC)
            assert "held by worker-a since" in str(caught.value)
        assert [r.event for r in store.read().events] == [UserText(text="written by worker-a")]
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.communicate(timeout=30)

    killed = time.monotonic()
    while True:
        try:
            task = store.resume(TOKEN, base_url=BASE_URL)
            break
        except TaskBusy:
            assert time.monotonic() - killed < LEASE_FREED_S
            time.sleep(0.02)
    taken_over_s = time.monotonic() - killed
    store.append_event(UserText(text="finished by worker-b"))
    assert task.events == [UserText(text="written by worker-a")]
    assert [r.seq for r in store.read().records] == [0, 1, 2]
    store.close()
    print(f"lease taken over {taken_over_s:.3f} s after the holder's SIGKILL")


#: The stated bound on a vanished driver's lease: the server's keepalive idle time, then
#: its probes (`nisse_llm.task.postgres`: "about 25 s").
VANISHED_BOUND_S = 25
KEEPALIVES = ("tcp_keepalives_idle", "tcp_keepalives_interval", "tcp_keepalives_count")


def test_a_stores_session_has_the_server_probe_a_silent_driver_within_the_stated_bound(
    postgres: LocalPostgres,
) -> None:
    """A store's session (`connect`) has the server probe a silent client after 10 s idle,
    3 probes 5 s apart, so a driver whose machine vanishes loses its lease within 25 s; a
    plain session keeps the server's defaults. (A machine vanishing, with no reset and no
    answer to a probe, cannot be staged on one host without dropping packets.)"""

    def shown(conn: psycopg.Connection[tuple[str]]) -> tuple[int, ...]:
        return tuple(int(conn.execute(f"SHOW {name}").fetchone()[0]) for name in KEEPALIVES)

    with connect(SecretStr(postgres.url)) as conn:
        idle, interval, count = shown(conn)
    with psycopg.connect(postgres.url) as plain:
        defaults = shown(plain)
    assert (idle, interval, count) == (10, 5, 3)
    assert idle + interval * count <= VANISHED_BOUND_S
    assert defaults != (idle, interval, count)


def test_a_closed_store_frees_its_task_at_once(postgres: LocalPostgres) -> None:
    """`close` ends the lease before it returns: the next driver never sees the old one."""
    first = PostgresTaskStore(postgres.url, "lease-closed", holder="first").begin(make_pin())
    for n in range(20):
        second = PostgresTaskStore(postgres.url, "lease-closed", holder=f"driver-{n}")
        first.close()
        second.append_event(UserText(text=str(n)))  # TaskBusy if the lock outlived close
        first = second
    assert [r.event for r in first.read().events] == [UserText(text=str(n)) for n in range(20)]
    first.close()


def test_tables_are_made_on_first_use_with_their_version() -> None:
    """An empty database gets the tables and one version row on first use; a database
    whose tables are a newer version is refused, typed, and left alone."""
    with LocalPostgres() as server:
        with PostgresTaskStore(server.url, "t") as store:
            assert store.read().records == []
            store.begin(make_pin())
        with psycopg.connect(server.url, autocommit=True) as conn:
            assert conn.execute("SELECT version FROM nisse.nisse_schema").fetchall() == [
                (SCHEMA_VERSION,)
            ]
            conn.execute("UPDATE nisse.nisse_schema SET version = %s", (SCHEMA_VERSION + 1,))
        with pytest.raises(TaskStoreUnavailable, match="newer than this nisse_llm writes"):
            PostgresTaskStore(server.url, "t").read()


def test_a_database_that_is_gone_is_a_typed_resumable_error() -> None:
    """A refused connection and a server stopped mid-run (``pg_ctl stop -m immediate``) are
    each `TaskStoreUnavailable` (an `UpstreamUnavailable`), never a psycopg exception; after
    a restart the same store goes on from every acknowledged record; a wrong password is
    `TaskStoreMisconfigured`, which no retry cures."""
    with LocalPostgres() as server:
        store = PostgresTaskStore(server.url, "gone").begin(make_pin())
        acknowledged = [store.append_event(UserText(text=str(n))).seq for n in range(5)]
        server.stop(mode="immediate")
        for _ in range(2):  # mid-session, then a refused reconnect
            with pytest.raises(TaskStoreUnavailable) as caught:
                store.append_event(UserText(text="lost"))
            assert isinstance(caught.value, UpstreamUnavailable)
            assert not isinstance(caught.value.__cause__, psycopg.Error)
        with pytest.raises(TaskStoreUnavailable):
            store.read()
        server.start()
        task = store.resume(TOKEN, base_url=BASE_URL)
        assert [r.seq for r in task.history] == acknowledged
        assert store.append_event(UserText(text="after")).seq == acknowledged[-1] + 1
        store.close()
        wrong = server.url.replace(server.password, "not-the-password")
        with pytest.raises(TaskStoreMisconfigured, match="password authentication failed"):
            PostgresTaskStore(wrong, "gone").read()
    with pytest.raises(TaskStoreUnavailable, match="Connection refused"):
        PostgresTaskStore(server.url, "gone").read()
