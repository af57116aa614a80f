-- The task tables, as this nisse_llm writes them (version 3), for an empty database.
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

-- A row per task: its lease (holder, epoch, expiry: taken when free or expired, every
-- append fenced by the epoch) and what `task list` shows, kept in the transaction of
-- each append. `records` is the next record's number.
CREATE TABLE {schema}.nisse_tasks (
    key text PRIMARY KEY,
    parent text,
    status text NOT NULL DEFAULT 'new',
    holder text,
    since timestamptz,
    epoch bigint NOT NULL DEFAULT 0,
    lease_expires timestamptz,
    records bigint NOT NULL DEFAULT 0 CHECK (records >= 0),
    calls bigint NOT NULL DEFAULT 0,
    unknown_calls bigint NOT NULL DEFAULT 0,
    cost_usd numeric NOT NULL DEFAULT 0,
    unpriced_calls bigint NOT NULL DEFAULT 0,
    approvals bigint NOT NULL DEFAULT 0,
    pin text,
    created timestamptz NOT NULL DEFAULT now(),
    last_activity timestamptz
);
CREATE INDEX nisse_tasks_status ON {schema}.nisse_tasks (status, key);
-- Every lease taken gets the next number: an epoch is never reused, even for a task
-- deleted and made again, so a stale holder's fence can never match.
CREATE SEQUENCE {schema}.nisse_lease_epochs;

INSERT INTO {schema}.nisse_schema (version) VALUES (3);
