package access_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	neturl "net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v5"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"go.uber.org/zap/zaptest"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/store"
	"github.com/tockhq/tock/pkg/testenv"
	"github.com/tockhq/tock/services/dashboard/access"
	"github.com/tockhq/tock/services/dashboard/apierr"
	"github.com/tockhq/tock/services/dashboard/guard"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const admin = "test-admin-token-0123456789abcdef"

// bundle is a Control on the real store, behind a few routes shaped like
// the API's, and the fixed time its clock reads.
type bundle struct {
	ctl   *access.Control
	store *store.Store
	deps  access.Deps
	h     http.Handler
	now   time.Time
}

// me is what GET /api/v1/me answers here: the caller as Authenticate found
// it.
type me struct {
	User   uuid.UUID `json:"user"`
	Admin  bool      `json:"admin"`
	Scopes []string  `json:"scopes"`
}

func setup(t *testing.T) *bundle {
	t.Helper()
	b := &bundle{store: testenv.Store(t), now: time.Now().UTC().Truncate(time.Millisecond)}
	b.deps = access.Deps{Store: b.store, Gate: guard.New(guard.Deps{}), Logger: zaptest.NewLogger(t),
		Clock: func() time.Time { return b.now }, AdminToken: admin}
	b.ctl = access.New(b.deps)
	b.h = b.routes(b.ctl)
	return b
}

// routes serves ctl as api does: the API's group behind Authenticate, and
// the session's routes.
func (b *bundle) routes(ctl *access.Control) http.Handler {
	e := echo.NewWithConfig(echo.Config{HTTPErrorHandler: func(c *echo.Context, err error) {
		var ae *apierr.Error
		var de *apierr.DependencyError
		switch {
		case errors.As(err, &ae):
			_ = c.JSON(ae.Status, apierr.Body{Error: ae.Detail})
		case errors.As(err, &de):
			_ = c.NoContent(http.StatusServiceUnavailable)
		default:
			_ = c.NoContent(http.StatusInternalServerError)
		}
	}})
	v1 := e.Group("/api/v1", ctl.Authenticate)
	v1.GET("/me", func(c *echo.Context) error {
		p := access.Caller(c)
		return c.JSON(http.StatusOK, me{User: p.User, Admin: p.Admin, Scopes: p.Scopes.Names()})
	})
	v1.POST("/jobs", func(c *echo.Context) error { return c.NoContent(http.StatusCreated) })
	v1.GET("/audit", func(c *echo.Context) error { return c.NoContent(http.StatusOK) }, access.AdminOnly)
	v1.GET("/users/:id", func(c *echo.Context) error {
		id, err := uuid.Parse(c.Param("id"))
		if err != nil {
			return err
		}
		if err := access.SelfOrAdmin(c, id); err != nil {
			return err
		}
		return c.NoContent(http.StatusOK)
	})
	e.POST("/ui/session", func(c *echo.Context) error {
		if err := access.CheckSignIn(c.Request()); err != nil {
			return err
		}
		p, err := ctl.SignIn(c, c.FormValue("key"), func() error { return access.Unauthorized(c) })
		if p == nil {
			return err
		}
		if err := ctl.OpenSession(c, *p); err != nil {
			return err
		}
		return c.NoContent(http.StatusOK)
	})
	e.DELETE("/ui/session", func(c *echo.Context) error {
		if err := ctl.SignOut(c); err != nil {
			return err
		}
		return c.NoContent(http.StatusNoContent)
	})
	return e
}

// user stores a user of role and mints a key for them with scopes (nil:
// all the role allows).
func (b *bundle) user(t *testing.T, role string, scopes []string) (uuid.UUID, string, *store.Key) {
	t.Helper()
	u, err := b.store.CreateUser(t.Context(), &store.User{ID: job.NewID(), Name: "u", Role: role, CreatedAt: b.now},
		store.Audit{Actor: store.BootstrapAdmin, Action: store.ActionUserCreate})
	require.NoError(t, err)
	key, k, err := b.ctl.Mint(t.Context(), &store.Key{ID: job.NewID(), UserID: u.ID, Name: "k", CreatedAt: b.now, Scopes: scopes},
		0, store.Audit{Actor: store.BootstrapAdmin, Action: store.ActionKeyCreate})
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(key, "tock_"+k.Prefix+"_"), "the prefix stored is the key's")
	return u.ID, key, k
}

