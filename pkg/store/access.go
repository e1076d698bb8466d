package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/tockhq/tock/pkg/job"
)

// Roles of users.
const (
	RoleAdmin = "admin"
	RoleUser  = "user"
)

// BootstrapAdmin is the administrator the first migration creates; the
// dashboard's TOCK_ADMIN_TOKEN authenticates as it. It cannot be disabled.
var BootstrapAdmin = uuid.MustParse("00000000-0000-0000-0000-000000000001")

// User is someone who owns jobs and calls the API.
type User struct {
	ID         uuid.UUID
	Name       string
	Role       string
	CreatedAt  time.Time
	DisabledAt time.Time // zero while enabled
	Limits     Limits
}

// Limits are a user's own overrides of the operator's global limits; a nil
// field falls back to the global value.
type Limits struct {
	RequestsPerMinute *int `json:"requests_per_minute,omitempty"`
	RequestBurst      *int `json:"request_burst,omitempty"`
	JobsPerMinute     *int `json:"jobs_per_minute,omitempty"`
	JobBurst          *int `json:"job_burst,omitempty"`
	MaxActiveJobs     *int `json:"max_active_jobs,omitempty"`
	// OccurrencesPerMinute caps how often the user's scheduled recurring
	// jobs may fire together in their busiest minute, OccurrencesPerSecond
	// in their busiest second (see Rates).
	OccurrencesPerMinute *int `json:"occurrences_per_minute,omitempty"`
	OccurrencesPerSecond *int `json:"occurrences_per_second,omitempty"`
	// MaxRunning caps the user's attempts in flight at once (published to
	// the workers and not yet finished); the scheduler's publisher holds the
	// rest back.
	MaxRunning *int `json:"max_running,omitempty"`
}

const userColumns = `id, name, role, created_at, disabled_at, limits`

func scanUser(row pgx.Row) (*User, error) {
	var (
		u        User
		disabled *time.Time
		limits   []byte
	)
	if err := row.Scan(&u.ID, &u.Name, &u.Role, &u.CreatedAt, &disabled, &limits); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(limits, &u.Limits); err != nil {
		return nil, fmt.Errorf("limits of user %s: %w", u.ID, err)
	}
	u.CreatedAt = u.CreatedAt.UTC()
	if disabled != nil {
		u.DisabledAt = disabled.UTC()
	}
	return &u, nil
}

// userShown is what the audit log keeps of a user.
func userShown(u *User) map[string]any {
	return map[string]any{"name": u.Name, "role": u.Role, "limits": u.Limits, "disabled": !u.DisabledAt.IsZero()}
}

const insertUserSQL = `INSERT INTO users (id, name, role, created_at, limits, signing_secret) VALUES ($1, $2, $3, $4, $5, $6)
RETURNING ` + userColumns

// CreateUser stores a new user; u.ID and u.CreatedAt must be set.
func (s *Store) CreateUser(ctx context.Context, u *User, a Audit) (*User, error) {
	limits, err := json.Marshal(u.Limits)
	if err != nil {
		return nil, fmt.Errorf("create user: %w", err)
	}
	secret, err := s.sealSecret(newSigningSecret(), u.ID)
	if err != nil {
		return nil, fmt.Errorf("create user: %w", err)
	}
	var out *User
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		if out, err = scanUser(tx.QueryRow(ctx, insertUserSQL, u.ID, u.Name, u.Role, u.CreatedAt, limits, secret)); err != nil {
			return translate(err)
		}
		return record(ctx, tx, a, u.CreatedAt, TargetUser, out.ID, userShown(out))
	})
	if err != nil {
		return nil, fmt.Errorf("create user: %w", err)
	}
	return out, nil
}

// GetUser returns one user, disabled or not.
func (s *Store) GetUser(ctx context.Context, id uuid.UUID) (*User, error) {
	u, err := scanUser(s.pool.QueryRow(ctx, `SELECT `+userColumns+` FROM users WHERE id = $1`, id))
	if err != nil {
		return nil, fmt.Errorf("get user %s: %w", id, translate(err))
	}
	return u, nil
}

const listUsersSQL = `SELECT ` + userColumns + ` FROM users WHERE id > $1 ORDER BY id LIMIT $2`

