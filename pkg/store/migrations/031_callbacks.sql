-- Callbacks (issue: schedules as operators run them): a job whose notify
-- has a callback gets, for each outcome it asks for, a row here written in
-- the same statement as the outcome (store.FinishRuns), so that no
-- recorded outcome loses its callback. Workers claim due rows (next_at),
-- push next_at a lease ahead while they deliver, delete a row once its URL
-- takes it, and push next_at by a backoff when it does not (tries counts
-- the deliveries tried). body is the JSON posted: the outcome and the
-- target's answer (at most 64 KiB of its body). The URL and its headers
-- are read from the job's notify at delivery, where its credentials are
-- sealed.
CREATE TABLE callbacks (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    owner_id      uuid NOT NULL,
    job_id        uuid NOT NULL,
    scheduled_for timestamptz NOT NULL,
    attempt       smallint NOT NULL,
    event         text NOT NULL,
    body          bytea NOT NULL,
    tries         integer NOT NULL DEFAULT 0,
    next_at       timestamptz NOT NULL,
    created_at    timestamptz NOT NULL,
    last_error    text
);

CREATE INDEX callbacks_next_at ON callbacks (next_at);
CREATE INDEX callbacks_owner_next_at ON callbacks (owner_id, next_at);