// send sends a request with the Authorization header auth and, when
// session is set, the session cookie (and the CSRF header if csrf).
func (b *bundle) send(t *testing.T, method, path, auth, session string, csrf bool) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequestWithContext(t.Context(), method, path, nil)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	if session != "" {
		req.AddCookie(&http.Cookie{Name: "tock_session", Value: session})
	}
	if csrf {
		req.Header.Set("X-Tock-CSRF", "1")
	}
	rec := httptest.NewRecorder()
	b.h.ServeHTTP(rec, req)
	return rec
}

// signIn posts key to the sign-in and returns the answer and the session
// cookie's value, if one was set.
func (b *bundle) signIn(t *testing.T, key string) (*httptest.ResponseRecorder, string) {
	t.Helper()
	req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/ui/session",
		strings.NewReader(neturl.Values{"key": {key}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	rec := httptest.NewRecorder()
	b.h.ServeHTTP(rec, req)
	for _, c := range rec.Result().Cookies() {
		if c.Name == "tock_session" {
			return rec, c.Value
		}
	}
	return rec, ""
}

func requireUnauthorized(t *testing.T, rec *httptest.ResponseRecorder) {
	t.Helper()
	require.Equal(t, http.StatusUnauthorized, rec.Code, rec.Body.String())
	require.Equal(t, `Bearer realm="tock"`, rec.Header().Get("WWW-Authenticate"))
	var body apierr.Body
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body))
	require.Equal(t, apierr.CodeUnauthorized, body.Error.Code)
}

func decodeMe(t *testing.T, rec *httptest.ResponseRecorder) me {
	t.Helper()
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	var m me
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &m))
	return m
}

// TestAuthenticate admits the admin token and live keys of enabled users,
// as who they act for, and refuses everything else with the same 401.
func TestAuthenticate(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.Equal(t, me{User: store.BootstrapAdmin, Admin: true, Scopes: []string{"jobs:read", "jobs:write", "runs:read", "admin"}},
		decodeMe(t, b.send(t, http.MethodGet, "/api/v1/me", "Bearer "+admin, "", false)))
	id, key, k := b.user(t, store.RoleUser, nil)
	require.Equal(t, me{User: id, Scopes: []string{"jobs:read", "jobs:write", "runs:read"}},
		decodeMe(t, b.send(t, http.MethodGet, "/api/v1/me", "bearer  "+key, "", false)))

	for name, auth := range map[string]string{
		"None":         "",
		"OtherScheme":  "Basic " + key,
		"WrongSecret":  "Bearer " + key + "x",
		"UnknownKey":   "Bearer tock_aaaaaaaaaaaaa_" + strings.Repeat("A", 43),
		"NotAKey":      "Bearer nope",
		"AdminPlusOne": "Bearer " + admin + "x",
	} {
		t.Run(name, func(t *testing.T) {
			requireUnauthorized(t, b.send(t, http.MethodGet, "/api/v1/me", auth, "", false))
		})
	}

	_, err := b.store.RevokeKey(t.Context(), store.AnyOwner, k.ID, b.now, store.Audit{Actor: store.BootstrapAdmin, Action: store.ActionKeyRevoke})
	require.NoError(t, err)
	requireUnauthorized(t, b.send(t, http.MethodGet, "/api/v1/me", "Bearer "+key, "", false))

	other, otherKey, _ := b.user(t, store.RoleUser, nil)
	_, err = b.store.UpdateUser(t.Context(), other, b.now, func(u *store.User) error { u.DisabledAt = b.now; return nil },
		store.Audit{Actor: store.BootstrapAdmin, Action: store.ActionUserDisable})
	require.NoError(t, err)
	requireUnauthorized(t, b.send(t, http.MethodGet, "/api/v1/me", "Bearer "+otherKey, "", false))
}