// ListUsers returns users in the order they were created (ids are UUIDv7,
// the bootstrap administrator first), after the id given, at most limit.
func (s *Store) ListUsers(ctx context.Context, after uuid.UUID, limit int) ([]*User, error) {
	rows, err := s.pool.Query(ctx, listUsersSQL, after, limit)
	if err != nil {
		return nil, fmt.Errorf("list users: %w", translate(err))
	}
	users, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*User, error) { return scanUser(r) })
	if err != nil {
		return nil, fmt.Errorf("list users: %w", translate(err))
	}
	return users, nil
}

// PausedOwnerDisabled is the paused_reason of the jobs a user's disabling paused.
const PausedOwnerDisabled = "owner disabled"

const (
	lockUserSQL   = `SELECT ` + userColumns + ` FROM users WHERE id = $1 FOR UPDATE`
	updateUserSQL = `UPDATE users SET name = $2, limits = $3, disabled_at = $4 WHERE id = $1 RETURNING ` + userColumns
	// pauseOwnedSQL pauses a disabled user's jobs that could still run. Each
	// moves to a new generation, so what Redis holds for it goes stale and
	// no worker starts it.
	pauseOwnedSQL = `UPDATE jobs SET status = 'paused', paused_reason = $3, due_at = NULL, due_hour = -1,
    generation = generation + 1, updated_at = $2
WHERE owner_id = $1 AND status = 'scheduled'`
)

// UserEdit changes a user in memory under its row lock; it returns an error
// (job.ErrConflict or a *job.FieldError) to refuse.
type UserEdit func(u *User) error

// UpdateUser applies edit to a user in one transaction and records it. When
// the edit disables the user, the user's scheduled jobs are paused in the
// same transaction (paused_reason PausedOwnerDisabled), and its keys stop
// authenticating because authentication checks the user's state. Enabling a
// user does not resume them: an administrator or the user decides which.
func (s *Store) UpdateUser(ctx context.Context, id uuid.UUID, now time.Time, edit UserEdit, a Audit) (*User, error) {
	var out *User
	// Disabling pauses the user's jobs: a row the loader moved meanwhile is
	// a serialization failure, tried again rather than answered as an outage.
	err := retrySerialization(ctx, func() error { return s.updateUser(ctx, id, now, edit, a, &out) })
	if err != nil {
		return nil, fmt.Errorf("update user %s: %w", id, err)
	}
	return out, nil
}

func (s *Store) updateUser(ctx context.Context, id uuid.UUID, now time.Time, edit UserEdit, a Audit, out **User) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		before, err := scanUser(tx.QueryRow(ctx, lockUserSQL, id))
		if err != nil {
			return translate(err)
		}
		u := *before
		if err := edit(&u); err != nil {
			return err
		}
		if id == BootstrapAdmin && !u.DisabledAt.IsZero() {
			return fmt.Errorf("%w: the bootstrap administrator cannot be disabled", job.ErrConflict)
		}
		limits, err := json.Marshal(u.Limits)
		if err != nil {
			return err
		}
		after, err := scanUser(tx.QueryRow(ctx, updateUserSQL, id, u.Name, limits, nullTime(u.DisabledAt)))
		if err != nil {
			return translate(err)
		}
		*out = after
		change := map[string]any{}
		if before.Name != after.Name {
			change["name"] = map[string]any{"from": before.Name, "to": after.Name}
		}
		bl, _ := json.Marshal(before.Limits)
		if string(bl) != string(limits) {
			change["limits"] = map[string]any{"from": before.Limits, "to": after.Limits}
		}
		if before.DisabledAt.IsZero() != after.DisabledAt.IsZero() {
			change["disabled"] = map[string]any{"from": !before.DisabledAt.IsZero(), "to": !after.DisabledAt.IsZero()}
		}
		if before.DisabledAt.IsZero() && !after.DisabledAt.IsZero() {
			tag, err := tx.Exec(ctx, pauseOwnedSQL, id, now, PausedOwnerDisabled)
			if err != nil {
				return translate(err)
			}
			change["jobs_paused"] = tag.RowsAffected()
		}
		return record(ctx, tx, a, now, TargetUser, id, change)
	})
}

// Key is an API key's public record. Its secret is never stored: only the
// SHA-256 of the whole key, which the caller computes.
type Key struct {
	ID         uuid.UUID
	UserID     uuid.UUID
	Name       string
	Prefix     string
	CreatedAt  time.Time
	LastUsedAt time.Time
	RevokedAt  time.Time
	// Scopes are what the key may do; nil means everything its user's
	// role allows.
	Scopes []string
	// ExpiresAt, when not zero, is when the key stops authenticating.
	ExpiresAt time.Time
}

