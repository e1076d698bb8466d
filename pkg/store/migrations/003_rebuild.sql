-- Finding retries Redis lost (their attempt failed, the next has no row yet)
-- must not scan every run; failed attempts are few.
CREATE INDEX job_runs_failed ON job_runs (scheduled_for) WHERE status = 'failed';

-- Why a job was paused by tock itself (repeated permanent failures).
ALTER TABLE jobs ADD COLUMN paused_reason text;
