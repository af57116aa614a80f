"""``nisse-llm task``: list, show, and a task moved file -> PostgreSQL -> file byte for byte;
a task file's lease holder listed as the kernel shows it, read without taking the lease."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest

from nisse_llm.cli.main import main
from nisse_llm.events.canonical import ToolCall, ToolResult, UserText
from nisse_llm.task import lease
from nisse_llm.task.dsn import password_of
from nisse_llm.task.lease import FileLease, lease_path
from nisse_llm.task.logstore import FileTaskStore, TaskStore
from nisse_llm.task.postgres import PostgresTaskStore
from nisse_llm.task.records import CallRecord
from nisse_llm.testing.postgres import LocalPostgres
from tests.agent._driver import child, holding
from tests.task.helpers import call_record, make_pin

ROOT = Path(__file__).resolve().parents[2]


def _cli(*args: str, stdin: bytes = b"", status: int = 0) -> subprocess.CompletedProcess[bytes]:
    """The task CLI as an operator runs it: a database URL's password moved out of the
    command line into ``PGPASSWORD`` (a ``--store`` carrying one is warned about)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NISSE_")}
    given = list(args)
    for n, arg in enumerate(given):
        password = password_of(arg) if arg.startswith("postgresql://") else None
        if password:
            given[n] = arg.replace(f":{password}@", "@", 1)
            env["PGPASSWORD"] = password
    done = subprocess.run(
        [sys.executable, "-m", "nisse_llm", "task", *given],
        input=stdin,
        capture_output=True,
        cwd=ROOT,
        env=env,
        check=False,
        timeout=120,
    )
    assert done.returncode == status, done.stderr.decode()
    return done


def _task(store: TaskStore) -> None:
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
    _task(FileTaskStore(folder / "fix-123.jsonl"))
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
    with PostgresTaskStore(postgres.url, "fix-123") as store:
        assert store.read().records == FileTaskStore(folder / "fix-123.jsonl").read().records
    for output in (imported.stdout, imported.stderr, from_db):
        assert postgres.password.encode() not in output


