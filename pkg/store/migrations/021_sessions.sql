-- The browser dashboard's sessions. The tock_session cookie holds a random
-- session id (tses_…, 32 random bytes), never the API key it was opened
-- with, so a cookie that leaks (a proxy log, a copied browser profile) can be
-- ended by signing out without revoking the key. Only the SHA-256 of the id
-- is kept: a copy of this table opens no session.
--
-- A session acts through the key it was opened with (key_id): revoking the
-- key, its expiry or disabling its user ends the session on the next request,
-- as for the key itself, and deleting the key deletes its sessions. A session
-- opened with TOCK_ADMIN_TOKEN has no key; admin_binding, an HMAC-SHA256 of
-- the session id under the admin token, ties it to that token, so a new
-- TOCK_ADMIN_TOKEN ends it, while the table alone tells nothing about the
-- token (the session id it was computed over is not stored).
--
-- Sign-out deletes the row; the scheduler's leader deletes the rows past
-- expires_at in its retention pass, through sessions_expires.
CREATE TABLE sessions (
    id_hash       bytea PRIMARY KEY CHECK (octet_length(id_hash) = 32),
    user_id       uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    key_id        uuid REFERENCES api_keys (id) ON DELETE CASCADE,
    admin_binding bytea,
    created_at    timestamptz NOT NULL,
    expires_at    timestamptz NOT NULL,
    CHECK ((key_id IS NULL) <> (admin_binding IS NULL))
);
CREATE INDEX sessions_key ON sessions (key_id) WHERE key_id IS NOT NULL;
CREATE INDEX sessions_user ON sessions (user_id);
CREATE INDEX sessions_expires ON sessions (expires_at);
