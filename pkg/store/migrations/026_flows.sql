-- Flow keys (issue: flow control). A job may name a flow key of its owner's
-- choosing (jobs.flow, the request's {"key", "concurrency", "rate"}; NULL
-- for none, which costs a row nothing). The key's limits live in flows, one
-- row per (owner, key): set by PUT /api/v1/flows/{key} or by a job that
-- gives limits, created bare by a job that names only the key. The
-- scheduler's leader writes the rows changed since its last round to Redis,
-- where the publisher enforces them (flows_updated finds them).
ALTER TABLE jobs ADD COLUMN flow jsonb;
CREATE TABLE flows (
    owner_id       uuid NOT NULL,
    key            text NOT NULL,
    concurrency    integer CHECK (concurrency > 0),
    rate_count     integer CHECK (rate_count > 0),
    rate_period_ms bigint CHECK (rate_period_ms > 0),
    paused         boolean NOT NULL DEFAULT false,
    created_at     timestamptz NOT NULL,
    updated_at     timestamptz NOT NULL,
    PRIMARY KEY (owner_id, key),
    CHECK ((rate_count IS NULL) = (rate_period_ms IS NULL))
);
CREATE INDEX flows_updated ON flows (updated_at, owner_id, key);
-- How long an attempt waited behind its flow key's limits before it was
-- published: late by design, kept apart from its lateness (started_at -
-- due_at - throttled). NULL for none.
ALTER TABLE job_runs ADD COLUMN throttled_ms integer;
-- A change to a flow key is audited with the target type 'flow' (its id the
-- owner's, the key in the change). Rows already there pass the new check,
-- so it is added without a scan of the log.
ALTER TABLE audit_log DROP CONSTRAINT audit_log_target_type_check;
ALTER TABLE audit_log ADD CONSTRAINT audit_log_target_type_check
    CHECK (target_type IN ('job', 'user', 'key', 'batch', 'bulk', 'flow')) NOT VALID;
