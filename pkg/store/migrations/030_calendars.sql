-- Calendars (issue: schedules as operators run them): an owner's named sets
-- of days (dates, in the calendar's zone), time ranges and RRULEs whose
-- days are skipped, named by the recurring jobs whose occurrences they skip
-- (jobs.skip_calendars; NULL, no bytes, for none). The worker skips an
-- occurrence that falls in one, recording the run skipped with the reason.
CREATE TABLE calendars (
    owner_id   uuid NOT NULL,
    name       text NOT NULL,
    timezone   text NOT NULL,
    dates      text[] NOT NULL DEFAULT '{}',
    ranges     jsonb NOT NULL DEFAULT '[]',
    rrules     text[] NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (owner_id, name)
);

ALTER TABLE jobs ADD COLUMN skip_calendars text[];

-- A change to a calendar is audited with the target type 'calendar' (its
-- id the owner's, the name in the change).
ALTER TABLE audit_log DROP CONSTRAINT audit_log_target_type_check;
ALTER TABLE audit_log ADD CONSTRAINT audit_log_target_type_check
    CHECK (target_type IN ('job', 'user', 'key', 'batch', 'bulk', 'flow', 'backfill', 'calendar')) NOT VALID;
