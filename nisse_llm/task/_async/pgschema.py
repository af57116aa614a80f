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


async def connect(
    url: SecretStr,
    *,
    holder: str = "nisse_llm",
    schema: str = DEFAULT_SCHEMA,
    statement_timeout_s: float = STATEMENT_TIMEOUT_S,
    lock_timeout_s: float = LOCK_TIMEOUT_S,
) -> psycopg.AsyncConnection[Any]:
    """A connection to ``url`` (autocommit; keepalives both ways, a connect timeout and the
    statement and lock timeouts, each unless the URL sets its own), its tables checked
    (`ensure_schema`)."""
    options = connect_options(
        url, holder, statement_timeout_s=statement_timeout_s, lock_timeout_s=lock_timeout_s
    )
    with translated(url):
        conn = await psycopg.AsyncConnection.connect(
            url.get_secret_value(), autocommit=True, prepare_threshold=None, **options
        )
        try:
            await ensure_schema(conn, schema)
        except BaseException:
            await conn.close()
            raise
        return conn


async def ensure_schema(conn: psycopg.AsyncConnection[Any], schema: str = DEFAULT_SCHEMA) -> None:
    """Check that the tables in ``schema`` are this version's; in an empty database, make
    them where the role may. Tables of an older layout, or a role that may not make them,
    are `TaskStoreMisconfigured` saying to run ``nisse-llm task migrate``; newer ones are
    refused (`TaskStoreUnavailable`)."""
    tables = Tables(schema)
    version = await _version(conn, tables.version)
    if version == SCHEMA_VERSION:
        return
    if version is not None and version > SCHEMA_VERSION:
        raise newer_schema(version)
    if version is None and await _version(conn, "public.nisse_schema") is None:
        try:
            await migrate(conn, schema)
        except psycopg.errors.InsufficientPrivilege as exc:
            why = f"and this role may not create them ({exc})"
            raise _run_migrate(schema, why, sqlstate=exc.sqlstate) from None
        return
    raise _run_migrate(schema, f"but are of an older layout (version {version or 1})")


async def migrate(conn: psycopg.AsyncConnection[Any], schema: str = DEFAULT_SCHEMA) -> list[str]:
    """Bring the tables in ``schema`` to this version, in one transaction under the schema
    lock: create them in an empty database (``sql/schema.sql``), or apply each numbered
    migration after the version found (the previous layout, version 1, is the tables in
    ``public``). Returns what was done, one line a step (none: already current).

    A session that waited on the lock while another made the tables can still miss them:
    its catalog cache was read when its transaction began, before the wait. The attempt
    then fails as a duplicate, and is made once more in a new transaction, which sees
    them."""
    try:
        return await _migrate_once(conn, schema)
    except (psycopg.errors.DuplicateTable, psycopg.errors.DuplicateSchema):
        return await _migrate_once(conn, schema)


async def _migrate_once(conn: psycopg.AsyncConnection[Any], schema: str) -> list[str]:
    tables = Tables(schema)
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", SCHEMA_LOCK)
        version = await _version(conn, tables.version)
        if version is None:
            version = await _version(conn, "public.nisse_schema")
        if version is None:
            await conn.execute(create_sql(schema))
            return [f"created the task tables in schema {schema} (version {SCHEMA_VERSION})"]
        if version > SCHEMA_VERSION:
            raise newer_schema(version)
        done = []
        for step, (name, script) in sorted(migration_sql(schema).items()):
            if version < step <= SCHEMA_VERSION:
                await conn.execute(script)
                if step == 3:
                    await _fill_standing(conn, tables)
                done.append(f"applied {name}: version {step - 1} -> {step}")
        return done


async def migrate_database(url: str | SecretStr, *, schema: str = DEFAULT_SCHEMA) -> list[str]:
    """`migrate` the database at ``url`` (``nisse-llm task migrate``): what was done."""
    secret = url if isinstance(url, SecretStr) else SecretStr(url)
    options = connect_options(secret, "nisse-llm task migrate")
    with translated(secret):
        async with await psycopg.AsyncConnection.connect(
            secret.get_secret_value(), autocommit=True, prepare_threshold=None, **options
        ) as conn:
            return await migrate(conn, schema)


def _run_migrate(schema: str, why: str, *, sqlstate: str | None = None) -> TaskStoreMisconfigured:
    return TaskStoreMisconfigured(
        f"the task tables in schema {schema} are not this nisse_llm's (version "
        f"{SCHEMA_VERSION}) {why}: run `nisse-llm task migrate` once, as a role that may "
        "create and alter them, then start the workers",
        sqlstate=sqlstate,
    )


async def _version(conn: psycopg.AsyncConnection[Any], table: str) -> int | None:
    """The version row of ``table`` (a qualified name), None where there is no such table."""
    if not await _one(await conn.execute("SELECT to_regclass(%s) IS NOT NULL", (table,))):
        return None
    row = await (await conn.execute(f"SELECT version FROM {table}")).fetchone()
    return None if row is None else int(row[0])


async def _fill_standing(conn: psycopg.AsyncConnection[Any], tables: Tables) -> None:
    """Each task's row as its records say (`standing`): the upgrade to version 3 made the
    rows with their record count alone."""
    cursor = await conn.execute(f"SELECT key FROM {tables.tasks} ORDER BY key")
    for (key,) in await cursor.fetchall():
        rows = await conn.execute(
            f"SELECT record FROM {tables.records} WHERE task = %s ORDER BY seq", (key,)
        )
        found = decode([str(line).encode() for (line,) in await rows.fetchall()], key)
        await conn.execute(
            f"UPDATE {tables.tasks} SET {STANDING_SET} WHERE key = %(key)s",
            {"key": key, **standing_values(found)},
        )


async def _one(cursor: psycopg.AsyncCursor[Any]) -> Any:
    row = await cursor.fetchone()
    return None if row is None else row[0]
