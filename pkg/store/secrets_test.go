package store_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/secretbox"
	"github.com/tockhq/tock/pkg/store"
	"github.com/tockhq/tock/pkg/testenv"
)

// TestSigningSecretsAtRest: with an operator key, a new user's signing
// secret is stored sealed and read back opened; the reseal pass seals the
// plain secrets an older release left and those under a previous key; a
// store without the key cannot open them and says so.
func TestSigningSecretsAtRest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	k1, k2 := bytes.Repeat([]byte{7}, 32), bytes.Repeat([]byte{9}, 32)
	box1, err := secretbox.New(k1)
	require.NoError(t, err)
	st := testenv.Store(t, store.Secrets(box1))
	now := time.Now().UTC().Truncate(time.Millisecond)
	mk := func(name string) *store.User {
		u, err := st.CreateUser(ctx, &store.User{ID: job.NewID(), Name: name, Role: store.RoleUser, CreatedAt: now},
			store.Audit{Actor: store.BootstrapAdmin, Action: store.ActionUserCreate})
		require.NoError(t, err)
		return u
	}
	ann, bob := mk("ann"), mk("bob")

	stored, err := st.StoredSecret(ctx, ann.ID)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(stored, "enc:v1:"+secretbox.KeyID(k1)+":"), stored)
	secret, err := signing(st, ann.ID)
	require.NoError(t, err)
	require.Len(t, secret, 64)
	require.NotContains(t, stored, secret)

	// An older release's plain secret, and the bootstrap admin's from
	// migration 004, are sealed by the pass; the secrets do not change.
	require.NoError(t, st.SetStoredSecret(ctx, bob.ID, "plain-from-004"))
	n, skipped, err := st.ResealSecrets(ctx)
	require.NoError(t, err)
	require.Zero(t, skipped)
	require.Equal(t, 2, n, "bob's and the bootstrap admin's")
	stored, err = st.StoredSecret(ctx, bob.ID)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(stored, "enc:v1:"), stored)
	got, err := signing(st, bob.ID)
	require.NoError(t, err)
	require.Equal(t, "plain-from-004", got)
	n, _, err = st.ResealSecrets(ctx)
	require.NoError(t, err)
	require.Zero(t, n, "nothing left to seal")

	// A copied ciphertext does not open for another user.
	require.NoError(t, st.SetStoredSecret(ctx, bob.ID, mustStored(t, st, ann.ID)))
	_, err = signing(st, bob.ID)
	require.Error(t, err)
	require.NotContains(t, err.Error(), secret)

	// Rotating the operator key: a store with the new key and the old one
	// as previous opens everything and reseals it under the new key.
	box2, err := secretbox.New(k2, k1)
	require.NoError(t, err)
	st2, err := store.Open(ctx, testenv.URLOf(t, st), 2, store.Secrets(box2))
	require.NoError(t, err)
	defer st2.Close()
	n, skipped, err = st2.ResealSecrets(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, skipped, "bob's copied value opens under no key for bob")
	require.Equal(t, 2, n, "ann's and the admin's")
	stored = mustStored(t, st2, ann.ID)
	require.True(t, strings.HasPrefix(stored, "enc:v1:"+secretbox.KeyID(k2)+":"), stored)
	got, err = signing(st2, ann.ID)
	require.NoError(t, err)
	require.Equal(t, secret, got, "the secret itself is the same")

	// Without the key, a sealed secret does not open.
	st3, err := store.Open(ctx, testenv.URLOf(t, st), 2)
	require.NoError(t, err)
	defer st3.Close()
	_, err = signing(st3, ann.ID)
	require.ErrorIs(t, err, secretbox.ErrNoKey)
}

func mustStored(t *testing.T, st *store.Store, id uuid.UUID) string {
	t.Helper()
	v, err := st.StoredSecret(context.Background(), id)
	require.NoError(t, err)
	return v
}

func signing(st *store.Store, id uuid.UUID) (string, error) {
	s, err := st.SigningSecrets(context.Background(), id, time.Now())
	return s.Current, err
}
