"""Database errors by what the operator must do: a refused password, a missing privilege or
a missing database is `TaskStoreMisconfigured` (fix and grant; no retry cures it, CLI exit
2), a server down or unreachable stays `TaskStoreUnavailable` (resume later, exit 3)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from nisse_llm.errors import (
    LLMError,
    TaskStoreMisconfigured,
    TaskStoreUnavailable,
    UpstreamUnavailable,
)
from nisse_llm.task.postgres import PostgresTaskStore, migrate_database
from nisse_llm.testing.postgres import LocalPostgres
from tests.task.helpers import make_pin

ROOT = Path(__file__).resolve().parents[2]
WEAK_PASSWORD = "weak-Pw-71c"


def _cli_list(url: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("NISSE_", "PG"))}
    return subprocess.run(
        [sys.executable, "-m", "nisse_llm", "task", "list"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**base, "NISSE_TASK_STORE": url, **env},
        check=False,
        timeout=120,
    )


def _host(server: LocalPostgres) -> str:
    return f"127.0.0.1:{server.port}"


def _misconfigured(url: str, *secrets: str) -> TaskStoreMisconfigured:
    """The error a first use of ``url`` raises, checked to be no retryable one and to show
    none of ``secrets``."""
    with pytest.raises(TaskStoreMisconfigured) as caught:
        PostgresTaskStore(url, "t1").begin(make_pin())
    error = caught.value
    assert isinstance(error, LLMError)
    assert not isinstance(error, UpstreamUnavailable)
    assert all(secret not in str(error) for secret in secrets)
    return error


def test_a_role_without_create_is_told_what_to_grant(
    postgres: LocalPostgres, tmp_path: Path
) -> None:
    """A role that may log in but not create the task tables' schema gets
    `TaskStoreMisconfigured` saying to run ``task migrate``; the CLI exits 2 with it; once
    an owner has migrated and granted the tables, the same URL works."""
    name = f"weak_{tmp_path.name}".lower()[:40]
    database = postgres.database(f"db_{name}")
    with psycopg.connect(postgres.url, autocommit=True) as admin:
        admin.execute(f"CREATE ROLE {name} LOGIN PASSWORD '{WEAK_PASSWORD}'")
    url = f"postgresql://{name}@{_host(postgres)}/{database.rsplit('/', 1)[1]}"
    os.environ["PGPASSWORD"] = WEAK_PASSWORD
    try:
        error = _misconfigured(url, WEAK_PASSWORD)
    finally:
        del os.environ["PGPASSWORD"]
    assert error.sqlstate == "42501"
    assert "run `nisse-llm task migrate`" in str(error)
    done = _cli_list(url, {"PGPASSWORD": WEAK_PASSWORD})
    assert done.returncode == 2, done.stderr
    assert "run `nisse-llm task migrate`" in done.stderr
    assert "Traceback" not in done.stderr

    migrate_database(database)
    with psycopg.connect(database, autocommit=True) as admin:
        admin.execute(f"GRANT USAGE ON SCHEMA nisse TO {name}")
        admin.execute(
            f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA nisse TO {name}"
        )
    done = _cli_list(url, {"PGPASSWORD": WEAK_PASSWORD})
    assert done.returncode == 0, done.stderr


def test_a_refused_or_missing_password_and_a_missing_database_are_misconfigured(
    postgres: LocalPostgres, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The server's password login (scram in its pg_hba) refuses a wrong password, a URL
    with none and no PGPASSWORD or .pgpass, and a database that does not exist: each is
    `TaskStoreMisconfigured` saying what to set, the password shown nowhere, CLI exit 2."""
    monkeypatch.delenv("PGPASSWORD", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.pgpass
    wrong = postgres.url.replace(postgres.password, "not-the-Pw-3f")
    error = _misconfigured(wrong, "not-the-Pw-3f", postgres.password)
    assert "password authentication failed" in str(error)
    assert "PGPASSWORD" in str(error)

    bare = postgres.url.replace(f":{postgres.password}@", "@")
    assert "no password was given" in str(_misconfigured(bare))

    gone = postgres.url.rsplit("/", 1)[0] + "/no_such_db"
    error = _misconfigured(gone, postgres.password)
    assert 'database "no_such_db" does not exist' in str(error)
    assert "CREATE DATABASE" in str(error)

    for url, env in (
        (wrong, {}),
        (bare, {}),
        (bare.rsplit("/", 1)[0] + "/no_such_db", {"PGPASSWORD": postgres.password}),
    ):
        done = _cli_list(url, env)
        assert done.returncode == 2, done.stderr
        assert "not-the-Pw-3f" not in done.stderr
        assert postgres.password not in done.stderr


def test_a_server_down_or_unreachable_stays_unavailable() -> None:
    """Nothing listening where the URL points (a server stopped, a port closed) is
    `TaskStoreUnavailable`, retryable: resume later; the CLI exits 3."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"postgresql://nisse:pw-9@127.0.0.1:{port}/postgres"
    with pytest.raises(TaskStoreUnavailable) as caught:
        PostgresTaskStore(url, "t1").read()
    assert isinstance(caught.value, UpstreamUnavailable)
    assert "resume the task when the database is back" in str(caught.value)
    done = _cli_list(url.replace(":pw-9@", "@"), {"PGPASSWORD": "pw-9"})
    assert done.returncode == 3, done.stderr
