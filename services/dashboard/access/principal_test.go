package access

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/store"
	"github.com/tockhq/tock/services/dashboard/apierr"
)

// TestOwner: an administrator's queries see every owner, a user's their
// own; either's changes are audited as theirs.
func TestOwner(t *testing.T) {
	t.Parallel()
	u := uuid.New()
	require.Equal(t, u, Principal{User: u}.Owner())
	require.Equal(t, store.AnyOwner, Principal{User: u, Admin: true}.Owner())
	require.Equal(t, store.Audit{Actor: u, Action: store.ActionKeyCreate}, Principal{User: u, Admin: true}.Audit(store.ActionKeyCreate))
}

// TestGrant: a new key never gets a scope its user's role does not allow,
// nor one its creator's key lacks, and never outlives its creator's key.
func TestGrant(t *testing.T) {
	t.Parallel()
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	admin := *adminPrincipal()
	user := Principal{User: uuid.New(), Scopes: roleScopes(store.RoleUser)}
	readOnly := Principal{User: user.User, Scopes: canJobsRead | canRunsRead}
	expiring := Principal{User: user.User, Scopes: roleScopes(store.RoleUser), expires: now.Add(time.Hour)}
	list := func(s ...string) *[]string { return &s }
	at := func(s string) *string { return &s }
	for name, tt := range map[string]struct {
		p         Principal
		role      string
		scopes    *[]string
		expiresAt *string
		want      []string  // scopes granted
		expires   time.Time // expiry granted
		status    int       // or refused with
		field     string
	}{
		"AllTheRoleAllows":       {p: admin, role: store.RoleUser},
		"Narrowed":               {p: admin, role: store.RoleUser, scopes: list("runs:read", "jobs:read"), want: []string{"jobs:read", "runs:read"}},
		"NoScopes":               {p: admin, role: store.RoleUser, scopes: list(), status: http.StatusBadRequest, field: "scopes"},
		"UnknownScope":           {p: admin, role: store.RoleUser, scopes: list("jobs:read", "jobs:delete"), status: http.StatusBadRequest, field: "scopes[1]"},
		"AdminForAUser":          {p: admin, role: store.RoleUser, scopes: list("admin"), status: http.StatusBadRequest, field: "scopes"},
		"MoreThanTheCreatorHas":  {p: readOnly, role: store.RoleUser, scopes: list("jobs:write"), status: http.StatusForbidden, field: "scopes"},
		"AllFromANarrowedKey":    {p: readOnly, role: store.RoleUser, status: http.StatusForbidden, field: "scopes"},
		"AsMuchAsTheCreatorHas":  {p: readOnly, role: store.RoleUser, scopes: list("jobs:read"), want: []string{"jobs:read"}},
		"Expiring":               {p: user, role: store.RoleUser, expiresAt: at("2030-01-02T04:04:05.5+01:00"), expires: now.Add(500 * time.Millisecond)},
		"ExpiryNotATime":         {p: user, role: store.RoleUser, expiresAt: at("tomorrow"), status: http.StatusBadRequest, field: "expires_at"},
		"ExpiryPast":             {p: user, role: store.RoleUser, expiresAt: at("2030-01-02T03:04:05Z"), status: http.StatusBadRequest, field: "expires_at"},
		"ExpiryBeyondTenYears":   {p: user, role: store.RoleUser, expiresAt: at("2041-01-02T03:04:05Z"), status: http.StatusBadRequest, field: "expires_at"},
		"EndsWithItsCreator":     {p: expiring, role: store.RoleUser, expires: now.Add(time.Hour)},
		"EndsBeforeItsCreator":   {p: expiring, role: store.RoleUser, expiresAt: at("2030-01-02T03:34:05Z"), expires: now.Add(30 * time.Minute)},
		"OutlivesItsCreator":     {p: expiring, role: store.RoleUser, expiresAt: at("2030-01-02T05:04:05Z"), status: http.StatusForbidden, field: "expires_at"},
		"AdminKeyForAnAdminUser": {p: admin, role: store.RoleAdmin, scopes: list("admin"), want: []string{"admin"}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			scopes, expires, err := tt.p.Grant(tt.role, tt.scopes, tt.expiresAt, now)
			if tt.status != 0 {
				var ae *apierr.Error
				require.True(t, errors.As(err, &ae), "%v", err)
				require.Equal(t, tt.status, ae.Status)
				require.Equal(t, tt.field, ae.Detail.Field)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, scopes)
			require.True(t, tt.expires.Equal(expires), "expires %v, want %v", expires, tt.expires)
		})
	}
}

// TestMayRevoke: a user's key may revoke their keys that have no scope it
// lacks, not a broader one.
func TestMayRevoke(t *testing.T) {
	t.Parallel()
	readOnly := Principal{Scopes: canJobsRead | canRunsRead}
	require.NoError(t, readOnly.MayRevoke(&store.Key{Scopes: []string{"jobs:read"}}))
	var ae *apierr.Error
	require.True(t, errors.As(readOnly.MayRevoke(&store.Key{}), &ae))
	require.Equal(t, http.StatusForbidden, ae.Status)
	require.Equal(t, "that key has jobs:write, which your key lacks, so your key cannot revoke it", ae.Detail.Message)
	require.NoError(t, Principal{Scopes: roleScopes(store.RoleUser)}.MayRevoke(&store.Key{}))
}
