"""What both PostgreSQL stores share beside their I/O: the tables, the migration steps,
the connection options and the translation of psycopg's errors. `nisse_llm.task.postgres`
says what the stores promise."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Literal

import psycopg
from psycopg.conninfo import conninfo_to_dict
from pydantic import SecretStr

from nisse_llm.errors import TaskStoreUnavailable
from nisse_llm.task.dsn import redacted_url, scrubbed

__all__ = [
    "CREATE",
    "MIGRATIONS",
    "SCHEMA_LOCK",
    "SCHEMA_VERSION",
    "connect_options",
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
    """Every psycopg error as `TaskStoreUnavailable`, its message without the URL's password
    (and without the psycopg exception chained, whose text might hold it)."""
    try:
        yield
    except psycopg.Error as exc:
        message = scrubbed(str(exc).strip() or type(exc).__name__, url)
        raise TaskStoreUnavailable(
            f"the task store at {redacted_url(url)} failed ({type(exc).__name__}: {message}); "
            "the work is kept: resume the task when the database is back",
            sqlstate=exc.sqlstate,
        ) from None
