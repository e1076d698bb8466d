-- Per-job retention and run history. retention_ms, when set, replaces
-- TOCK_JOB_RETENTION for the job once it has finished; history = 'failures'
-- keeps only the newest 100 completed runs of the job (failed ones stay for
-- the retention period): the worker's finish statement trims them as it
-- records new ones. Both columns are NULL for the default, so adding
-- them rewrites nothing.
ALTER TABLE jobs
    ADD COLUMN retention_ms bigint CHECK (retention_ms > 0),
    ADD COLUMN history text CHECK (history = 'failures');

-- When a finished job with its own retention is due to go. timestamptz plus
-- an interval of milliseconds does not depend on the session's time zone,
-- which makes this immutable, as an index expression must be.
CREATE FUNCTION tock_purge_at(finished timestamptz, retention_ms bigint) RETURNS timestamptz
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN finished + retention_ms * interval '1 millisecond';

-- The scheduler's retention finds finished jobs through two indexes: those
-- under the operator's default by when they finished, those with their own
-- retention by when they are due to go. The default's index of migration 009
-- is narrowed to the jobs it serves, so a long per-job retention never makes
-- the default's scan step over rows it may not remove.
CREATE INDEX jobs_idle_finished_default ON jobs_idle (updated_at)
    WHERE status IN ('completed', 'permanently_failed', 'cancelled') AND retention_ms IS NULL;
DROP INDEX jobs_idle_finished;
CREATE INDEX jobs_idle_purge ON jobs_idle (tock_purge_at(updated_at, retention_ms))
    WHERE status IN ('completed', 'permanently_failed', 'cancelled') AND retention_ms IS NOT NULL;

