-- Debounce (issue: flow control). A one-off job may carry a debounce key
-- and window (jobs.debounce, {"key", "window"}; NULL for none). debounces
-- says which job of an owner's last took each key: a create whose key is
-- held by a job that has not started folds into that job instead of making
-- a new one. A row whose job is gone or finished is taken over by the next
-- create; retention and erasure delete it with its job.
ALTER TABLE jobs ADD COLUMN debounce jsonb;
CREATE TABLE debounces (
    owner_id uuid NOT NULL,
    key      text NOT NULL,
    job_id   uuid NOT NULL,
    PRIMARY KEY (owner_id, key)
);
