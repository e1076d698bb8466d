package store_test

import (
	"crypto/sha256"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/store"
)

// sessionHash is the SHA-256 a session is stored under; the tests need no
// real session id, only distinct ones.
func sessionHash(name string) []byte {
	sum := sha256.Sum256([]byte(name))
	return sum[:]
}

func TestSessions(t *testing.T) {
	t.Parallel()

	t.Run("FoundWithItsKeyAndUser", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		u := b.addUser(t, "bob", store.Limits{RequestsPerMinute: intp(60)})
		k := b.addKey(t, u.ID, "pfx1", b.now)
		require.NoError(t, b.st.CreateSession(b.ctx, sessionHash("s1"),
			&store.Session{UserID: u.ID, KeyID: k.ID, CreatedAt: b.now, ExpiresAt: b.now.Add(time.Hour)}))

		c, err := b.st.SessionCredential(b.ctx, sessionHash("s1"), b.now)
		require.NoError(t, err)
		require.Equal(t, k.ID, c.Session.KeyID)
		require.Nil(t, c.Session.AdminBinding)
		require.True(t, c.Session.ExpiresAt.Equal(b.now.Add(time.Hour)))
		require.NotNil(t, c.Key)
		require.Equal(t, k.ID, c.Key.ID)
		require.True(t, c.Key.Live(b.now))
		require.Nil(t, c.Key.Scopes, "all its role allows")
		require.Equal(t, u.ID, c.User.ID)
		require.Equal(t, u.Limits, c.User.Limits)

		_, err = b.st.SessionCredential(b.ctx, sessionHash("s2"), b.now)
		require.ErrorIs(t, err, job.ErrNotFound, "an unknown session")
		_, err = b.st.SessionCredential(b.ctx, sessionHash("s1"), b.now.Add(time.Hour))
		require.ErrorIs(t, err, job.ErrNotFound, "an expired session")
	})

	t.Run("AdminTokenSessionHasNoKey", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		binding := []byte("binding to the admin token")
		require.NoError(t, b.st.CreateSession(b.ctx, sessionHash("s1"),
			&store.Session{UserID: store.BootstrapAdmin, AdminBinding: binding, CreatedAt: b.now, ExpiresAt: b.now.Add(time.Hour)}))
		c, err := b.st.SessionCredential(b.ctx, sessionHash("s1"), b.now)
		require.NoError(t, err)
		require.Nil(t, c.Key)
		require.Equal(t, binding, c.Session.AdminBinding)
		require.Equal(t, store.BootstrapAdmin, c.User.ID)
		require.Equal(t, store.RoleAdmin, c.User.Role)
	})

	t.Run("RevokingTheKeyDeletesItsSessions", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		u := b.addUser(t, "bob", store.Limits{})
		k, other := b.addKey(t, u.ID, "pfx1", b.now), b.addKey(t, u.ID, "pfx2", b.now)
		for name, key := range map[string]*store.Key{"a": k, "b": k, "c": other} {
			require.NoError(t, b.st.CreateSession(b.ctx, sessionHash(name),
				&store.Session{UserID: u.ID, KeyID: key.ID, CreatedAt: b.now, ExpiresAt: b.now.Add(time.Hour)}))
		}
		_, err := b.st.RevokeKey(b.ctx, u.ID, k.ID, b.now, store.Audit{Actor: actor, Action: store.ActionKeyRevoke})
		require.NoError(t, err)
		for _, name := range []string{"a", "b"} {
			_, err = b.st.SessionCredential(b.ctx, sessionHash(name), b.now)
			require.ErrorIs(t, err, job.ErrNotFound, name)
		}
		_, err = b.st.SessionCredential(b.ctx, sessionHash("c"), b.now)
		require.NoError(t, err, "another key's session stays")
	})

	t.Run("DeleteEndsOne", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		u := b.addUser(t, "bob", store.Limits{})
		k := b.addKey(t, u.ID, "pfx1", b.now)
		for _, name := range []string{"a", "b"} {
			require.NoError(t, b.st.CreateSession(b.ctx, sessionHash(name),
				&store.Session{UserID: u.ID, KeyID: k.ID, CreatedAt: b.now, ExpiresAt: b.now.Add(time.Hour)}))
		}
		found, err := b.st.DeleteSession(b.ctx, sessionHash("a"))
		require.NoError(t, err)
		require.True(t, found)
		found, err = b.st.DeleteSession(b.ctx, sessionHash("a"))
		require.NoError(t, err)
		require.False(t, found, "nothing left to end")
		_, err = b.st.SessionCredential(b.ctx, sessionHash("a"), b.now)
		require.ErrorIs(t, err, job.ErrNotFound)
		_, err = b.st.SessionCredential(b.ctx, sessionHash("b"), b.now)
		require.NoError(t, err)
	})

	t.Run("RemoveExpiredInBatches", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		u := b.addUser(t, "bob", store.Limits{})
		k := b.addKey(t, u.ID, "pfx1", b.now)
		for i, name := range []string{"a", "b", "c", "live"} {
			require.NoError(t, b.st.CreateSession(b.ctx, sessionHash(name),
				&store.Session{UserID: u.ID, KeyID: k.ID, CreatedAt: b.now, ExpiresAt: b.now.Add(time.Duration(i+1) * time.Minute)}))
		}
		at := b.now.Add(3 * time.Minute)
		n, err := b.st.RemoveExpiredSessions(b.ctx, at, 2)
		require.NoError(t, err)
		require.Equal(t, 2, n)
		n, err = b.st.RemoveExpiredSessions(b.ctx, at, 2)
		require.NoError(t, err)
		require.Equal(t, 1, n, "the rest of the expired ones")
		var left int
		require.NoError(t, b.st.Pool().QueryRow(b.ctx, `SELECT count(*) FROM sessions`).Scan(&left))
		require.Equal(t, 1, left, "the live session stays")
		_, err = b.st.SessionCredential(b.ctx, sessionHash("live"), at)
		require.NoError(t, err)
	})
}