def test_list_and_show_on_both_stores(tmp_path: Path, postgres: LocalPostgres) -> None:
    """``task list`` gives each task's key, pin, status, calls, unknown calls, cost, last
    activity and live
    lease holder; ``task show`` its view, unknown calls and usage; neither takes the lease
    (the holder keeps writing after) and neither prints the password."""
    folder = tmp_path / "tasks"
    folder.mkdir()
    _task(FileTaskStore(folder / "on-disk.jsonl"))
    key = f"cli-{tmp_path.name}"
    url = postgres.database(f"list_{tmp_path.name}".lower())  # this test's tasks alone
    _task(PostgresTaskStore(url, key))
    holder = PostgresTaskStore(url, key, holder="worker-7")
    holder.resume("sk-x", base_url="http://127.0.0.1:4000")  # holds the lease
    fingerprint = make_pin().fingerprint

    on_disk = _cli("list", "--store", str(folder)).stdout.decode()
    in_db = _cli("list", "--store", url).stdout.decode()
    shown = _cli("show", key, "--store", url).stdout.decode()
    holder.append_event(UserText(text="still the driver"))
    holder.close()

    assert on_disk.splitlines()[0] == f"1 task(s) in {folder}"
    row = next(line for line in on_disk.splitlines() if line.startswith("on-disk"))
    assert row.split()[1:6] == [fingerprint, "unknown-calls", "1", "1", "0.000002"]
    assert row.split()[-1] == "-"
    row = next(line for line in in_db.splitlines() if line.startswith(key))
    assert row.split()[1:6] == [fingerprint, "unknown-calls", "1", "1", "0.000002"]
    assert row.endswith("worker-7")
    assert in_db.splitlines()[0] == "1 task(s) in " + url.replace(f":{postgres.password}", "")
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
    of a folder lists it as corrupt, says why on stderr with its place, and exits 1 (a
    database's list reads only the tasks table, which keeps what the last write said);
    ``task show`` of it is an error, not a traceback. On both stores."""
    folder = tmp_path / "tasks"
    folder.mkdir()
    url = postgres.database(f"damaged_{tmp_path.name}".lower())
    for store in (
        [FileTaskStore(folder / "good.jsonl"), FileTaskStore(folder / "bad.jsonl")],
        [PostgresTaskStore(url, "good"), PostgresTaskStore(url, "bad")],
    ):
        for each in store:
            _task(each)
    with (folder / "bad.jsonl").open("ab") as damaged:
        damaged.write(b'{"seq": 99, "at": "2026-01-01T00:00:00Z"}\n')
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(
            "UPDATE nisse.nisse_task_records SET record = %s WHERE task = 'bad' AND seq = 1",
            ('{"seq": 1, "at": "2026-01-01T00:00:00Z"}',),
        )

    for where in (str(folder), url):
        listed = _cli("list", "--store", where, status=1 if where != url else 0)
        rows = {line.split()[0]: line.split() for line in listed.stdout.decode().splitlines()[2:]}
        assert rows["good"][2] == "unknown-calls"
        if where != url:
            assert rows["bad"][1:3] == ["-", "corrupt"]
            assert "warning: " in listed.stderr.decode()
            assert "not a valid log record" in listed.stderr.decode()
        else:
            assert rows["bad"][2] == "unknown-calls"
        assert "Traceback" not in listed.stderr.decode()
        shown = _cli("show", "bad", "--store", where, status=1)
        assert shown.stderr.decode().startswith("error: ")
        assert postgres.password not in listed.stderr.decode() + shown.stderr.decode()


def _listed(folder: Path) -> dict[str, str]:
    """Each task's row of ``nisse-llm task list --store FOLDER``, by key."""
    out = _cli("list", "--store", str(folder)).stdout.decode()
    return {line.split()[0]: line for line in out.splitlines()[2:]}


def test_a_task_held_by_a_live_process_is_listed_with_its_holder_until_it_is_killed(
    tmp_path: Path,
) -> None:
    """While another process drives a task file, ``task list`` names that process as its
    lease holder (as `TaskBusy` would); once it is SIGKILLed the task is listed as ``-``,
    though its lease file still records it."""
    folder = tmp_path / "tasks"
    before = datetime.now(UTC)
    with holding("fix-123", str(folder)) as process:
        expected = f"{socket.gethostname()} pid {process.pid}"
        row = _listed(folder)["fix-123"]
        found = FileLease.holder_of(folder / "fix-123.jsonl")
    assert row.endswith(f"  {expected}"), row
    assert found is not None
    holder, since = found
    assert holder == expected
    assert since is not None
    assert before - timedelta(seconds=5) <= since <= datetime.now(UTC)

    assert _listed(folder)["fix-123"].split()[-1] == "-"
    assert FileLease.holder_of(folder / "fix-123.jsonl") is None
    recorded = json.loads(lease_path(folder / "fix-123.jsonl").read_bytes())
    assert recorded["holder"] == expected  # a stale record, not a holder


def test_listing_never_makes_a_concurrent_open_fail(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A process opens and closes a task hundreds of times while its lease is read over
    and over (``task list``, and `FileLease.holder_of` between listings, which tried
    often enough finds any moment a reader holds the lock): not one of its opens gets
    `TaskBusy`, and the readings saw it holding and not holding."""
    folder = tmp_path / "tasks"
    process = child("reopen", "busy", str(folder), "300")
    assert process.stdout is not None
    assert process.stdout.readline() == b"opened\n"
    expected = f"{socket.gethostname()} pid {process.pid}"
    listings, seen = 0, set()
    while process.poll() is None:
        assert main(["task", "list", "--store", str(folder)]) == 0
        listings += 1
        seen.add(capsys.readouterr().out.splitlines()[2].endswith(f"  {expected}"))
        for _ in range(100):
            found = FileLease.holder_of(folder / "busy.jsonl")
            seen.add(found is not None and found[0] == expected)
    _, errors = process.communicate(timeout=60)
    assert process.returncode == 0, errors.decode()
    assert seen == {True, False}, f"{listings} listings"


def test_a_held_lease_with_an_empty_or_damaged_record_has_an_unknown_holder(
    tmp_path: Path,
) -> None:
    """A lease held while its file records nothing readable (empty, as a holder leaves it
    for a moment while taking it, or damaged) is listed as held by ``(unknown)``, and a
    task whose lease was never taken as ``-``."""
    folder = tmp_path / "tasks"
    folder.mkdir()
    for key in ("empty", "damaged", "free"):
        FileTaskStore(folder / f"{key}.jsonl").begin(make_pin()).close()
    with (
        FileLease.take(folder / "empty.jsonl") as empty,
        FileLease.take(folder / "damaged.jsonl") as damaged,
    ):
        empty.path.write_bytes(b"")
        damaged.path.write_bytes(b'{"holder": "worker-7", "since": "not a time"}')
        rows = _listed(folder)
        assert FileLease.holder_of(folder / "empty.jsonl") == (None, None)
        assert FileLease.holder_of(folder / "damaged.jsonl") == (None, None)
    assert rows["empty"].endswith("  (unknown)")
    assert rows["damaged"].endswith("  (unknown)")
    assert rows["free"].split()[-1] == "-"
    assert not lease_path(folder / "free.jsonl").exists()  # listing created no lease file


def test_where_the_system_shows_no_locks_the_lease_is_listed_as_unknowable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without ``/proc/locks`` (another system, or no ``/proc``) `holder_of` raises
    `OSError` and ``task list`` shows ``?`` rather than guess, held or not; its help says
    what ``?`` means."""
    folder = tmp_path / "tasks"
    folder.mkdir()
    FileTaskStore(folder / "held.jsonl").begin(make_pin()).close()
    monkeypatch.setattr(lease, "PROC_LOCKS", tmp_path / "no-proc" / "locks")
    with FileLease.take(folder / "held.jsonl"):
        with pytest.raises(FileNotFoundError):
            FileLease.holder_of(folder / "held.jsonl")
        assert main(["task", "list", "--store", str(folder)]) == 0
    row = capsys.readouterr().out.splitlines()[2]
    assert row.startswith("held  ")
    assert row.split()[-1] == "?"
    assert main(["task", "list", "--help"]) == 0
    assert "'?' the system cannot tell" in " ".join(capsys.readouterr().out.split())
