-- Job keys: a job may carry its owner's own name for it (jobs.key), unique
-- per owner among the jobs that can still run. job_keys maps (owner, key)
-- to the job that last took the key; a new job takes it over only once
-- that job has finished or is gone, so nothing has to be released when a
-- job ends and the hot path writes nothing here.
ALTER TABLE jobs ADD COLUMN key text;

CREATE TABLE job_keys (
    owner_id uuid NOT NULL,
    key      text NOT NULL,
    job_id   uuid NOT NULL,
    PRIMARY KEY (owner_id, key)
);
