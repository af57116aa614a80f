# Generated from nisse_llm/task/_async/pgschema.py by scripts/gen_sync.py (unasync); do not edit.
"""The task tables' version, written once: `connect` (a checked connection), `ensure_schema`
and `migrate` (``nisse-llm task migrate``) for the async PostgreSQL store;
``_sync/pgschema.py`` is generated from this source by ``scripts/gen_sync.py``."""

from __future__ import annotations

from typing import Any

import psycopg
from pydantic import SecretStr

from nisse_llm.errors import TaskStoreMisconfigured
from nisse_llm.task._logread import decode
from nisse_llm.task._pg import (
    DEFAULT_SCHEMA,
    LOCK_TIMEOUT_S,
    SCHEMA_LOCK,
    SCHEMA_VERSION,
    STANDING_SET,
    STATEMENT_TIMEOUT_S,
    Tables,
    connect_options,
    create_sql,
    migration_sql,
    newer_schema,
    standing_values,
    translated,
)

__all__ = ["connect", "ensure_schema", "migrate", "migrate_database"]


def connect(
    url: SecretStr,
    *,
    holder: str = "nisse_llm",
    schema: str = DEFAULT_SCHEMA,
    statement_timeout_s: float = STATEMENT_TIMEOUT_S,
    lock_timeout_s: float = LOCK_TIMEOUT_S,
) -> psycopg.Connection[Any]:
    """A connection to ``url`` (autocommit; keepalives both ways, a connect timeout and the
    statement and lock timeouts, each unless the URL sets its own), its tables checked
    (`ensure_schema`)."""
    options = connect_options(
        url, holder, statement_timeout_s=statement_timeout_s, lock_timeout_s=lock_timeout_s
    )
    with translated(url):
        conn = psycopg.Connection.connect(
            url.get_secret_value(), autocommit=True, prepare_threshold=None, **options
        )
        try:
            ensure_schema(conn, schema)
        except BaseException:
            conn.close()
            raise
        return conn


def ensure_schema(conn: psycopg.Connection[Any], schema: str = DEFAULT_SCHEMA) -> None:
    """Check that the tables in ``schema`` are this version's; in an empty database, make
    them where the role may. Tables of an older layout, or a role that may not make them,
    are `TaskStoreMisconfigured` saying to run ``nisse-llm task migrate``; newer ones are
    refused (`TaskStoreUnavailable`)."""
    tables = Tables(schema)
    version = _version(conn, tables.version)
    if version == SCHEMA_VERSION:
        return
    if version is not None and version > SCHEMA_VERSION:
        raise newer_schema(version)
    if version is None and _version(conn, "public.nisse_schema") is None:
        try:
            migrate(conn, schema)
        except psycopg.errors.InsufficientPrivilege as exc:
            why = f"and this role may not create them ({exc})"
            raise _run_migrate(schema, why, sqlstate=exc.sqlstate) from None
        return
    raise _run_migrate(schema, f"but are of an older layout (version {version or 1})")


def migrate(conn: psycopg.Connection[Any], schema: str = DEFAULT_SCHEMA) -> list[str]:
    """Bring the tables in ``schema`` to this version, in one transaction under the schema
    lock: create them in an empty database (``sql/schema.sql``), or apply each numbered
    migration after the version found (the previous layout, version 1, is the tables in
    ``public``). Returns what was done, one line a step (none: already current).

    A session that waited on the lock while another made the tables can still miss them:
    its catalog cache was read when its transaction began, before the wait. The attempt
    then fails as a duplicate, and is made once more in a new transaction, which sees
    them."""
    try:
        return _migrate_once(conn, schema)
    except (psycopg.errors.DuplicateTable, psycopg.errors.DuplicateSchema):
        return _migrate_once(conn, schema)


def _migrate_once(conn: psycopg.Connection[Any], schema: str) -> list[str]:
    tables = Tables(schema)
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", SCHEMA_LOCK)
        version = _version(conn, tables.version)
        if version is None:
            version = _version(conn, "public.nisse_schema")
        if version is None:
            conn.execute(create_sql(schema))
            return [f"created the task tables in schema {schema} (version {SCHEMA_VERSION})"]
        if version > SCHEMA_VERSION:
            raise newer_schema(version)
        done = []
        for step, (name, script) in sorted(migration_sql(schema).items()):
            if version < step <= SCHEMA_VERSION:
                conn.execute(script)
                if step == 3:
                    _fill_standing(conn, tables)
                done.append(f"applied {name}: version {step - 1} -> {step}")
        return done


def migrate_database(url: str | SecretStr, *, schema: str = DEFAULT_SCHEMA) -> list[str]:
    """`migrate` the database at ``url`` (``nisse-llm task migrate``): what was done."""
    secret = url if isinstance(url, SecretStr) else SecretStr(url)
    options = connect_options(secret, "nisse-llm task migrate")
    with (
        translated(secret),
        psycopg.Connection.connect(
            secret.get_secret_value(), autocommit=True, prepare_threshold=None, **options
        ) as conn,
    ):
        return migrate(conn, schema)


def _run_migrate(schema: str, why: str, *, sqlstate: str | None = None) -> TaskStoreMisconfigured:
    return TaskStoreMisconfigured(
        f"the task tables in schema {schema} are not this nisse_llm's (version "
        f"{SCHEMA_VERSION}) {why}: run `nisse-llm task migrate` once, as a role that may "
        "create and alter them, then start the workers",
        sqlstate=sqlstate,
    )


def _version(conn: psycopg.Connection[Any], table: str) -> int | None:
    """The version row of ``table`` (a qualified name), None where there is no such table."""
    if not _one(conn.execute("SELECT to_regclass(%s) IS NOT NULL", (table,))):
        return None
    row = (conn.execute(f"SELECT version FROM {table}")).fetchone()
    return None if row is None else int(row[0])


def _fill_standing(conn: psycopg.Connection[Any], tables: Tables) -> None:
    """Each task's row as its records say (`standing`): the upgrade to version 3 made the
    rows with their record count alone."""
    cursor = conn.execute(f"SELECT key FROM {tables.tasks} ORDER BY key")
    for (key,) in cursor.fetchall():
        rows = conn.execute(
            f"SELECT record FROM {tables.records} WHERE task = %s ORDER BY seq", (key,)
        )
        found = decode([str(line).encode() for (line,) in rows.fetchall()], key)
        conn.execute(
            f"UPDATE {tables.tasks} SET {STANDING_SET} WHERE key = %(key)s",
            {"key": key, **standing_values(found)},
        )


def _one(cursor: psycopg.Cursor[Any]) -> Any:
    row = cursor.fetchone()
    return None if row is None else row[0]
