-- SLOs (issue: schedules as operators run them). A job's slo: late_after
-- (an occurrence should start at most this long after it is due) and
-- silent_after (a recurring job should complete an occurrence at least this
-- often), NULL for none. The scheduler's leader checks the jobs that have
-- one, a page a round, through jobs_slo; slo_states holds each such job's
-- breaches, so that each is alerted once and its end once, whichever
-- leader sees it: late_since/silent_since are when the breach began (NULL:
-- none), late_ms the lateness that began it, seen_to the newest occurrence
-- whose start a check has judged (each is judged once; a change of the
-- job's plan, its generation, starts judging again from the check),
-- watching_since when
-- the job was first checked (silence counts from then at the earliest),
-- checked_at when the check last wrote the row (when seen_to moved).
ALTER TABLE jobs
    ADD COLUMN slo_late_ms bigint CHECK (slo_late_ms > 0),
    ADD COLUMN slo_silent_ms bigint CHECK (slo_silent_ms > 0);

CREATE INDEX jobs_slo ON jobs (id) WHERE slo_late_ms IS NOT NULL OR slo_silent_ms IS NOT NULL;

CREATE TABLE slo_states (
    job_id       uuid PRIMARY KEY,
    owner_id     uuid NOT NULL,
    late_since   timestamptz,
    late_ms      bigint,
    silent_since timestamptz,
    seen_to      timestamptz,
    generation   integer NOT NULL DEFAULT 0,
    watching_since timestamptz NOT NULL,
    checked_at   timestamptz NOT NULL
);

CREATE INDEX slo_states_at_risk ON slo_states (owner_id, job_id) WHERE late_since IS NOT NULL OR silent_since IS NOT NULL;
