-- Jitter (issue: schedules as operators run them). jitter_ms is a job's
-- jitter window and jitter_offset_ms the offset in [0, jitter_ms) its
-- occurrences are due after their nominal times (job.NewJitterOffset); both
-- NULL for none, which costs a job without jitter no bytes.
ALTER TABLE jobs
    ADD COLUMN jitter_ms bigint CHECK (jitter_ms > 0),
    ADD COLUMN jitter_offset_ms bigint CHECK (jitter_offset_ms >= 0 AND jitter_offset_ms < jitter_ms);
