package store_test

import (
	"bytes"
	"crypto/sha256"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/secretbox"
	"github.com/tockhq/tock/pkg/store"
	"github.com/tockhq/tock/pkg/testenv"
)

// TestEraseUserSecrets: an erasure leaves the user no secret they knew. The
// users row then holds a fresh signing secret, sealed like any other when
// the store has an operator key, and no previous secret, even in the grace
// period of a rotation; their keys and dashboard sessions are gone.
func TestEraseUserSecrets(t *testing.T) {
	t.Parallel()
	box, err := secretbox.New(bytes.Repeat([]byte{5}, 32))
	require.NoError(t, err)
	for _, tc := range []struct {
		name   string
		opts   []store.Option
		sealed bool
	}{
		{"SealedUnderTheOperatorKey", []store.Option{store.Secrets(box)}, true},
		{"PlainWithoutOne", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			st := testenv.Store(t, tc.opts...)
			now := time.Now().UTC().Truncate(time.Millisecond)
			u, err := st.CreateUser(ctx, &store.User{ID: job.NewID(), Name: "ann", Role: store.RoleUser, CreatedAt: now},
				store.Audit{Actor: store.BootstrapAdmin, Action: store.ActionUserCreate})
			require.NoError(t, err)
			rotated, err := st.RotateSigningSecret(ctx, u.ID, now, time.Hour,
				store.Audit{Actor: u.ID, Action: store.ActionSigningRotate})
			require.NoError(t, err)
			require.NotEmpty(t, rotated.Previous, "the rotation's grace period keeps the old secret valid")
			before := mustStored(t, st, u.ID)
			k, err := st.CreateKey(ctx, &store.Key{ID: job.NewID(), UserID: u.ID, Prefix: "pfx1", CreatedAt: now}, []byte("h"), 0,
				store.Audit{Actor: u.ID, Action: store.ActionKeyCreate})
			require.NoError(t, err)
			sum := sha256.Sum256([]byte("ann's session"))
			require.NoError(t, st.CreateSession(ctx, sum[:], &store.Session{UserID: u.ID, KeyID: k.ID, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}))

			_, err = st.EraseUser(ctx, u.ID, now, store.Audit{Actor: store.BootstrapAdmin, Action: store.ActionUserErase})
			require.NoError(t, err)

			var (
				current  string
				previous *string
				until    *time.Time
				sessions int
			)
			require.NoError(t, st.Pool().QueryRow(ctx, `SELECT signing_secret, previous_signing_secret, previous_signing_until,
    (SELECT count(*) FROM sessions WHERE user_id = $1) FROM users WHERE id = $1`, u.ID).Scan(&current, &previous, &until, &sessions))
			require.Nil(t, previous, "no previous secret")
			require.Nil(t, until, "nor its grace period")
			require.Zero(t, sessions)
			require.NotEqual(t, before, current)
			require.Equal(t, tc.sealed, strings.HasPrefix(current, "enc:v1:"), current)

			got, err := st.SigningSecrets(ctx, u.ID, now)
			require.NoError(t, err)
			require.Len(t, got.Current, 64, "32 random bytes, hex")
			require.NotContains(t, []string{rotated.Current, rotated.Previous}, got.Current)
			require.Empty(t, got.Previous)
			if tc.sealed {
				require.NotContains(t, current, got.Current, "not in clear")
			}
		})
	}
}
