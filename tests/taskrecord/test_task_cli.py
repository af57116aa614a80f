"""``nisse-llm task``: list, show, and a task moved file -> PostgreSQL -> file byte for byte."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psycopg

from nisse_llm.log.canonical import ToolCall, ToolResult, UserText
from nisse_llm.task.logstore import LogStore
from nisse_llm.task.postgres import PostgresLogStore
from nisse_llm.task.records import CallRecord
from nisse_llm.testing.postgres import LocalPostgres
from tests.taskrecord.helpers import call_record, make_pin

ROOT = Path(__file__).resolve().parents[2]


def _cli(*args: str, stdin: bytes = b"", status: int = 0) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NISSE_")}
    done = subprocess.run(
        [sys.executable, "-m", "nisse_llm", "task", *args],
        input=stdin,
        capture_output=True,
        cwd=ROOT,
        env=env,
        check=False,
        timeout=120,
    )
    assert done.returncode == status, done.stderr.decode()
    return done


def _task(store: LogStore) -> None:
    """A task with a tool call pending, a priced call, an unknown call and a unicode text."""
    store.begin(make_pin())
    store.append_events(
        [
            UserText(text="Fix the parser — ünïcode"),
            ToolCall(call_id="c1", tool="read", arguments={"p": "a"}),
        ]
    )
    store.append_call(call_record(1))
    store.append_event(ToolResult(call_id="c1", output="contents"))
    store.append_event(ToolCall(call_id="c2", tool="run", arguments={}))
    store.append_call(CallRecord(role="planner", model="m", route="openai_chat", outcome="started"))
    store.close()


def test_a_task_moves_from_a_file_to_postgres_and_back_byte_for_byte(
    tmp_path: Path, postgres: LocalPostgres
) -> None:
    """``task export`` of a file task imported into PostgreSQL exports the same bytes, and
    imported into a new folder is the same file; the password is in no output."""
    folder = tmp_path / "tasks"
    folder.mkdir()
    _task(LogStore(folder / "fix-123.jsonl"))
    original = (folder / "fix-123.jsonl").read_bytes()

    exported = _cli("export", "fix-123", "--store", str(folder)).stdout
    assert exported == original
    imported = _cli("import", "--key", "fix-123", "-", "--store", postgres.url, stdin=exported)
    assert imported.stderr == b"imported 7 record(s) into task fix-123\n"
    from_db = _cli("export", "fix-123", "--store", postgres.url).stdout
    assert from_db == original
    (tmp_path / "moved.jsonl").write_bytes(from_db)
    back = tmp_path / "back"
    _cli("import", "--key", "fix-123", str(tmp_path / "moved.jsonl"), "--store", str(back))
    assert (back / "fix-123.jsonl").read_bytes() == original
    with PostgresLogStore(postgres.url, "fix-123") as store:
        assert store.read().records == LogStore(folder / "fix-123.jsonl").read().records
    for output in (imported.stdout, imported.stderr, from_db):
        assert postgres.password.encode() not in output


def test_list_and_show_on_both_stores(tmp_path: Path, postgres: LocalPostgres) -> None:
    """``task list`` gives each task's key, pin, status, calls, cost, last activity and live
    lease holder; ``task show`` its view, unknown calls and usage; neither takes the lease
    (the holder keeps writing after) and neither prints the password."""
    folder = tmp_path / "tasks"
    folder.mkdir()
    _task(LogStore(folder / "on-disk.jsonl"))
    key = f"cli-{tmp_path.name}"
    url = postgres.database(f"list_{tmp_path.name}".lower())  # this test's tasks alone
    _task(PostgresLogStore(url, key))
    holder = PostgresLogStore(url, key, holder="worker-7")
    holder.resume("sk-x", base_url="http://127.0.0.1:4000")  # holds the lease
    fingerprint = make_pin().fingerprint

    on_disk = _cli("list", "--store", str(folder)).stdout.decode()
    in_db = _cli("list", "--store", url).stdout.decode()
    shown = _cli("show", key, "--store", url).stdout.decode()
    holder.append_event(UserText(text="still the driver"))
    holder.close()

    assert on_disk.splitlines()[0] == f"1 task(s) in {folder}"
    row = next(line for line in on_disk.splitlines() if line.startswith("on-disk"))
    assert row.split()[1:5] == [fingerprint, "unknown-calls", "1", "0.000002"]
    assert row.split()[-1] == "-"
    row = next(line for line in in_db.splitlines() if line.startswith(key))
    assert row.split()[1:5] == [fingerprint, "unknown-calls", "1", "0.000002"]
    assert row.endswith("worker-7")
    assert in_db.splitlines()[0] == "1 task(s) in " + url.replace(postgres.password, "(set)")
    assert f"task {key}: pin {fingerprint}, unknown-calls" in shown
    assert "user_text    Fix the parser — ünïcode" in shown
    assert "unknown calls: 1\n  seq 6: planner m (openai_chat) at " in shown
    assert "  (all)" in shown
    for output in (on_disk, in_db, shown):
        assert postgres.password not in output


def test_a_damaged_task_is_listed_as_corrupt_beside_the_others(
    tmp_path: Path, postgres: LocalPostgres
) -> None:
    """One task holding a line that is no record does not hide the others: ``task list``
    lists it as corrupt, says why on stderr with its place, and exits 1; ``task show`` of
    it is an error, not a traceback. On both stores."""
    folder = tmp_path / "tasks"
    folder.mkdir()
    url = postgres.database(f"damaged_{tmp_path.name}".lower())
    for store in (
        [LogStore(folder / "good.jsonl"), LogStore(folder / "bad.jsonl")],
        [PostgresLogStore(url, "good"), PostgresLogStore(url, "bad")],
    ):
        for each in store:
            _task(each)
    with (folder / "bad.jsonl").open("ab") as damaged:
        damaged.write(b'{"seq": 99, "at": "2026-01-01T00:00:00Z"}\n')
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(
            "UPDATE nisse_task_records SET record = %s WHERE task = 'bad' AND seq = 1",
            ('{"seq": 1, "at": "2026-01-01T00:00:00Z"}',),
        )

    for where in (str(folder), url):
        listed = _cli("list", "--store", where, status=1)
        rows = {line.split()[0]: line.split() for line in listed.stdout.decode().splitlines()[2:]}
        assert rows["bad"][1:3] == ["-", "corrupt"]
        assert rows["good"][2] == "unknown-calls"
        assert "warning: " in listed.stderr.decode()
        assert "not a valid log record" in listed.stderr.decode()
        assert "Traceback" not in listed.stderr.decode()
        shown = _cli("show", "bad", "--store", where, status=1)
        assert shown.stderr.decode().startswith("error: ")
        assert postgres.password not in listed.stderr.decode() + shown.stderr.decode()
