"""The task CLI as an operator's tool: it needs only a store, keeps the database password
off the command line, refuses damage before writing anything, and says what it means."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from nisse_llm.errors import ConfigError
from nisse_llm.events.canonical import AssistantText, UserText
from nisse_llm.task.dsn import password_of
from nisse_llm.task.lease import FileLease
from nisse_llm.task.logstore import FileTaskStore, TaskStore
from nisse_llm.task.postgres import AsyncPostgresTaskStore, PostgresTaskStore
from nisse_llm.task.records import CallRecord
from nisse_llm.task.stores import open_task_store
from nisse_llm.testing.postgres import LocalPostgres
from tests.task.helpers import make_pin

ROOT = Path(__file__).resolve().parents[2]


def _run(
    *args: str, env: dict[str, str] | None = None, stdin: bytes = b"", status: int = 0
) -> subprocess.CompletedProcess[bytes]:
    """``nisse-llm task ARGS`` with no NISSE_* variable but those of ``env``."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("NISSE_", "PG"))}
    done = subprocess.run(
        [sys.executable, "-m", "nisse_llm", "task", *args],
        input=stdin,
        capture_output=True,
        cwd=ROOT,
        env={**base, **(env or {})},
        check=False,
        timeout=120,
    )
    assert done.returncode == status, done.stderr.decode()
    assert b"Traceback" not in done.stderr
    return done


def _bare(url: str) -> str:
    """``url`` without its password (what an operator writes)."""
    password = password_of(url)
    return url.replace(f":{password}@", "@", 1) if password else url


def _task(store: TaskStore, *, finished: bool = False) -> None:
    store.begin(make_pin())
    store.append_event(UserText(text="go"))
    store.append_call(
        CallRecord(role="executor", model="gpt-4.1-mini", route="openai_chat", outcome="started")
    )
    if finished:
        store.append_event(AssistantText(text="done", model="gpt-4.1-mini"))
    store.close()


def test_with_only_the_store_set_every_task_command_works(
    tmp_path: Path, postgres: LocalPostgres
) -> None:
    """With only NISSE_TASK_STORE (a URL without a password) and PGPASSWORD set, no token
    and no role anywhere: list, show, export, import and repin all work, and nothing
    printed holds the password."""
    url = postgres.database(f"only_{tmp_path.name}".lower())
    _task(PostgresTaskStore(url, "t1"))
    env = {"NISSE_TASK_STORE": _bare(url), "PGPASSWORD": postgres.password}

    listed = _run("list", env=env).stdout.decode()
    shown = _run("show", "t1", env=env).stdout.decode()
    exported = _run("export", "t1", env=env).stdout
    imported = _run("import", "--key", "t2", "-", env=env, stdin=exported)
    repinned = _run("repin", "t2", "--role", "executor=gpt-4.1", "--by", "ops", env=env)
    after = _run("show", "t2", env=env).stdout.decode()

    assert "1 task(s) in" in listed
    assert "\nt1 " in listed
    assert "task t1: pin " in shown
    assert "repins: 0" in shown
    assert _run("export", "t2", env=env).stdout.startswith(exported)
    assert imported.stderr == b"imported 3 record(s) into task t2\n"
    assert b"repinned at seq 3 by ops: roles.executor -> gpt-4.1" in repinned.stdout
    assert "repins: 1\n  seq 3 at " in after
    assert "by ops: roles.executor gpt-4.1-mini -> gpt-4.1" in after
    outputs = [listed, shown, after, repinned.stdout.decode(), repinned.stderr.decode()]
    assert all(postgres.password not in text for text in outputs)


def test_a_password_on_the_command_line_is_warned_about(
    tmp_path: Path, postgres: LocalPostgres
) -> None:
    """``--store`` holding a password works, with a warning on stderr that says where the
    password belongs instead; the password itself is printed nowhere."""
    url = postgres.database(f"warn_{tmp_path.name}".lower())
    done = _run("list", "--store", url)
    err = done.stderr.decode()
    assert err.startswith("warning: --store carries a password")
    assert "PGPASSWORD" in err
    assert "NISSE_TASK_STORE" in err
    assert postgres.password not in err + done.stdout.decode()
    assert _run("list", "--store", _bare(url), env={"PGPASSWORD": postgres.password}).stderr == b""


