-- Recurring jobs, schedule generations and skipped occurrences.

ALTER TYPE run_status ADD VALUE 'skipped';

ALTER TABLE jobs
    ADD COLUMN generation  integer NOT NULL DEFAULT 0,
    ADD COLUMN occurrences integer NOT NULL DEFAULT 0,
    ADD COLUMN timezone    text,
    ADD COLUMN last_at     timestamptz,
    ADD COLUMN schedule    jsonb;
