-- Backfills (issue: schedules as operators run them). A backfill runs the
-- occurrences of a recurring job's schedule whose nominal times fall in a
-- past range [from_at, to_at) and that never ran, paced by the scheduler's
-- leader (services/scheduler/backfill.go): cursor_at is the nominal time
-- from which it plans next, inflight the due times (unix ms) of the
-- occurrences it queued whose outcome is not final yet (queued under the
-- job's generation), and the counters what became of the others.
-- progressed_at is when inflight last changed:
-- a backfill that stops progressing queues its inflight occurrences again
-- (Redis may have lost them; a start of one that already ran is refused).
CREATE TABLE backfills (
    id            uuid PRIMARY KEY,
    owner_id      uuid NOT NULL,
    job_id        uuid NOT NULL,
    from_at       timestamptz NOT NULL,
    to_at         timestamptz NOT NULL CHECK (to_at > from_at),
    overlap       text NOT NULL CHECK (overlap IN ('allow', 'skip', 'buffer_one')),
    status        text NOT NULL CHECK (status IN ('running', 'completed', 'cancelled')),
    total         integer NOT NULL CHECK (total >= 0),
    cursor_at     timestamptz NOT NULL,
    inflight      bigint[] NOT NULL DEFAULT '{}',
    generation    integer NOT NULL DEFAULT 0,
    queued        integer NOT NULL DEFAULT 0,
    existing      integer NOT NULL DEFAULT 0,
    completed     integer NOT NULL DEFAULT 0,
    failed        integer NOT NULL DEFAULT 0,
    skipped       integer NOT NULL DEFAULT 0,
    created_at    timestamptz NOT NULL,
    progressed_at timestamptz NOT NULL,
    finished_at   timestamptz,
    reason        text
);
-- The leader's walk over the running ones, and an owner's count of them.
CREATE INDEX backfills_running ON backfills (id) WHERE status = 'running';
CREATE INDEX backfills_owner_running ON backfills (owner_id) WHERE status = 'running';
-- A job's backfills, newest first.
CREATE INDEX backfills_job ON backfills (job_id, created_at DESC);

-- The backfill whose occurrence a run is; NULL (no bytes) for every other.
ALTER TABLE job_runs ADD COLUMN backfill_id uuid;

-- A backfill's cancel is audited with the target type 'backfill' (its start
-- as the job's). Rows already there pass the new check, so it is added
-- without a scan of the log.
ALTER TABLE audit_log DROP CONSTRAINT audit_log_target_type_check;
ALTER TABLE audit_log ADD CONSTRAINT audit_log_target_type_check
    CHECK (target_type IN ('job', 'user', 'key', 'batch', 'bulk', 'flow', 'backfill')) NOT VALID;
