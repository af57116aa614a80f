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
from nisse_llm.task._pg import POOL_MAX
from nisse_llm.task.postgres import SCHEMA_VERSION, PostgresTaskStore, close_pools, connect
from nisse_llm.testing.postgres import LocalPostgres
from tests.task.helpers import BASE_URL, TOKEN, make_pin

ROOT = Path(__file__).resolve().parents[2]
#: The holders' lease here (shorter than the default 15 s, so the tests wait less), its
#: heartbeat, and the slack a loaded machine may add before a lease run out is seen.
LEASE_S = 2.0
HEARTBEAT_S = 0.5
SLACK_S = 5.0


def _holder(server: LocalPostgres, key: str, name: str) -> subprocess.Popen[bytes]:
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.task._lease_holder", key, name],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={
            **os.environ,
            "NISSE_TEST_PG_URL": server.url,
            "NISSE_TEST_LEASE_S": str(LEASE_S),
            "NISSE_TEST_HEARTBEAT_S": str(HEARTBEAT_S),
        },
    )
    assert process.stdout is not None
    assert process.stdout.readline() == b"held\n", process.stderr.read() if process.stderr else ""
    return process


def _taken_over(store: PostgresTaskStore) -> float:
    """Resume ``store``'s task as soon as its lease is free: the seconds it took."""
    began = time.monotonic()
    while True:
        try:
            store.resume(TOKEN, base_url=BASE_URL)
            return time.monotonic() - began
        except TaskBusy:
            assert time.monotonic() - began < LEASE_S + SLACK_S
            time.sleep(0.02)


def test_a_second_driver_gets_task_busy_and_takes_over_when_the_holder_dies(
    postgres: LocalPostgres,
) -> None:
    """While a process holds a task (its heartbeat renewing the lease well past the lease's
    length), another's begin, resume and append are refused with `TaskBusy` naming the
    holder and since when, and reading works; once the holder is SIGKILLed its lease runs
    out within the stated bound (the lease's length, plus a loaded machine's slack) and the
    other's records follow the dead holder's."""
    key = "lease-two-processes"
    before = datetime.now(UTC)
    holder = _holder(postgres, key, "worker-a")
    store = PostgresTaskStore(postgres.url, key, holder="worker-b")
    try:
        time.sleep(2 * LEASE_S)  # renewed meanwhile: still held
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

    taken_over_s = _taken_over(store)
    store.append_event(UserText(text="finished by worker-b"))
    assert [r.event for r in store.read().events] == [
        UserText(text="written by worker-a"),
        UserText(text="finished by worker-b"),
    ]
    assert [r.seq for r in store.read().records] == [0, 1, 2]
    store.close()
    print(f"lease taken over {taken_over_s:.3f} s after the holder's SIGKILL (lease {LEASE_S} s)")


def test_a_holder_paused_past_its_lease_cannot_append(postgres: LocalPostgres) -> None:
    """A holder stopped (SIGSTOP) past its lease loses the task to another process; let go
    on (SIGCONT), its append is refused with `TaskBusy` and nothing it tried lands, while
    the new holder's records stand."""
    key = "lease-paused"
    holder = _holder(postgres, key, "worker-a")
    assert holder.stdin is not None
    assert holder.stdout is not None
    store = PostgresTaskStore(postgres.url, key, holder="worker-b")
    try:
        holder.send_signal(signal.SIGSTOP)
        _taken_over(store)
        store.append_event(UserText(text="by worker-b"))
        holder.send_signal(signal.SIGCONT)
        holder.stdin.write(b"append stale write\n")
        holder.stdin.flush()
        assert holder.stdout.readline() == b"TaskBusy\n"
        store.append_event(UserText(text="still worker-b's"))
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.communicate(timeout=30)
    texts = [r.event for r in store.read().events]
    assert texts == [
        UserText(text="written by worker-a"),
        UserText(text="by worker-b"),
        UserText(text="still worker-b's"),
    ]
    assert [r.seq for r in store.read().records] == [0, 1, 2, 3]
    store.close()


KEEPALIVES = ("tcp_keepalives_idle", "tcp_keepalives_interval", "tcp_keepalives_count")
#: The stated bound on a pooled connection to a vanished machine: the server's keepalive
#: idle time, then its probes (`nisse_llm.task.postgres`: "about 25 s").
VANISHED_BOUND_S = 25


def _keepalives(conn: psycopg.Connection[tuple[str]]) -> tuple[int, ...]:
    return tuple(int(conn.execute(f"SHOW {name}").fetchone()[0]) for name in KEEPALIVES)


def test_sessions_ask_the_server_for_tcp_keepalive(postgres: LocalPostgres) -> None:
    """A store's session asks the server for TCP keepalive (10 s idle, 3 probes 5 s
    apart): a pooled connection to a vanished machine is dropped within the stated bound,
    not kept forever; a plain session keeps the server's defaults."""
    with connect(SecretStr(postgres.url)) as conn:
        idle, interval, count = _keepalives(conn)
    with psycopg.connect(postgres.url) as plain:
        defaults = _keepalives(plain)
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
        close_pools()  # the version is checked as each connection is made
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
    # A pooled connection finds the server gone; the pool is then made anew, and refused.
    with pytest.raises(TaskStoreUnavailable, match="server closed the connection"):
        PostgresTaskStore(server.url, "gone").read()
    with pytest.raises(TaskStoreUnavailable, match="Connection refused"):
        PostgresTaskStore(server.url, "gone").read()


def test_open_tasks_share_a_few_pooled_connections(postgres: LocalPostgres) -> None:
    """Fifty tasks held open by one process, each written, use at most the pool's sessions
    (as many as statements ran at once: the writes ran one after another, the heartbeats
    may overlap), not one per task; the leases are rows, so closing the stores frees
    every task at once."""
    url = postgres.database("pooled")
    stores = [PostgresTaskStore(url, f"open-{n}").begin(make_pin()) for n in range(50)]
    for store in stores:
        store.append_event(UserText(text="held open"))
    with psycopg.connect(url, autocommit=True) as admin:
        sessions = admin.execute(
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE datname = current_database() AND application_name = 'nisse_llm task store'"
        ).fetchone()
        held = admin.execute(
            "SELECT count(*) FROM nisse.nisse_tasks WHERE lease_expires > now()"
        ).fetchone()
        assert held == (50,)
        assert sessions is not None
        assert 1 <= sessions[0] <= POOL_MAX
        for store in stores:
            store.close()
        assert admin.execute(
            "SELECT count(*) FROM nisse.nisse_tasks WHERE holder IS NOT NULL"
        ).fetchone() == (0,)
