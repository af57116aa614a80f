"""The task tables as files and a command: ``nisse-llm task migrate`` makes them in their own
schema or upgrades a database made by the previous layout (tables in ``public``), saying
what it did; a store never upgrades by itself; each session has statement and lock
timeouts."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from decimal import Decimal
from pathlib import Path

import psycopg
import pytest
from pydantic import SecretStr

from nisse_llm.errors import TaskStoreMisconfigured, TaskStoreUnavailable
from nisse_llm.events.canonical import AssistantText, UserText
from nisse_llm.task.logstore import FileTaskStore
from nisse_llm.task.postgres import PostgresTaskStore, connect, migrate_database
from nisse_llm.testing.postgres import LocalPostgres
from tests.task.helpers import call_record, make_pin

ROOT = Path(__file__).resolve().parents[2]
#: The previous layout (version 1) as its stores made it at run time, in ``public``.
PREVIOUS_LAYOUT = (
    "CREATE TABLE nisse_schema (version integer NOT NULL)",
    "CREATE TABLE nisse_task_records ("
    " task text NOT NULL, seq bigint NOT NULL CHECK (seq >= 0), record text NOT NULL,"
    " PRIMARY KEY (task, seq))",
    "CREATE TABLE nisse_task_leases ("
    " task text PRIMARY KEY, holder text NOT NULL, since timestamptz NOT NULL, pid integer)",
    "INSERT INTO nisse_schema (version) VALUES (1)",
)


def _migrate(url: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("NISSE_")}
    return subprocess.run(
        [sys.executable, "-m", "nisse_llm", "task", "migrate"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**base, "NISSE_TASK_STORE": url},
        check=False,
        timeout=120,
    )


def test_migrate_upgrades_a_database_made_by_the_previous_layout(
    postgres: LocalPostgres, tmp_path: Path
) -> None:
    """A task written under the previous layout is refused by a store until ``task
    migrate`` moves the tables into ``nisse`` (saying so); then it reads back whole and
    takes appends, and a second migrate has nothing to do."""
    database = postgres.database(f"old_{tmp_path.name}".lower()[:40])
    lines = FileTaskStore(tmp_path / "t.jsonl").begin(make_pin())
    lines.append_event(UserText(text="written before the upgrade"))
    with psycopg.connect(database, autocommit=True) as admin:
        for statement in PREVIOUS_LAYOUT:
            admin.execute(statement)
        for seq, line in enumerate(lines.export_lines()):
            admin.execute(
                "INSERT INTO nisse_task_records (task, seq, record) VALUES ('old', %s, %s)",
                (seq, line.decode()),
            )
    lines.close()
    with pytest.raises(TaskStoreMisconfigured, match=r"older layout \(version 1\).*task migrate"):
        PostgresTaskStore(database, "old").read()

    done = _migrate(database)
    assert done.returncode == 0, done.stderr
    assert "applied 0002_own_schema.sql: version 1 -> 2" in done.stdout
    assert "applied 0003_tasks_table.sql: version 2 -> 3" in done.stdout
    with PostgresTaskStore(database, "old") as store:
        found = store.read()
        assert [r.event for r in found.events] == [UserText(text="written before the upgrade")]
        store.append_event(UserText(text="after"))
    with psycopg.connect(database, autocommit=True) as admin:
        assert admin.execute("SELECT to_regclass('public.nisse_task_records')").fetchone() == (
            None,
        )
        assert admin.execute("SELECT count(*) FROM nisse.nisse_task_records").fetchone() == (3,)
    again = _migrate(database)
    assert again.returncode == 0, again.stderr
    assert "up to date (version 3); nothing done" in again.stdout


#: Version 2's layout: the tables in ``nisse``, leases in a table of their own.
VERSION_2 = (
    "CREATE SCHEMA nisse",
    "CREATE TABLE nisse.nisse_schema (version integer NOT NULL)",
    "CREATE TABLE nisse.nisse_task_records ("
    " task text NOT NULL, seq bigint NOT NULL CHECK (seq >= 0), record text NOT NULL,"
    " PRIMARY KEY (task, seq))",
    "CREATE TABLE nisse.nisse_task_leases ("
    " task text PRIMARY KEY, holder text NOT NULL, since timestamptz NOT NULL, pid integer)",
    "INSERT INTO nisse.nisse_schema (version) VALUES (2)",
)


def test_migrate_gives_a_version_2_database_its_tasks_rows(
    postgres: LocalPostgres, tmp_path: Path
) -> None:
    """A version-2 database is refused until ``task migrate`` applies 0003, which makes a
    row per task from its records (next number, status, calls, cost) and drops the lease
    table; the task then takes appends numbered after its records."""
    database = postgres.database(f"v2_{tmp_path.name}".lower()[:40])
    lines = FileTaskStore(tmp_path / "t.jsonl").begin(make_pin())
    lines.append_call(call_record(4))
    lines.append_event(AssistantText(text="finished", model="m"))
    with psycopg.connect(database, autocommit=True) as admin:
        for statement in VERSION_2:
            admin.execute(statement)
        for seq, line in enumerate(lines.export_lines()):
            admin.execute(
                "INSERT INTO nisse.nisse_task_records (task, seq, record) VALUES ('v2', %s, %s)",
                (seq, line.decode()),
            )
    lines.close()
    with pytest.raises(TaskStoreMisconfigured, match=r"older layout \(version 2\)"):
        PostgresTaskStore(database, "v2").read()

    done = _migrate(database)
    assert done.returncode == 0, done.stderr
    assert "applied 0003_tasks_table.sql: version 2 -> 3" in done.stdout
    with psycopg.connect(database, autocommit=True) as admin:
        row = admin.execute(
            "SELECT records, status, calls, cost_usd, holder FROM nisse.nisse_tasks"
        ).fetchall()
        assert row == [(3, "done", 1, Decimal("0.000005"), None)]
        assert admin.execute("SELECT to_regclass('nisse.nisse_task_leases')").fetchone() == (None,)
    with PostgresTaskStore(database, "v2") as store:
        assert store.append_event(UserText(text="after")).seq == 3
    with psycopg.connect(database, autocommit=True) as admin:
        assert admin.execute("SELECT records, status FROM nisse.nisse_tasks").fetchall() == [
            (4, "ready")
        ]


def test_migrate_makes_the_tables_in_a_schema_of_the_stores_choice(
    postgres: LocalPostgres, tmp_path: Path
) -> None:
    """An empty database gets the tables in the schema named, from the package's SQL; a
    store of that schema uses them, and ``public`` stays empty."""
    database = postgres.database(f"own_{tmp_path.name}".lower()[:40])
    assert migrate_database(database, schema="agents") == [
        "created the task tables in schema agents (version 3)"
    ]
    with PostgresTaskStore(database, "t", schema="agents") as store:
        store.begin(make_pin())
    with psycopg.connect(database, autocommit=True) as admin:
        assert admin.execute("SELECT count(*) FROM agents.nisse_task_records").fetchone() == (1,)
        public = admin.execute(
            "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"
        ).fetchone()
        assert public == (0,)
    with pytest.raises(Exception, match="not a plain SQL name"):
        PostgresTaskStore(database, "t", schema='x"; DROP TABLE y; --')


def test_sessions_have_statement_and_lock_timeouts_that_can_be_overridden(
    postgres: LocalPostgres, tmp_path: Path
) -> None:
    """The store's sessions run with a 30 s statement and 10 s lock timeout by default; a
    store given shorter ones fails a write stuck behind a lock within them, typed and
    resumable, instead of waiting forever."""
    database = postgres.database(f"slow_{tmp_path.name}".lower()[:40])
    secret = SecretStr(database)
    with connect(secret) as conn:
        shown = [
            conn.execute(f"SHOW {name}").fetchone()
            for name in ("statement_timeout", "lock_timeout")
        ]
    assert shown == [("30s",), ("10s",)]
    store = PostgresTaskStore(database, "t", lock_timeout_s=0.5).begin(make_pin())
    with psycopg.connect(database) as holder:
        holder.execute("LOCK TABLE nisse.nisse_task_records IN ACCESS EXCLUSIVE MODE")
        started = time.monotonic()
        with pytest.raises(TaskStoreUnavailable, match="lock timeout"):
            store.append_event(UserText(text="stuck"))
        assert time.monotonic() - started < 5
        holder.rollback()
    store.append_event(UserText(text="after the lock"))
    assert [r.event for r in store.read().events] == [UserText(text="after the lock")]
    store.close()


def _open_together(database: SecretStr, sessions: int) -> list[BaseException]:
    """Open ``sessions`` stores' connections on ``database`` at one moment: what they raised."""
    start = threading.Barrier(sessions)
    failures: list[BaseException] = []

    def open_one() -> None:
        start.wait()
        try:
            connect(database).close()
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=open_one) for _ in range(sessions)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return failures


def test_many_stores_opening_an_empty_database_at_once_make_the_tables_once(
    postgres: LocalPostgres, tmp_path: Path
) -> None:
    """Eight sessions that find no tables at the same moment all open: one makes them,
    and the others, which waited for it on the schema lock, see them made."""
    for attempt in range(3):
        database = SecretStr(postgres.database(f"race{attempt}_{tmp_path.name}".lower()[:40]))
        assert _open_together(database, 8) == []
        with psycopg.connect(database.get_secret_value()) as check:
            assert check.execute("SELECT version FROM nisse.nisse_schema").fetchall() == [(3,)]
