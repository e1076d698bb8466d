package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// newSigningSecret is a fresh webhook signing secret: 32 random bytes, hex,
// the same form migration 004 gave every user.
func newSigningSecret() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}

// sealSecret seals a user's signing secret for storage (as it is without
// an operator key).
func (s *Store) sealSecret(secret string, owner uuid.UUID) (string, error) {
	out, err := s.secrets.Seal(secret, owner[:])
	if err != nil {
		return "", fmt.Errorf("seal the signing secret of %s: %w", owner, err)
	}
	return out, nil
}

// openSecret reads a stored signing secret of owner. The error never holds
// the secret.
func (s *Store) openSecret(stored string, owner uuid.UUID) (string, error) {
	if stored == "" {
		return "", nil
	}
	out, err := s.secrets.Open(stored, owner[:])
	if err != nil {
		return "", fmt.Errorf("signing secret of %s: %w", owner, err)
	}
	return out, nil
}

// ResealBatch is how many users ResealSecrets rewrites per statement.
const ResealBatch = 500

// ResealSecrets rewrites every signing secret (current and previous) not
// sealed under the current operator key: the plain ones from before
// encryption (migration 004's, an erased user's) and those sealed under a
// previous key, in batches of ResealBatch, each row only if it is still what
// was read. Without a key it changes nothing. It returns how many users it
// rewrote; a user whose secret it cannot open (its key is gone) is left as
// it is and counted in skipped.
func (s *Store) ResealSecrets(ctx context.Context) (resealed, skipped int, err error) {
	if !s.secrets.Encrypts() {
		return 0, 0, nil
	}
	type row struct {
		id              uuid.UUID
		cur, prev       string
		newCur, newPrev string
	}
	// reseal returns v sealed under the current key; "" stays "".
	reseal := func(v string, id uuid.UUID) (string, error) {
		if v == "" || s.secrets.Current(v) {
			return v, nil
		}
		plain, err := s.openSecret(v, id)
		if err != nil {
			return "", err
		}
		return s.sealSecret(plain, id)
	}
	after := uuid.Nil
	for {
		rows, err := s.pool.Query(ctx, `SELECT id, coalesce(signing_secret, ''), coalesce(previous_signing_secret, '')
FROM users WHERE id > $1 ORDER BY id LIMIT $2`, after, ResealBatch)
		if err != nil {
			return resealed, skipped, fmt.Errorf("reseal secrets: %w", translate(err))
		}
		batch, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
			var x row
			err := r.Scan(&x.id, &x.cur, &x.prev)
			return x, err
		})
		if err != nil {
			return resealed, skipped, fmt.Errorf("reseal secrets: %w", translate(err))
		}
		if len(batch) == 0 {
			return resealed, skipped, nil
		}
		var ids []uuid.UUID
		var curs, prevs, newCurs, newPrevs []string
		for _, x := range batch {
			nc, err1 := reseal(x.cur, x.id)
			np, err2 := reseal(x.prev, x.id)
			if err1 != nil || err2 != nil {
				skipped++
				continue
			}
			if nc == x.cur && np == x.prev {
				continue
			}
			ids = append(ids, x.id)
			curs, prevs, newCurs, newPrevs = append(curs, x.cur), append(prevs, x.prev), append(newCurs, nc), append(newPrevs, np)
		}
		if len(ids) > 0 {
			tag, err := s.pool.Exec(ctx, `UPDATE users u SET signing_secret = v.new_cur,
    previous_signing_secret = nullif(v.new_prev, '')
FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[]) AS v(id, cur, prev, new_cur, new_prev)
WHERE u.id = v.id AND u.signing_secret = v.cur AND coalesce(u.previous_signing_secret, '') = v.prev`,
				ids, curs, prevs, newCurs, newPrevs)
			if err != nil {
				return resealed, skipped, fmt.Errorf("reseal secrets: %w", translate(err))
			}
			resealed += int(tag.RowsAffected())
		}
		after = batch[len(batch)-1].id
	}
}

// SigningSecrets are an owner's webhook signing secrets, opened: the current
// one, and the previous one while its grace period lasts.
type SigningSecrets struct {
	Current       string
	Previous      string
	PreviousUntil time.Time
}

// SigningSecrets returns the owner's secrets as of now.
func (s *Store) SigningSecrets(ctx context.Context, owner uuid.UUID, now time.Time) (SigningSecrets, error) {
	var (
		out       SigningSecrets
		cur, prev string
		prevUntil *time.Time
	)
	err := s.pool.QueryRow(ctx, `SELECT signing_secret, coalesce(previous_signing_secret, ''), previous_signing_until
FROM users WHERE id = $1`, owner).Scan(&cur, &prev, &prevUntil)
	if err != nil {
		return out, fmt.Errorf("signing secret of %s: %w", owner, translate(err))
	}
	if out.Current, err = s.openSecret(cur, owner); err != nil {
		return out, err
	}
	if prevUntil != nil && prevUntil.After(now) {
		if out.Previous, err = s.openSecret(prev, owner); err != nil {
			return out, err
		}
		out.PreviousUntil = prevUntil.UTC()
	}
	return out, nil
}

// RotateSigningSecret gives the owner a new signing secret; the current one
// stays valid until now + grace (not at all for a grace of 0), replacing
// any previous one still in its grace period. Audited without the values.
func (s *Store) RotateSigningSecret(ctx context.Context, owner uuid.UUID, now time.Time, grace time.Duration, a Audit) (SigningSecrets, error) {
	fresh := newSigningSecret()
	sealed, err := s.sealSecret(fresh, owner)
	if err != nil {
		return SigningSecrets{}, err
	}
	var until *time.Time
	if grace > 0 {
		t := now.Add(grace).UTC()
		until = &t
	}
	var prev string
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var old string
		if err := tx.QueryRow(ctx, `SELECT signing_secret FROM users WHERE id = $1 FOR UPDATE`, owner).Scan(&old); err != nil {
			return translate(err)
		}
		if until != nil {
			if prev, err = s.openSecret(old, owner); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, `UPDATE users SET signing_secret = $2,
    previous_signing_secret = CASE WHEN $3::timestamptz IS NULL THEN NULL ELSE signing_secret END,
    previous_signing_until = $3 WHERE id = $1`, owner, sealed, until); err != nil {
			return translate(err)
		}
		change := map[string]any{"grace_seconds": int64(grace / time.Second)}
		return record(ctx, tx, a, now, TargetUser, owner, change)
	})
	if err != nil {
		return SigningSecrets{}, fmt.Errorf("rotate signing secret of %s: %w", owner, err)
	}
	out := SigningSecrets{Current: fresh}
	if until != nil {
		out.Previous, out.PreviousUntil = prev, *until
	}
	return out, nil
}
