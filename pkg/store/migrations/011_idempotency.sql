-- Idempotency-Key on API writes: one row per (caller, key), holding the hash
-- of the first request and, once it was answered, its response. status is
-- NULL while the first request is in flight. The dashboard replays the
-- response to a repeat within 24 h; the scheduler leader removes rows older
-- than that.
CREATE TABLE idempotency_keys (
    owner_id     uuid NOT NULL,
    key          text NOT NULL,
    request_hash bytea NOT NULL,
    created_at   timestamptz NOT NULL,
    status       smallint,
    content_type text,
    location     text,
    response     bytea,
    PRIMARY KEY (owner_id, key)
);
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);