// Live reports whether the key authenticates at now: not revoked, not
// expired.
func (k *Key) Live(now time.Time) bool {
	return k.RevokedAt.IsZero() && (k.ExpiresAt.IsZero() || now.Before(k.ExpiresAt))
}

const keyColumns = `id, user_id, name, prefix, created_at, last_used_at, revoked_at, scopes, expires_at`

func scanKey(row pgx.Row, extra ...any) (*Key, error) {
	var (
		k                      Key
		used, revoked, expires *time.Time
	)
	if err := row.Scan(append([]any{&k.ID, &k.UserID, &k.Name, &k.Prefix, &k.CreatedAt, &used, &revoked, &k.Scopes, &expires}, extra...)...); err != nil {
		return nil, err
	}
	k.CreatedAt = k.CreatedAt.UTC()
	if used != nil {
		k.LastUsedAt = used.UTC()
	}
	if revoked != nil {
		k.RevokedAt = revoked.UTC()
	}
	if expires != nil {
		k.ExpiresAt = expires.UTC()
	}
	return &k, nil
}

// ErrTooManyKeys is CreateKey's refusal of a key beyond the user's cap on
// live keys; it matches job.ErrConflict.
var ErrTooManyKeys = fmt.Errorf("%w: too many live keys", job.ErrConflict)

const (
	// lockUserKeysSQL locks the user's row, so that two creations cannot
	// both pass the cap; liveKeysSQL then counts the user's live keys in a
	// statement of its own, whose snapshot, taken after the lock, sees a
	// key the other creation committed while this one waited.
	lockUserKeysSQL = `SELECT 1 FROM users WHERE id = $1 FOR UPDATE`
	liveKeysSQL     = `SELECT count(*) FROM api_keys
WHERE user_id = $1 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > $2)`
	insertKeySQL = `INSERT INTO api_keys (id, user_id, name, prefix, hash, created_at, scopes, expires_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
RETURNING ` + keyColumns
)

// CreateKey stores a key of a user, given the SHA-256 of the whole key, if
// the user has fewer than maxLive live keys (0: no cap); beyond it the
// answer is ErrTooManyKeys. An unknown user is job.ErrNotFound.
func (s *Store) CreateKey(ctx context.Context, k *Key, hash []byte, maxLive int, a Audit) (*Key, error) {
	var out *Key
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var one, live int
		if err := tx.QueryRow(ctx, lockUserKeysSQL, k.UserID).Scan(&one); err != nil {
			return translate(err)
		}
		if err := tx.QueryRow(ctx, liveKeysSQL, k.UserID, k.CreatedAt).Scan(&live); err != nil {
			return translate(err)
		}
		if maxLive > 0 && live >= maxLive {
			return ErrTooManyKeys
		}
		var expires *time.Time
		if !k.ExpiresAt.IsZero() {
			expires = &k.ExpiresAt
		}
		var err error
		if out, err = scanKey(tx.QueryRow(ctx, insertKeySQL, k.ID, k.UserID, k.Name, k.Prefix, hash, k.CreatedAt, k.Scopes, expires)); err != nil {
			return translate(err)
		}
		change := map[string]any{"user_id": out.UserID, "name": out.Name, "prefix": out.Prefix}
		if out.Scopes != nil {
			change["scopes"] = out.Scopes
		}
		if !out.ExpiresAt.IsZero() {
			change["expires_at"] = out.ExpiresAt
		}
		return record(ctx, tx, a, k.CreatedAt, TargetKey, out.ID, change)
	})
	if err != nil {
		return nil, fmt.Errorf("create key: %w", err)
	}
	return out, nil
}

// ListKeys returns a user's keys, revoked ones included, oldest first.
func (s *Store) ListKeys(ctx context.Context, user uuid.UUID) ([]*Key, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+keyColumns+` FROM api_keys WHERE user_id = $1 ORDER BY created_at, id`, user)
	if err != nil {
		return nil, fmt.Errorf("list keys: %w", translate(err))
	}
	keys, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*Key, error) { return scanKey(r) })
	if err != nil {
		return nil, fmt.Errorf("list keys: %w", translate(err))
	}
	return keys, nil
}

const (
	lockKeySQL = `SELECT revoked_at FROM api_keys
WHERE id = $1 AND ($2 = '00000000-0000-0000-0000-000000000000'::uuid OR user_id = $2) FOR UPDATE`
	revokeKeySQL = `UPDATE api_keys SET revoked_at = coalesce(revoked_at, $2) WHERE id = $1 RETURNING ` + keyColumns
)