def test_show_and_export_of_a_missing_task_exit_1_naming_key_and_store(
    tmp_path: Path, postgres: LocalPostgres
) -> None:
    """A key the store lacks is said, with the key and the store, exit 1, in a folder and
    in a database alike."""
    url = postgres.database(f"missing_{tmp_path.name}".lower())
    for where, shown in ((str(tmp_path), str(tmp_path)), (url, _bare(url))):
        env = {"NISSE_TASK_STORE": _bare(where), "PGPASSWORD": postgres.password}
        for action in ("show", "export", "repin"):
            extra = ["--role", "executor=gpt-4.1"] if action == "repin" else []
            done = _run(action, "no-such-task", *extra, env=env, status=1)
            assert done.stderr.decode() == f"error: no task 'no-such-task' in {shown}\n"
            assert done.stdout == b""


def _exported(folder: Path) -> list[bytes]:
    store = FileTaskStore(folder / "src.jsonl")
    _task(store, finished=True)
    return FileTaskStore(folder / "src.jsonl").export_lines()


@pytest.mark.parametrize(
    ("damage", "said"),
    [
        ("gap", "line 3 of the export is record 3, not 2: a gap"),
        ("repeat", "line 3 of the export is record 1, not 2: a repeat"),
        ("headerless", "the export's first record is not a task header"),
        ("empty", "the export holds no record"),
    ],
)
def test_import_refuses_a_damaged_export_before_writing(
    tmp_path: Path, postgres: LocalPostgres, damage: str, said: str
) -> None:
    """An export with a gap or a repeat in its numbers, without its header, or empty is
    refused (exit 2, the reason, nothing written), into a folder and a database alike."""
    lines = _exported(tmp_path)
    damaged = {
        "gap": lines[:2] + lines[3:],
        "repeat": lines[:2] + lines[1:2] + lines[2:],
        "headerless": lines[1:],
        "empty": [],
    }[damage]
    data = b"".join(line + b"\n" for line in damaged)
    url = postgres.database(f"imp_{damage}_{tmp_path.name}".lower())
    for where in (str(tmp_path / "into"), url):
        env = {"NISSE_TASK_STORE": _bare(where), "PGPASSWORD": postgres.password}
        done = _run("import", "--key", "k", "-", env=env, stdin=data, status=2)
        assert done.stderr.decode().startswith("error: import of standard input refused: ")
        assert said in done.stderr.decode()
        assert "nothing was written" in done.stderr.decode()
        _run("show", "k", env=env, status=1)


def test_import_onto_an_existing_key_is_refused_unless_replaced(
    tmp_path: Path, postgres: LocalPostgres
) -> None:
    """Importing onto a key that holds a task is refused (exit 2, `--replace` offered, the
    task unchanged); with ``--replace`` the key holds exactly the export."""
    lines = _exported(tmp_path)
    data = b"".join(line + b"\n" for line in lines)
    url = postgres.database(f"replace_{tmp_path.name}".lower())
    for where in (str(tmp_path / "into"), url):
        env = {"NISSE_TASK_STORE": _bare(where), "PGPASSWORD": postgres.password}
        _run("import", "--key", "k", "-", env=env, stdin=data)
        _run("repin", "k", "--role", "executor=gpt-4.1", env=env)
        before = _run("export", "k", env=env).stdout
        done = _run("import", "--key", "k", "-", env=env, stdin=data, status=2)
        assert "the task exists already" in done.stderr.decode()
        assert "--replace" in done.stderr.decode()
        assert _run("export", "k", env=env).stdout == before
        _run("import", "--key", "k", "--replace", "-", env=env, stdin=data)
        assert _run("export", "k", env=env).stdout == data


def test_every_store_refuses_a_key_the_cli_refuses(postgres: LocalPostgres) -> None:
    """A key that is no plain name is refused by each PostgreSQL store at construction and
    by the store opener, as the CLI refuses it (exit 2), so no such task can be written."""
    for bad in ("../x y ü", "", ".hidden", "-dash", "a/b"):
        with pytest.raises(ConfigError, match="task key"):
            PostgresTaskStore(postgres.url, bad)
        with pytest.raises(ConfigError, match="task key"):
            AsyncPostgresTaskStore(postgres.url, bad)
        with pytest.raises(ConfigError, match="task key"):
            open_task_store(bad)
    done = _run("show", "../x y ü", "--store", "/tmp", status=2)
    assert "task key '../x y ü'" in done.stderr.decode()


