-- Finished jobs (in jobs_idle) by when they finished, for the scheduler's
-- retention, which removes them TOCK_JOB_RETENTION after that, with their
-- runs. Building it reads jobs_idle once.
CREATE INDEX jobs_idle_finished ON jobs_idle (updated_at)
    WHERE status IN ('completed', 'permanently_failed', 'cancelled');