// RevokeKey revokes a key of owner (or of anyone, for AnyOwner); it stops
// authenticating at once, and the dashboard sessions opened with it are
// deleted in the same transaction (they would fail on the revoked key
// anyway; deleting them leaves no session row behind a dead key). Revoking
// a revoked key changes nothing and records nothing; another owner's key is
// job.ErrNotFound.
func (s *Store) RevokeKey(ctx context.Context, owner, id uuid.UUID, now time.Time, a Audit) (*Key, error) {
	var out *Key
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var was *time.Time
		if err := tx.QueryRow(ctx, lockKeySQL, id, owner).Scan(&was); err != nil {
			return translate(err)
		}
		var err error
		if out, err = scanKey(tx.QueryRow(ctx, revokeKeySQL, id, now)); err != nil {
			return translate(err)
		}
		if _, err := tx.Exec(ctx, deleteKeySessionsSQL, id); err != nil {
			return translate(err)
		}
		if was != nil {
			return nil
		}
		return record(ctx, tx, a, now, TargetKey, out.ID,
			map[string]any{"user_id": out.UserID, "prefix": out.Prefix})
	})
	if err != nil {
		return nil, fmt.Errorf("revoke key %s: %w", id, err)
	}
	return out, nil
}

// Credential is what authenticating a key needs: the key, the SHA-256 it
// must match, and its user.
type Credential struct {
	Key  Key
	Hash []byte
	User User
}

const credentialSQL = `SELECT k.id, k.user_id, k.name, k.prefix, k.created_at, k.last_used_at, k.revoked_at, k.scopes, k.expires_at, k.hash,
    u.id, u.name, u.role, u.created_at, u.disabled_at, u.limits
FROM api_keys k JOIN users u ON u.id = k.user_id
WHERE k.prefix = $1`

// Credential looks a key up by its public prefix, in one round trip with its
// user. An unknown prefix is job.ErrNotFound.
func (s *Store) Credential(ctx context.Context, prefix string) (*Credential, error) {
	var (
		c        Credential
		disabled *time.Time
		limits   []byte
	)
	k, err := scanKey(s.pool.QueryRow(ctx, credentialSQL, prefix), &c.Hash,
		&c.User.ID, &c.User.Name, &c.User.Role, &c.User.CreatedAt, &disabled, &limits)
	if err != nil {
		return nil, fmt.Errorf("credential: %w", translate(err))
	}
	c.Key = *k
	c.User.CreatedAt = c.User.CreatedAt.UTC()
	if disabled != nil {
		c.User.DisabledAt = disabled.UTC()
	}
	if err := json.Unmarshal(limits, &c.User.Limits); err != nil {
		return nil, fmt.Errorf("limits of user %s: %w", c.User.ID, err)
	}
	return &c, nil
}

// KeyTouchInterval is how stale a key's last_used_at may grow before a use
// refreshes it: authentication writes at most once per key per interval.
const KeyTouchInterval = time.Minute

// TouchKey records that a key was used now, unless it was within
// KeyTouchInterval.
func (s *Store) TouchKey(ctx context.Context, id uuid.UUID, now time.Time) error {
	_, err := s.pool.Exec(ctx, `UPDATE api_keys SET last_used_at = $2::timestamptz
WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < $2::timestamptz - make_interval(secs => $3))`,
		id, now, KeyTouchInterval.Seconds())
	if err != nil {
		return fmt.Errorf("touch key %s: %w", id, translate(err))
	}
	return nil
}

// ownerCapsSQL lists the enabled users with a cap of their own on attempts
// in flight.
const ownerCapsSQL = `SELECT id, (limits->>'max_running')::integer FROM users
WHERE limits ? 'max_running' AND disabled_at IS NULL`

// OwnerCaps returns each enabled user's own cap on attempts in flight
// (limits.max_running), for the scheduler to record in Redis.
func (s *Store) OwnerCaps(ctx context.Context) (map[uuid.UUID]int, error) {
	rows, err := s.pool.Query(ctx, ownerCapsSQL)
	if err != nil {
		return nil, fmt.Errorf("owner caps: %w", translate(err))
	}
	defer rows.Close()
	out := map[uuid.UUID]int{}
	for rows.Next() {
		var id uuid.UUID
		var c int
		if err := rows.Scan(&id, &c); err != nil {
			return nil, fmt.Errorf("owner caps: %w", err)
		}
		out[id] = c
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("owner caps: %w", translate(err))
	}
	return out, nil
}
