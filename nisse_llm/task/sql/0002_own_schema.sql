-- Version 1 -> 2: the tables move from public, where version 1 made them at run time,
-- into the store's own schema ({schema}, quoted), so the runtime role needs no CREATE
-- on public and the names cannot clash with another application's.
CREATE SCHEMA IF NOT EXISTS {schema};
ALTER TABLE public.nisse_schema SET SCHEMA {schema};
ALTER TABLE public.nisse_task_records SET SCHEMA {schema};
ALTER TABLE public.nisse_task_leases SET SCHEMA {schema};
UPDATE {schema}.nisse_schema SET version = 2;
