-- Isolation between users.
--
-- per_hour: how many times an hour a recurring job runs (NULL for a one-off
-- job, and for a recurring job stored before this migration until the
-- loader next plans it); a user's limit on occurrences per minute adds up
-- those of their scheduled jobs.
ALTER TABLE jobs ADD COLUMN per_hour integer;

-- aborted: an attempt stopped while it ran, by its owner or an administrator
-- (POST /api/v1/jobs/{id}/abort, or disabling the user).
ALTER TYPE run_status ADD VALUE IF NOT EXISTS 'aborted';
