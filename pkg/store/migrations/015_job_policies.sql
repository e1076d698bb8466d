-- Expiry, overlap and failure alerts (issue 16), and bulk actions' audit.
--
-- expires_after_ms: an attempt that cannot start within this long after it
-- was due is recorded 'expired' and not run; a job whose last occurrence
-- expired ends 'expired'. NULL: no expiry.
-- overlap: what a recurring job's occurrence does while an earlier one of
-- the job still runs: NULL runs it anyway ('allow'), 'skip' records it
-- skipped, 'buffer_one' waits for the running one (at most one waits).
-- overlap_for / overlap_until: the occurrence of a job with an overlap
-- policy that holds the job now, and until when (its lease); overlap_wait /
-- overlap_wait_until: the one occurrence of a buffer_one job waiting for
-- it, and until when it counts as waiting unless it tries again. The start
-- statement takes them with an UPDATE, which Postgres re-checks on the
-- newest row version, so two workers cannot both take them.
-- notify: where to send alerts on failures and recoveries (see job.Notify).
ALTER TYPE run_status ADD VALUE IF NOT EXISTS 'expired';
ALTER TYPE job_status ADD VALUE IF NOT EXISTS 'expired';
ALTER TABLE jobs
    ADD COLUMN expires_after_ms bigint CHECK (expires_after_ms > 0),
    ADD COLUMN overlap text CHECK (overlap IN ('skip', 'buffer_one')),
    ADD COLUMN overlap_for timestamptz,
    ADD COLUMN overlap_until timestamptz,
    ADD COLUMN overlap_wait timestamptz,
    ADD COLUMN overlap_wait_until timestamptz,
    ADD COLUMN notify jsonb;

-- A bulk action (POST /api/v1/jobs:bulk) leaves one entry, targeting the
-- call under an id of its own.
ALTER TABLE audit_log DROP CONSTRAINT audit_log_target_type_check;
ALTER TABLE audit_log ADD CONSTRAINT audit_log_target_type_check CHECK (target_type IN ('job', 'user', 'key', 'batch', 'bulk'));
