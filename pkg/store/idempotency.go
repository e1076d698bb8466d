package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// IdempotencyWindow is how long a key's first response is replayed.
const IdempotencyWindow = 24 * time.Hour

// idempotencyAbandoned is how long a first request may stay in flight
// before its key is taken over: its dashboard died before answering. It
// outlasts the longest request the dashboard serves (30 s).
const idempotencyAbandoned = 2 * time.Minute

// StoredResponse is the first response to a request with an
// Idempotency-Key, as it is replayed.
type StoredResponse struct {
	Status      int
	ContentType string
	Location    string
	Body        []byte
}

// KeyState is what ClaimIdempotencyKey found.
type KeyState int

const (
	// KeyNew: the caller now holds the key and runs the request.
	KeyNew KeyState = iota
	// KeyReplay: the same request was answered before; replay its response.
	KeyReplay
	// KeyInFlight: the same key's first request has not been answered yet.
	KeyInFlight
	// KeyReused: the key was used for a different request.
	KeyReused
)

// claimKeySQL takes the key for a new request: a key never seen, one whose
// window has passed, or one whose first request was abandoned in flight.
const claimKeySQL = `INSERT INTO idempotency_keys (owner_id, key, request_hash, created_at) VALUES ($1, $2, $3, $4)
ON CONFLICT (owner_id, key) DO UPDATE
    SET request_hash = EXCLUDED.request_hash, created_at = EXCLUDED.created_at,
        status = NULL, content_type = NULL, location = NULL, response = NULL
    WHERE idempotency_keys.created_at < $5
       OR (idempotency_keys.status IS NULL AND idempotency_keys.created_at < $6)
RETURNING true`

const keyStateSQL = `SELECT request_hash, status, coalesce(content_type, ''), coalesce(location, ''), response
FROM idempotency_keys WHERE owner_id = $1 AND key = $2`

// ClaimIdempotencyKey records that owner sends a request with key, whose
// method, path and body hash to hash, and says what to do with it. With
// KeyReplay it returns the first response.
func (s *Store) ClaimIdempotencyKey(ctx context.Context, owner uuid.UUID, key string, hash []byte, now time.Time) (KeyState, *StoredResponse, error) {
	for range 3 {
		var claimed bool
		err := s.pool.QueryRow(ctx, claimKeySQL, owner, key, hash, now, now.Add(-IdempotencyWindow), now.Add(-idempotencyAbandoned)).Scan(&claimed)
		if err == nil {
			return KeyNew, nil, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return 0, nil, fmt.Errorf("claim idempotency key: %w", translate(err))
		}
		var stored []byte
		var status *int16
		var resp StoredResponse
		err = s.pool.QueryRow(ctx, keyStateSQL, owner, key).Scan(&stored, &status, &resp.ContentType, &resp.Location, &resp.Body)
		if errors.Is(err, pgx.ErrNoRows) {
			continue // pruned meanwhile: claim it again
		}
		if err != nil {
			return 0, nil, fmt.Errorf("read idempotency key: %w", translate(err))
		}
		switch {
		case !bytes.Equal(stored, hash):
			return KeyReused, nil, nil
		case status == nil:
			return KeyInFlight, nil, nil
		}
		resp.Status = int(*status)
		return KeyReplay, &resp, nil
	}
	// Claimed and pruned by others three times over: as good as in flight.
	return KeyInFlight, nil, nil
}

const saveResponseSQL = `UPDATE idempotency_keys SET status = $3, content_type = $4, location = nullif($5, ''), response = $6
WHERE owner_id = $1 AND key = $2 AND status IS NULL`

// SaveIdempotentResponse stores the response to the request that holds key.
func (s *Store) SaveIdempotentResponse(ctx context.Context, owner uuid.UUID, key string, r StoredResponse) error {
	if _, err := s.pool.Exec(ctx, saveResponseSQL, owner, key, int16(r.Status), r.ContentType, r.Location, r.Body); err != nil {
		return fmt.Errorf("save idempotent response: %w", translate(err))
	}
	return nil
}

// ReleaseIdempotencyKey gives up a key whose request was not answered in a
// way worth replaying (a server error): a repeat runs the request again.
func (s *Store) ReleaseIdempotencyKey(ctx context.Context, owner uuid.UUID, key string) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM idempotency_keys WHERE owner_id = $1 AND key = $2 AND status IS NULL`, owner, key); err != nil {
		return fmt.Errorf("release idempotency key: %w", translate(err))
	}
	return nil
}

// RemoveIdempotencyKeysBefore removes up to limit keys first used before
// before, oldest first, and says how many went.
func (s *Store) RemoveIdempotencyKeysBefore(ctx context.Context, before time.Time, limit int) (int, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM idempotency_keys WHERE (owner_id, key) IN (
    SELECT owner_id, key FROM idempotency_keys WHERE created_at < $1 ORDER BY created_at LIMIT $2)`, before, limit)
	if err != nil {
		return 0, fmt.Errorf("remove idempotency keys: %w", translate(err))
	}
	return int(tag.RowsAffected()), nil
}
