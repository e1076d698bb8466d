-- Labels: up to 20 pairs of the caller's own references on a job
-- ("customer": "1234"). jobs.labels holds them for display (NULL when
-- none); job_labels holds one row per pair, so that a filter walks only the
-- jobs that carry the label, newest first, whatever the number of jobs.
-- Unlabelled jobs cost nothing.
ALTER TABLE jobs ADD COLUMN labels jsonb;

CREATE TABLE job_labels (
    owner_id uuid NOT NULL,
    key      text NOT NULL,
    value    text NOT NULL,
    job_id   uuid NOT NULL,
    PRIMARY KEY (owner_id, key, value, job_id)
);
-- An administrator's filter across owners.
CREATE INDEX job_labels_any_owner ON job_labels (key, value, job_id);
