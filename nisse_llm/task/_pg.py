"""What both PostgreSQL stores share beside their I/O: the tables, the migration steps,
the connection options and the translation of psycopg's errors. `nisse_llm.task.postgres`
says what the stores promise."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Literal

import psycopg
from psycopg.conninfo import conninfo_to_dict
from pydantic import SecretStr

from nisse_llm.errors import TaskStoreMisconfigured, TaskStoreUnavailable
from nisse_llm.task.dsn import redacted_url, scrubbed

__all__ = [
    "CREATE",
    "MIGRATIONS",
    "SCHEMA_LOCK",
    "SCHEMA_VERSION",
    "connect_options",
    "misconfigured",
    "newer_schema",
    "translated",
]

#: The version of the tables' layout this store writes (see the migration rule).
SCHEMA_VERSION: Literal[1] = 1
#: The lock taken while creating or upgrading the tables (any constant both sides agree on).
SCHEMA_LOCK = 0x6E69_7373_6500
CREATE = (
    "CREATE TABLE IF NOT EXISTS nisse_schema (version integer NOT NULL)",
    "CREATE TABLE IF NOT EXISTS nisse_task_records ("
    " task text NOT NULL, seq bigint NOT NULL CHECK (seq >= 0), record text NOT NULL,"
    " PRIMARY KEY (task, seq))",
    "CREATE TABLE IF NOT EXISTS nisse_task_leases ("
    " task text PRIMARY KEY, holder text NOT NULL, since timestamptz NOT NULL, pid integer)",
)
#: Upgrades by the version they start from: each turns it into the next (none yet).
MIGRATIONS: dict[int, tuple[str, ...]] = {}
# TCP keepalive on both ends: the server drops a vanished client's session (and its
# lease) within idle + interval * count seconds, and the client notices a vanished server.
_KEEPALIVE = {
    "keepalives": "1",
    "keepalives_idle": "10",
    "keepalives_interval": "5",
    "keepalives_count": "3",
}
_SERVER_KEEPALIVE = (
    "-c tcp_keepalives_idle=10 -c tcp_keepalives_interval=5 -c tcp_keepalives_count=3"
)
_CONNECT_TIMEOUT_S = "10"


def connect_options(url: SecretStr, holder: str) -> dict[str, Any]:
    """The connection's options beside the URL: keepalives both ways, a connect timeout
    and the application name, each unless the URL sets its own."""
    given = conninfo_to_dict(url.get_secret_value())
    options: dict[str, Any] = {**_KEEPALIVE, "connect_timeout": _CONNECT_TIMEOUT_S}
    options |= {"application_name": holder[:63], "options": _SERVER_KEEPALIVE}
    return {k: v for k, v in options.items() if k not in given}


def newer_schema(version: int) -> TaskStoreUnavailable:
    """The refusal of tables newer than this store writes."""
    return TaskStoreUnavailable(
        f"the database's task tables are version {version}, newer than this "
        f"nisse_llm writes ({SCHEMA_VERSION}): upgrade nisse_llm"
    )


@contextmanager
def translated(url: SecretStr) -> Iterator[None]:
    """Every psycopg error as `TaskStoreMisconfigured` when only the operator can cure it
    (`misconfigured`), else `TaskStoreUnavailable`; the message without the URL's password
    (and without the psycopg exception chained, whose text might hold it)."""
    try:
        yield
    except psycopg.Error as exc:
        message = scrubbed(str(exc).strip() or type(exc).__name__, url)
        where = f"the task store at {redacted_url(url)}"
        cure = misconfigured(message, exc.sqlstate, url)
        if cure is not None:
            raise TaskStoreMisconfigured(
                f"{where} refused us ({type(exc).__name__}: {message}); {cure}",
                sqlstate=exc.sqlstate,
            ) from None
        raise TaskStoreUnavailable(
            f"{where} failed ({type(exc).__name__}: {message}); "
            "the work is kept: resume the task when the database is back",
            sqlstate=exc.sqlstate,
        ) from None


# What a connection refused at login says: psycopg gives it no SQLSTATE, only the
# server's words (``FATAL:  password authentication failed for user "u"``).
_LOGIN_REFUSALS = (
    ("password authentication failed", "password"),
    ("no password supplied", "no-password"),
    ("no pg_hba.conf entry", "hba"),
    ("database .* does not exist", "database"),
    ("role .* does not exist", "role"),
)


def misconfigured(message: str, sqlstate: str | None, url: SecretStr) -> str | None:
    """What the operator must grant or set when the store refused us for a reason no
    retry cures (a password, a privilege, a missing database or role), else None."""
    if sqlstate == "42501":
        kind: str | None = "privilege"
    elif sqlstate == "3D000":
        kind = "database"
    elif sqlstate is not None and sqlstate.startswith("28"):
        kind = "password"
    else:
        kind = next((k for words, k in _LOGIN_REFUSALS if re.search(words, message)), None)
    if kind is None:
        return None
    user = conninfo_to_dict(url.get_secret_value()).get("user") or "the URL's user"
    return _CURES[kind].format(user=user)


_SET_PASSWORD = (
    "set the password libpq reads (PGPASSWORD, or a line in ~/.pgpass), or the URL in "
    "NISSE_TASK_STORE or the TOML's task_store (never on a command line)"
)
_CURES = {
    "password": "the password was refused: " + _SET_PASSWORD,
    "no-password": "no password was given: " + _SET_PASSWORD,
    "hba": "the server's pg_hba.conf admits no such login: allow this host and user there",
    "database": "create the database the URL names (CREATE DATABASE), or fix the URL",
    "role": "create the role the URL names (CREATE ROLE ... LOGIN), or fix the URL",
    "privilege": (
        "grant {user} what the task tables need: CREATE on the schema "
        "(GRANT CREATE ON SCHEMA public TO {user}) for the first use, or create the tables "
        "as their owner once; then SELECT, INSERT, UPDATE, DELETE on nisse_schema, "
        "nisse_task_records and nisse_task_leases"
    ),
}
