-- Users, their API keys, their limits, and the audit log of every change made
-- through the API.

-- limits holds a user's own overrides of the operator's global limits (absent
-- fields fall back to them): requests_per_minute, request_burst,
-- jobs_per_minute, job_burst, max_active_jobs.
ALTER TABLE users ADD COLUMN limits jsonb NOT NULL DEFAULT '{}';
CREATE INDEX users_created ON users (created_at, id);

-- A key is tock_<prefix>_<secret>. Only the SHA-256 of the whole key is kept;
-- the prefix, unique and public, finds the row without a scan, and the hashes
-- are compared in constant time. last_used_at is refreshed at most once a
-- minute, so authentication does not write on every request.
CREATE TABLE api_keys (
    id           uuid PRIMARY KEY,
    user_id      uuid NOT NULL REFERENCES users (id),
    name         text NOT NULL DEFAULT '',
    prefix       text NOT NULL UNIQUE,
    hash         bytea NOT NULL,
    created_at   timestamptz NOT NULL,
    last_used_at timestamptz,
    revoked_at   timestamptz
);
CREATE INDEX api_keys_user ON api_keys (user_id, created_at);

-- One row per change made through the API, written in the transaction of the
-- change itself where there is one. change never holds a secret: payloads are
-- recorded as changed or not, never by value.
CREATE TABLE audit_log (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at          timestamptz NOT NULL,
    actor_id    uuid NOT NULL,
    action      text NOT NULL,
    target_type text NOT NULL CHECK (target_type IN ('job', 'user', 'key')),
    target_id   uuid NOT NULL,
    change      jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX audit_log_actor ON audit_log (actor_id, id);
CREATE INDEX audit_log_target ON audit_log (target_id, id);
CREATE INDEX audit_log_at ON audit_log (at);

-- The cap on active jobs per user counts through this index, which holds only
-- the jobs that can still run, not a user's whole history.
CREATE INDEX jobs_owner_active ON jobs (owner_id) WHERE status IN ('scheduled', 'paused');
