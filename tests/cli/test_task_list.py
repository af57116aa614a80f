"""``nisse-llm task list`` of a database: one query on the tasks table, whatever the
number of tasks, with a status filter and pages by key."""

from __future__ import annotations

import time
from pathlib import Path

import psycopg

from nisse_llm.events.canonical import AssistantText, UserText
from nisse_llm.task.postgres import PostgresTaskStore, task_keys
from nisse_llm.testing.postgres import LocalPostgres
from tests.cli.test_task_cli import _cli
from tests.task.helpers import call_record, make_pin

TASKS = 2000


def _seeded(postgres: LocalPostgres, tmp_path: Path) -> str:
    """A database of ``TASKS`` tasks, ``t-0000`` to ``t-1999``: the even ones done, the odd
    ones ready (each a copy of one task a store wrote, made in SQL for speed)."""
    url = postgres.database(f"list_{tmp_path.name}".lower()[:40])
    with PostgresTaskStore(url, "seed") as store:
        store.begin(make_pin())
        store.append_call(call_record(2))
        store.append_event(AssistantText(text="done", model="m"))
    with PostgresTaskStore(url, "seed-ready") as store:
        store.begin(make_pin())
        store.append_event(UserText(text="go on"))
    with psycopg.connect(url, autocommit=True) as admin:
        for seed, parity in (("seed", 0), ("seed-ready", 1)):
            admin.execute(
                "INSERT INTO nisse.nisse_task_records (task, seq, record)"
                " SELECT format('t-%%s', lpad(n::text, 4, '0')), r.seq, r.record"
                " FROM generate_series(0, %s) AS n, nisse.nisse_task_records AS r"
                " WHERE r.task = %s AND n %% 2 = %s",
                (TASKS - 1, seed, parity),
            )
            admin.execute(
                "INSERT INTO nisse.nisse_tasks (key, status, records, calls, cost_usd, pin,"
                " last_activity) SELECT format('t-%%s', lpad(n::text, 4, '0')), t.status,"
                " t.records, t.calls, t.cost_usd, t.pin, t.last_activity"
                " FROM generate_series(0, %s) AS n, nisse.nisse_tasks AS t"
                " WHERE t.key = %s AND n %% 2 = %s",
                (TASKS - 1, seed, parity),
            )
        admin.execute("DELETE FROM nisse.nisse_task_records WHERE task LIKE 'seed%'")
        admin.execute("DELETE FROM nisse.nisse_tasks WHERE key LIKE 'seed%'")
    return url


def _database_stats(admin: psycopg.Connection[tuple[object, ...]]) -> tuple[int, int]:
    """(sessions opened, transactions committed) in the admin session's database so far."""
    admin.execute("SELECT pg_stat_clear_snapshot()")
    row = admin.execute(
        "SELECT sessions, xact_commit FROM pg_stat_database WHERE datname = current_database()"
    ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


def test_listing_2000_tasks_is_one_session_and_a_few_statements(
    postgres: LocalPostgres, tmp_path: Path
) -> None:
    """``task list`` of 2,000 tasks opens one session to the database and commits a few
    transactions (the version check and the one query), not one per task, as the
    server's own counters show; it lists every task with its status."""
    url = _seeded(postgres, tmp_path)
    with psycopg.connect(url, autocommit=True) as admin:
        before = _database_stats(admin)
        began = time.monotonic()
        listed = _cli("list", "--store", url)
        took_s = time.monotonic() - began
        time.sleep(0.5)  # a session's counters are flushed as it ends
        after = _database_stats(admin)
    lines = listed.stdout.decode().splitlines()
    assert lines[0].startswith(f"{TASKS} task(s) in postgresql://")
    rows = [line.split() for line in lines[2:]]
    assert [row[0] for row in rows] == [f"t-{n:04d}" for n in range(TASKS)]
    assert {row[2] for row in rows[::2]} == {"done"}
    assert {row[2] for row in rows[1::2]} == {"ready"}
    sessions, transactions = after[0] - before[0], after[1] - before[1]
    assert sessions == 1
    assert transactions <= 10  # the CLI's few and the counter reads, not one per task
    print(f"task list of {TASKS} tasks: {took_s:.2f} s in one process, {transactions} commits")


def test_list_filters_by_status_and_pages_by_key(postgres: LocalPostgres, tmp_path: Path) -> None:
    """``--status done --limit 300`` gives the first 300 done tasks and names the next
    page's ``--after``; that page follows on with no task twice; `task_keys` agrees."""
    url = _seeded(postgres, tmp_path)
    first = _cli("list", "--store", url, "--status", "done", "--limit", "300")
    keys = [line.split()[0] for line in first.stdout.decode().splitlines()[2:]]
    assert keys == [f"t-{n:04d}" for n in range(0, 600, 2)]
    assert "next page: --after t-0598" in first.stderr.decode()
    second = _cli("list", "--store", url, "--status", "done", "--limit", "300", "--after", keys[-1])
    following = [line.split()[0] for line in second.stdout.decode().splitlines()[2:]]
    assert following == [f"t-{n:04d}" for n in range(600, 1200, 2)]
    rows = task_keys(url, status="ready", limit=2, after="t-0100")
    assert [(row["key"], row["status"], row["holder"]) for row in rows] == [
        ("t-0101", "ready", None),
        ("t-0103", "ready", None),
    ]