def test_a_closed_pipe_ends_the_cli_quietly(tmp_path: Path) -> None:
    """``task show KEY | head -1``: the reader leaves early, and the CLI ends without a
    word on stderr."""
    store = FileTaskStore(tmp_path / "long.jsonl")
    store.begin(make_pin())
    store.append_events([UserText(text=f"line {n} " * 8) for n in range(4000)])
    store.close()
    base = {k: v for k, v in os.environ.items() if not k.startswith("NISSE_")}
    with subprocess.Popen(
        [sys.executable, "-m", "nisse_llm", "task", "show", "long", "--store", str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
        env=base,
    ) as shown:
        assert shown.stdout is not None
        assert shown.stderr is not None
        assert shown.stdout.readline().startswith(b"task long: pin ")
        shown.stdout.close()
        assert shown.wait(timeout=60) == 0
        assert shown.stderr.read() == b""


def test_a_finished_task_is_done_with_its_unknown_calls_in_their_own_column(
    tmp_path: Path,
) -> None:
    """A task whose last reply ended it is ``done`` though a call's outcome is unknown; the
    list counts that call in its UNKNOWN column."""
    _task(FileTaskStore(tmp_path / "finished.jsonl"), finished=True)
    _task(FileTaskStore(tmp_path / "cut.jsonl"))
    listed = _run("list", "--store", str(tmp_path)).stdout.decode().splitlines()
    assert listed[1].split() == [
        "KEY", "PIN", "STATUS", "CALLS", "UNKNOWN", "COST_USD", "APPROVALS", "LAST_ACTIVITY",
        "PARENT", "LEASE",
    ]  # fmt: skip
    rows = {line.split()[0]: line.split() for line in listed[2:]}
    assert rows["finished"][2:5] == ["done", "0", "1"]
    assert rows["cut"][2:5] == ["unknown-calls", "0", "1"]
    shown = _run("show", "finished", "--store", str(tmp_path)).stdout.decode()
    assert shown.splitlines()[0].endswith(", done")


def test_a_repin_is_refused_with_its_reason_and_nothing_written(tmp_path: Path) -> None:
    """A role the task lacks, a misspelt model, a repin that changes nothing and a
    ``--role`` without ``=`` are refused (exit 2, the reason); a task whose driver holds
    its lease is left to it (exit 1); the task file is unchanged every time."""
    _task(FileTaskStore(tmp_path / "t.jsonl"))
    before = (tmp_path / "t.jsonl").read_bytes()
    where = ["--store", str(tmp_path)]
    refusals = {
        ("--role", "reviewer=gpt-4.1"): "the task has no role 'reviewer' (its roles: ",
        ("--role", "executor=claude-sonet-4-6"): "did you mean claude-sonnet-4-6?",
        ("--role", "executor=gpt-4.1-mini"): "nothing changes",
        ("--role", "executor"): "--role 'executor': write ROLE=MODEL",
        (): "task repin needs --role ROLE=MODEL or --base-url URL",
    }
    for args, said in refusals.items():
        done = _run("repin", "t", *args, *where, status=2)
        assert said in done.stderr.decode()
    with FileLease.take(tmp_path / "t.jsonl"):
        done = _run("repin", "t", "--role", "executor=gpt-4.1", *where, status=1)
        assert "holds" in done.stderr.decode()
    assert (tmp_path / "t.jsonl").read_bytes() == before


def test_a_password_on_the_command_line_is_warned_about_once(
    tmp_path: Path, postgres: LocalPostgres
) -> None:
    """A command that opens the store twice (``repin`` reads, then writes) warns once."""
    url = postgres.database(f"once_{tmp_path.name}".lower())
    _task(PostgresTaskStore(url, "t1"))
    done = _run("repin", "t1", "--role", "executor=gpt-4.1", "--store", url)
    assert done.stderr.decode().count("warning: --store carries a password") == 1


def test_a_key_written_before_keys_were_checked_does_not_hide_the_others(
    tmp_path: Path, postgres: LocalPostgres
) -> None:
    """A database row under a key no store accepts now (written by an older release) is
    listed as ``bad-key`` with the reason on stderr (exit 1), beside the tasks it would
    otherwise have hidden."""
    url = postgres.database(f"badkey_{tmp_path.name}".lower())
    _task(PostgresTaskStore(url, "good"))
    with PostgresTaskStore(url, "good") as store:
        line = store.export_lines()[0].decode()
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(
            "INSERT INTO nisse.nisse_task_records (task, seq, record) VALUES (%s, 0, %s)",
            ("../x y ü", line),
        )
        connection.execute(
            "INSERT INTO nisse.nisse_tasks (key, records) VALUES (%s, 1)", ("../x y ü",)
        )
    done = _run(
        "list", env={"NISSE_TASK_STORE": _bare(url), "PGPASSWORD": postgres.password}, status=1
    )
    rows = done.stdout.decode().splitlines()[2:]
    assert [row.split()[0] for row in rows] == ["../x", "good"]
    assert "bad-key" in rows[0]
    assert "task key '../x y ü'" in done.stderr.decode()
