package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// Session is a browser dashboard's sign-in, as stored: the id itself is
// never kept, only its SHA-256, which the caller computes (see migration 021).
type Session struct {
	UserID uuid.UUID
	// KeyID is the API key the session was opened with and acts through;
	// uuid.Nil for a session opened with the admin token, which has an
	// AdminBinding instead.
	KeyID        uuid.UUID
	AdminBinding []byte
	CreatedAt    time.Time
	ExpiresAt    time.Time
}

const insertSessionSQL = `INSERT INTO sessions (id_hash, user_id, key_id, admin_binding, created_at, expires_at)
VALUES ($1, $2, $3, $4, $5, $6)`

// CreateSession stores a session under the SHA-256 of its id. The caller
// has just authenticated the key (or the admin token) it is opened with; a
// key revoked meanwhile leaves a session that authenticates nothing, since
// every use checks the key again.
func (s *Store) CreateSession(ctx context.Context, hash []byte, sess *Session) error {
	var key *uuid.UUID
	if sess.KeyID != uuid.Nil {
		key = &sess.KeyID
	}
	_, err := s.pool.Exec(ctx, insertSessionSQL, hash, sess.UserID, key, sess.AdminBinding, sess.CreatedAt, sess.ExpiresAt)
	if err != nil {
		return fmt.Errorf("create session: %w", translate(err))
	}
	return nil
}

// SessionCredential is what authenticating a session needs: the session,
// the key it acts through (nil for the admin token's), and its user.
type SessionCredential struct {
	Session Session
	Key     *Key
	User    User
}

// sessionCredentialSQL finds a live session with its key and user in one
// round trip. The key's columns are NULL for a session of the admin token.
const sessionCredentialSQL = `SELECT s.key_id, s.admin_binding, s.created_at, s.expires_at,
    k.last_used_at, k.revoked_at, k.scopes, k.expires_at,
    u.id, u.name, u.role, u.created_at, u.disabled_at, u.limits
FROM sessions s JOIN users u ON u.id = s.user_id LEFT JOIN api_keys k ON k.id = s.key_id
WHERE s.id_hash = $1 AND s.expires_at > $2`

// SessionCredential looks a session up by the SHA-256 of its id, as of
// now: an unknown or expired session is job.ErrNotFound. Whether its key
// is live and its user enabled is the caller's to judge, as for a key.
func (s *Store) SessionCredential(ctx context.Context, hash []byte, now time.Time) (*SessionCredential, error) {
	var (
		c                      SessionCredential
		keyID                  *uuid.UUID
		used, revoked, expires *time.Time
		scopes                 []string
		disabled               *time.Time
		limits                 []byte
	)
	err := s.pool.QueryRow(ctx, sessionCredentialSQL, hash, now).Scan(&keyID, &c.Session.AdminBinding,
		&c.Session.CreatedAt, &c.Session.ExpiresAt, &used, &revoked, &scopes, &expires,
		&c.User.ID, &c.User.Name, &c.User.Role, &c.User.CreatedAt, &disabled, &limits)
	if err != nil {
		return nil, fmt.Errorf("session: %w", translate(err))
	}
	c.Session.UserID = c.User.ID
	c.Session.CreatedAt, c.Session.ExpiresAt = c.Session.CreatedAt.UTC(), c.Session.ExpiresAt.UTC()
	c.User.CreatedAt = c.User.CreatedAt.UTC()
	if disabled != nil {
		c.User.DisabledAt = disabled.UTC()
	}
	if err := json.Unmarshal(limits, &c.User.Limits); err != nil {
		return nil, fmt.Errorf("limits of user %s: %w", c.User.ID, err)
	}
	if keyID != nil {
		c.Session.KeyID = *keyID
		k := &Key{ID: *keyID, UserID: c.User.ID, Scopes: scopes}
		if used != nil {
			k.LastUsedAt = used.UTC()
		}
		if revoked != nil {
			k.RevokedAt = revoked.UTC()
		}
		if expires != nil {
			k.ExpiresAt = expires.UTC()
		}
		c.Key = k
	}
	return &c, nil
}

const deleteSessionSQL = `DELETE FROM sessions WHERE id_hash = $1`

// DeleteSession ends a session at once (sign-out). It reports whether there
// was one to end.
func (s *Store) DeleteSession(ctx context.Context, hash []byte) (bool, error) {
	tag, err := s.pool.Exec(ctx, deleteSessionSQL, hash)
	if err != nil {
		return false, fmt.Errorf("delete session: %w", translate(err))
	}
	return tag.RowsAffected() > 0, nil
}

// deleteKeySessionsSQL ends the sessions opened with a key, in the
// transaction that revokes it.
const deleteKeySessionsSQL = `DELETE FROM sessions WHERE key_id = $1`

// removeExpiredSessionsSQL deletes up to $2 sessions expired by $1, oldest
// first, through sessions_expires.
const removeExpiredSessionsSQL = `DELETE FROM sessions WHERE id_hash IN (
    SELECT id_hash FROM sessions WHERE expires_at <= $1 ORDER BY expires_at LIMIT $2)`

// RemoveExpiredSessions removes up to limit sessions expired by now, oldest
// first, and says how many went. An expired session already authenticates
// nothing (SessionCredential filters it out): this only reclaims the rows.
func (s *Store) RemoveExpiredSessions(ctx context.Context, now time.Time, limit int) (int, error) {
	tag, err := s.pool.Exec(ctx, removeExpiredSessionsSQL, now, limit)
	if err != nil {
		return 0, fmt.Errorf("remove expired sessions: %w", translate(err))
	}
	return int(tag.RowsAffected()), nil
}