// TestScopesAndRoles: a key's scopes are checked for every route before
// its handler runs; the administrator's routes need an administrator, and
// a user acts on themself only.
func TestScopesAndRoles(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id, readOnly, _ := b.user(t, store.RoleUser, []string{"jobs:read", "runs:read"})
	rec := b.send(t, http.MethodPost, "/api/v1/jobs", "Bearer "+readOnly, "", false)
	require.Equal(t, http.StatusForbidden, rec.Code)
	require.Contains(t, rec.Body.String(), "this key lacks the jobs:write scope")
	require.Equal(t, http.StatusForbidden, b.send(t, http.MethodGet, "/api/v1/audit", "Bearer "+readOnly, "", false).Code)
	require.Equal(t, http.StatusOK, b.send(t, http.MethodGet, "/api/v1/users/"+id.String(), "Bearer "+readOnly, "", false).Code)
	require.Equal(t, http.StatusForbidden, b.send(t, http.MethodGet, "/api/v1/users/"+uuid.NewString(), "Bearer "+readOnly, "", false).Code)

	_, adminKey, _ := b.user(t, store.RoleAdmin, nil)
	require.Equal(t, http.StatusOK, b.send(t, http.MethodGet, "/api/v1/audit", "Bearer "+adminKey, "", false).Code)
	require.Equal(t, http.StatusOK, b.send(t, http.MethodGet, "/api/v1/users/"+uuid.NewString(), "Bearer "+adminKey, "", false).Code)
	_, narrowAdmin, _ := b.user(t, store.RoleAdmin, []string{"jobs:read", "runs:read"})
	rec = b.send(t, http.MethodGet, "/api/v1/audit", "Bearer "+narrowAdmin, "", false)
	require.Equal(t, http.StatusForbidden, rec.Code, "an administrator's key without admin acts as its user")
	require.Contains(t, rec.Body.String(), "a key with the admin scope")
}

// TestSessions: a sign-in opens a session that acts as the key or token it
// was opened with, through the cookie only, changing nothing without the
// CSRF header; signing out ends it, and so does a new admin token for the
// token's sessions.
func TestSessions(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id, key, k := b.user(t, store.RoleUser, nil)
	rec, session := b.signIn(t, key)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	require.Regexp(t, `^tses_[A-Za-z0-9_-]{43}$`, session)
	require.Equal(t, id, decodeMe(t, b.send(t, http.MethodGet, "/api/v1/me", "", session, false)).User)
	requireUnauthorized(t, b.send(t, http.MethodPost, "/api/v1/jobs", "", session, false))
	require.Equal(t, http.StatusCreated, b.send(t, http.MethodPost, "/api/v1/jobs", "", session, true).Code)
	requireUnauthorized(t, b.send(t, http.MethodGet, "/api/v1/me", "Bearer "+session, "", false))
	requireUnauthorized(t, b.send(t, http.MethodGet, "/api/v1/me", "", key, false))

	for _, bad := range []string{"", "nope", key + "x"} {
		rec, got := b.signIn(t, bad)
		requireUnauthorized(t, rec)
		require.Empty(t, got)
	}

	rec = b.send(t, http.MethodDelete, "/ui/session", "", session, true)
	require.Equal(t, http.StatusNoContent, rec.Code)
	requireUnauthorized(t, b.send(t, http.MethodGet, "/api/v1/me", "", session, false))
	require.Equal(t, http.StatusNoContent, b.send(t, http.MethodDelete, "/ui/session", "", session, true).Code, "signing out twice is harmless")

	_, session = b.signIn(t, key)
	_, err := b.store.RevokeKey(t.Context(), store.AnyOwner, k.ID, b.now, store.Audit{Actor: store.BootstrapAdmin, Action: store.ActionKeyRevoke})
	require.NoError(t, err)
	requireUnauthorized(t, b.send(t, http.MethodGet, "/api/v1/me", "", session, false))

	_, adminSession := b.signIn(t, admin)
	require.True(t, decodeMe(t, b.send(t, http.MethodGet, "/api/v1/me", "", adminSession, false)).Admin)
	d := b.deps
	d.AdminToken = "another-admin-token-0123456789"
	restarted := b.routes(access.New(d))
	rec = httptest.NewRecorder()
	req := httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/api/v1/me", nil)
	req.AddCookie(&http.Cookie{Name: "tock_session", Value: adminSession})
	restarted.ServeHTTP(rec, req)
	requireUnauthorized(t, rec)

	b.now = b.now.Add(12 * time.Hour)
	requireUnauthorized(t, b.send(t, http.MethodGet, "/api/v1/me", "", adminSession, false))
}
