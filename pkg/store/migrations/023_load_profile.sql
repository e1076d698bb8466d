-- A recurring job's load (job.Load, schedule.Schedule.Load): the UTC hours
-- of the day (bits 0-23 of load_hours), minutes of the hour and seconds of
-- the minute (bits 0-59 of load_minutes, load_seconds) it fires in. The
-- owner's limits on occurrences a minute and a second add them up, where
-- per_hour, an hourly average, let a burst within one minute through.
-- per_hour stays, written as before, for the previous release to read.
--
-- NULL for a one-off job, so one-off rows carry nothing, and for a
-- recurring job stored before this migration (or by a dashboard of the
-- previous release during a rolling upgrade) until a dashboard's start-up
-- pass fills it in (store.BackfillLoads); until then it is not counted.
-- Nullable without a default: adding them rewrites nothing.
ALTER TABLE jobs
    ADD COLUMN load_hours integer,
    ADD COLUMN load_minutes bigint,
    ADD COLUMN load_seconds bigint;

-- The start-up pass finds the recurring jobs that can still run and have no
-- load through this index: it holds only those, so once they are filled in
-- it is empty and every later start looks at nothing, and the jobs the
-- current release writes never enter it.
CREATE INDEX jobs_load_unknown ON jobs (id)
    WHERE load_seconds IS NULL AND schedule IS NOT NULL AND status IN ('scheduled', 'paused');

-- The per-second limit, occurrences_per_second, is a user's override in
-- users.limits (jsonb) like every other limit: nothing to change there.
