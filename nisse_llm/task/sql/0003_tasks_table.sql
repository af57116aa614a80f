-- Version 2 -> 3: a row per task (nisse_tasks) holds its fenced lease (holder, epoch,
-- expiry, replacing the session advisory lock and nisse_task_leases) and what `task
-- list` shows. Existing tasks get a row with their next record number here; the runner
-- then fills the other columns from each task's records, in the same transaction.
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
INSERT INTO {schema}.nisse_tasks (key, status, records, created, last_activity)
    SELECT task, 'unknown', max(seq) + 1, now(), now()
    FROM {schema}.nisse_task_records GROUP BY task;
DROP TABLE {schema}.nisse_task_leases;
UPDATE {schema}.nisse_schema SET version = 3;
