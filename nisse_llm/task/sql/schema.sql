-- The task tables, as this nisse_llm writes them (version 2), for an empty database.
-- {schema} is the store's schema, quoted; the runner applies this in one transaction.
CREATE SCHEMA IF NOT EXISTS {schema};

-- One row: the layout's version (migrations raise it one step at a time).
CREATE TABLE {schema}.nisse_schema (version integer NOT NULL);

-- A record per row, each the JSON line a task file would hold.
CREATE TABLE {schema}.nisse_task_records (
    task text NOT NULL,
    seq bigint NOT NULL CHECK (seq >= 0),
    record text NOT NULL,
    PRIMARY KEY (task, seq)
);

-- Who drives each task, and since when.
CREATE TABLE {schema}.nisse_task_leases (
    task text PRIMARY KEY,
    holder text NOT NULL,
    since timestamptz NOT NULL,
    pid integer
);

INSERT INTO {schema}.nisse_schema (version) VALUES (2);
