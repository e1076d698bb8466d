-- Dead letters (GET /api/v1/dead-letters): the occurrences whose last attempt
-- ended permanently_failed (its retries ran out, or it was dead-lettered
-- after TOCK_MAX_DELIVERIES deliveries without an outcome) and that nobody has
-- replayed or purged since. dead_letter records which of the two ended it;
-- NULL while it is one. Adding a nullable column rewrites nothing. Run
-- retention drops dead letters with their day's runs.
ALTER TABLE job_runs ADD COLUMN dead_letter text CHECK (dead_letter IN ('replayed', 'purged'));
-- A dead letter is named by its run's id. Only permanently failed runs enter
-- this index, so it stays small. Created on the partitioned table, so every
-- day partition has it; building it reads every run once and holds writes
-- to job_runs meanwhile, as job_runs_search did.
CREATE INDEX job_runs_dead ON job_runs (id) WHERE status = 'permanently_failed';
-- The dead stream in Redis, drained: each entry a worker set aside (one it
-- could not decode, or one dead-lettered after TOCK_MAX_DELIVERIES, whose
-- run is in the dead-letter list) is copied here by the leader, then
-- deleted from the stream, so that none is kept only in Redis. job_id and
-- owner_id are those its member names, when it parses. Kept for
-- TOCK_AUDIT_RETENTION, as the audit log is.
CREATE TABLE dead_entries (
    shard        smallint NOT NULL,
    entry        text NOT NULL,
    set_aside_at timestamptz NOT NULL,
    job_id       uuid,
    owner_id     uuid,
    error        text NOT NULL,
    deliveries   integer NOT NULL,
    fields       jsonb NOT NULL,
    PRIMARY KEY (shard, entry)
);
CREATE INDEX dead_entries_set_aside ON dead_entries (set_aside_at);
