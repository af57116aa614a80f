"""What both PostgreSQL stores share beside their I/O: the tables' SQL (the package's
``sql/`` files), the connection options and the translation of psycopg's errors.
`nisse_llm.task.postgres` says what the stores promise."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import resources
from typing import Any, Literal

import psycopg
from psycopg.conninfo import conninfo_to_dict
from pydantic import SecretStr

from nisse_llm.errors import ConfigError, TaskStoreMisconfigured, TaskStoreUnavailable
from nisse_llm.task._logread import LogRead
from nisse_llm.task.dsn import redacted_url, scrubbed
from nisse_llm.task.standing import standing

__all__ = [
    "DEFAULT_SCHEMA",
    "HEARTBEAT_S",
    "LEASE_S",
    "LOCK_TIMEOUT_S",
    "POOL_MAX",
    "SCHEMA_LOCK",
    "SCHEMA_VERSION",
    "STANDING_SET",
    "STATEMENT_TIMEOUT_S",
    "Tables",
    "connect_options",
    "create_sql",
    "migration_sql",
    "misconfigured",
    "newer_schema",
    "standing_values",
    "translated",
]

#: The version of the tables' layout this store writes (``sql/schema.sql``); version 1 was
#: the tables in ``public``, made at run time; version 2 had no ``nisse_tasks``.
SCHEMA_VERSION: Literal[3] = 3
#: The schema the tables live in unless the store is given another.
DEFAULT_SCHEMA = "nisse"
#: The lock taken while creating or upgrading the tables: the two-key form, its first key
#: "niss" so it cannot meet another application's single-key locks or one of ours.
SCHEMA_LOCK = (0x6E69_7373, 1)
#: How long a task's lease lasts unless renewed, and how often its holder renews it: a
#: holder that dies or stops frees its tasks at most ``LEASE_S`` after its last renewal.
LEASE_S = 15.0
HEARTBEAT_S = 5.0
#: The most connections one process's stores open to one database (and schema) at once.
POOL_MAX = 10
#: The longest a statement of the store's may run, and wait for a lock, by default: a
#: stuck write fails (`TaskStoreUnavailable`, the work kept) instead of waiting forever.
STATEMENT_TIMEOUT_S = 30.0
LOCK_TIMEOUT_S = 10.0
_SCHEMA_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")


class Tables:
    """The task tables' names in ``schema`` (a lower-case SQL name, else `ConfigError`),
    qualified, so no statement depends on a session's ``search_path``."""

    def __init__(self, schema: str = DEFAULT_SCHEMA) -> None:
        if not _SCHEMA_NAME.fullmatch(schema):
            raise ConfigError(
                f"the task store's schema {schema!r} is not a plain SQL name (lower-case "
                "letters, digits and _, not starting with a digit, at most 63)"
            )
        self.schema = schema
        self.version = f'"{schema}".nisse_schema'
        self.records = f'"{schema}".nisse_task_records'
        self.tasks = f'"{schema}".nisse_tasks'
        self.epochs = f'"{schema}".nisse_lease_epochs'

    def take_lease(self) -> str:
        """Take a task's lease where it is free, expired or epoch ``%(mine)s`` (this
        store's own), in one statement: the next epoch, the holder, an expiry
        ``%(lease_s)s`` from now; returns (epoch, records), no row while another holder's
        lease runs."""
        return (
            f"INSERT INTO {self.tasks} AS t (key, holder, since, epoch, lease_expires)"
            f" VALUES (%(key)s, %(holder)s, now(), nextval('{self.epochs}'),"
            " now() + make_interval(secs => %(lease_s)s))"
            " ON CONFLICT (key) DO UPDATE SET holder = excluded.holder, since = now(),"
            " epoch = excluded.epoch, lease_expires = excluded.lease_expires"
            " WHERE t.holder IS NULL OR t.lease_expires < now() OR t.epoch = %(mine)s"
            " RETURNING t.epoch, t.records"
        )

    def append(self) -> str:
        """Append records fenced by the lease, in one statement: the task's row moves on
        (next number, standing, expiry renewed) only while ``%(epoch)s`` is its epoch and
        ``%(first)s`` its next number, and the rows go in only if it did."""
        return (
            f"WITH fence AS (UPDATE {self.tasks} SET records = %(next)s,"
            " lease_expires = now() + make_interval(secs => %(lease_s)s),"
            f" {STANDING_SET}"
            " WHERE key = %(key)s AND epoch = %(epoch)s AND records = %(first)s RETURNING key)"
            f" INSERT INTO {self.records} (task, seq, record)"
            " SELECT fence.key, r.seq, r.record FROM fence,"
            " unnest(%(seqs)s::bigint[], %(lines)s::text[]) AS r (seq, record)"
        )


#: The standing columns of a task's row, set from `standing_values`.
STANDING_SET = (
    "parent = %(parent)s, status = %(status)s, calls = %(calls)s,"
    " unknown_calls = %(unknown_calls)s, cost_usd = %(cost_usd)s,"
    " unpriced_calls = %(unpriced_calls)s, approvals = %(approvals)s, pin = %(pin)s,"
    " last_activity = %(last_activity)s"
)


def standing_values(found: LogRead) -> dict[str, Any]:
    """The parameters of `STANDING_SET` for a task whose records are ``found``."""
    return vars(standing(found)).copy()


def create_sql(schema: str) -> str:
    """``sql/schema.sql`` for ``schema``: the tables of this version, for an empty database."""
    return _sql("schema.sql", schema)


def migration_sql(schema: str) -> dict[int, tuple[str, str]]:
    """The upgrades by the version they lead to: (file name, its SQL for ``schema``)."""
    files = resources.files("nisse_llm.task") / "sql"
    steps: dict[int, tuple[str, str]] = {}
    for entry in files.iterdir():
        if (found := re.fullmatch(r"(\d{4})_\w+\.sql", entry.name)) is not None:
            steps[int(found[1])] = (entry.name, _sql(entry.name, schema))
    return steps


def _sql(name: str, schema: str) -> str:
    text = (resources.files("nisse_llm.task") / "sql" / name).read_text(encoding="utf-8")
    return text.replace("{schema}", f'"{Tables(schema).schema}"')


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


def connect_options(
    url: SecretStr,
    holder: str,
    *,
    statement_timeout_s: float = STATEMENT_TIMEOUT_S,
    lock_timeout_s: float = LOCK_TIMEOUT_S,
) -> dict[str, Any]:
    """The connection's options beside the URL: keepalives both ways, a connect timeout,
    the application name, and the session's ``statement_timeout`` and ``lock_timeout``
    (0: none), each unless the URL sets its own (an ``options`` in the URL replaces the
    server settings here whole)."""
    given = conninfo_to_dict(url.get_secret_value())
    server = (
        f"{_SERVER_KEEPALIVE} -c statement_timeout={round(statement_timeout_s * 1000)}"
        f" -c lock_timeout={round(lock_timeout_s * 1000)}"
    )
    options: dict[str, Any] = {**_KEEPALIVE, "connect_timeout": _CONNECT_TIMEOUT_S}
    options |= {"application_name": holder[:63], "options": server}
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
        "grant {user} what the task tables need: USAGE on their schema, SELECT, "
        "INSERT, UPDATE, DELETE on its tables (nisse_schema, nisse_task_records, "
        "nisse_tasks) and USAGE on its sequence nisse_lease_epochs; the tables are made by `nisse-llm task migrate`, run once by "
        "a role that may create the schema"
    ),
}
