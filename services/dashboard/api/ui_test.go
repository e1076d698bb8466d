package api_test

import (
	"crypto/sha256"
	"errors"
	"net/http"
	"net/http/httptest"
	neturl "net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/queue"
	"github.com/tockhq/tock/pkg/store"
	"github.com/tockhq/tock/services/dashboard/api"
	"github.com/tockhq/tock/services/dashboard/apierr"
)

// sessionCookie returns the tock_session cookie a response sets; nil if none.
func sessionCookie(rec *httptest.ResponseRecorder) *http.Cookie {
	for _, c := range rec.Result().Cookies() {
		if c.Name == "tock_session" {
			return c
		}
	}
	return nil
}

// withCookie sends a request authenticated by the session cookie only,
// with the CSRF header when csrf is set.
func (b *bundle) withCookie(t *testing.T, method, path string, body any, session string, csrf bool) *httptest.ResponseRecorder {
	t.Helper()
	return b.send(t, method, path, body, func(r *http.Request) {
		r.AddCookie(&http.Cookie{Name: "tock_session", Value: session})
		if csrf {
			r.Header.Set("X-Tock-CSRF", "1")
		}
	})
}

// send is request with a hook to set headers and cookies.
func (b *bundle) send(t *testing.T, method, path string, body any, edit func(*http.Request)) *httptest.ResponseRecorder {
	t.Helper()
	h := b.h
	b2 := *b
	b2.h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		edit(r)
		h.ServeHTTP(w, r)
	})
	return b2.request(t, method, path, body, "")
}

// signIn signs in with key (or the admin token) as the dashboard's page
// does, and returns the session cookie's value.
func (b *bundle) signIn(t *testing.T, key string) string {
	t.Helper()
	rec := b.request(t, http.MethodPost, "/ui/session", map[string]any{"key": key}, "")
	require.Equal(t, http.StatusOK, rec.Code, "body: %s", rec.Body.String())
	c := sessionCookie(rec)
	require.NotNil(t, c)
	return c.Value
}

// storedSession is a session's row, found by the SHA-256 of its id.
type storedSession struct {
	keyID   *uuid.UUID
	binding []byte
	expires time.Time
}

// storedSession returns the row of session id, and whether there is one.
func (b *bundle) storedSession(t *testing.T, id string) (storedSession, bool) {
	t.Helper()
	sum := sha256.Sum256([]byte(id))
	var s storedSession
	err := b.store.Pool().QueryRow(t.Context(), `SELECT key_id, admin_binding, expires_at FROM sessions WHERE id_hash = $1`, sum[:]).
		Scan(&s.keyID, &s.binding, &s.expires)
	if errors.Is(err, pgx.ErrNoRows) {
		return s, false
	}
	require.NoError(t, err)
	return s, true
}

// requireNotInPostgres checks that no column of any sessions row holds
// secret in clear, as text or as bytes.
func (b *bundle) requireNotInPostgres(t *testing.T, secret string) {
	t.Helper()
	var n int
	require.NoError(t, b.store.Pool().QueryRow(t.Context(), `SELECT count(*) FROM sessions s
WHERE strpos(s::text, $1) > 0 OR position(convert_to($1, 'UTF8') IN id_hash) > 0
   OR position(convert_to($1, 'UTF8') IN coalesce(admin_binding, ''::bytea)) > 0`, secret).Scan(&n))
	require.Zero(t, n, "a sessions row holds %q", secret)
}

func TestSession(t *testing.T) {
	t.Parallel()

	// The cookie holds a session id, not the token: Postgres keeps only the
	// id's SHA-256, and the admin token's session only a binding to it.
	t.Run("AdminTokenSignsIn", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		rec := b.request(t, http.MethodPost, "/ui/session", map[string]any{"key": token}, "")
		require.Equal(t, http.StatusOK, rec.Code, "body: %s", rec.Body.String())
		info := decode[api.SessionInfo](t, rec)
		require.True(t, info.Admin)
		require.Equal(t, store.BootstrapAdmin.String(), info.User)
		c := sessionCookie(rec)
		require.NotNil(t, c)
		require.NotContains(t, c.Value, token)
		require.Regexp(t, `^tses_[A-Za-z0-9_-]{43}$`, c.Value, "32 random bytes")
		require.True(t, c.HttpOnly)
		require.Equal(t, http.SameSiteStrictMode, c.SameSite)
		require.Equal(t, "/", c.Path)
		require.Equal(t, int((12 * time.Hour).Seconds()), c.MaxAge)
		require.False(t, c.Secure, "plain HTTP")
		require.Equal(t, "no-store", rec.Header().Get("Cache-Control"))

		row, ok := b.storedSession(t, c.Value)
		require.True(t, ok, "stored by the SHA-256 of the id")
		require.Nil(t, row.keyID, "the admin token has no key")
		require.Len(t, row.binding, 32)
		adminSum := sha256.Sum256([]byte(token))
		require.NotEqual(t, adminSum[:], row.binding, "not the token's bare hash")
		require.True(t, row.expires.Equal(b.now.Add(12*time.Hour)))
		b.requireNotInPostgres(t, c.Value)
		b.requireNotInPostgres(t, token)
	})

	t.Run("SecureOverTLS", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		rec := b.send(t, http.MethodPost, "/ui/session", map[string]any{"key": token}, func(r *http.Request) {
			r.Header.Set("X-Forwarded-Proto", "https")
		})
		require.Equal(t, http.StatusOK, rec.Code)
		require.True(t, sessionCookie(rec).Secure)
	})

	t.Run("UserKeySignsInByForm", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ann := b.user(t, "ann", "user", nil)
		form := neturl.Values{"key": {ann.key}}.Encode()
		rec := b.send(t, http.MethodPost, "/ui/session", strings.NewReader(form), func(r *http.Request) {
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		})
		require.Equal(t, http.StatusSeeOther, rec.Code, "body: %s", rec.Body.String())
		require.Equal(t, "/", rec.Header().Get("Location"))
		id := sessionCookie(rec).Value
		require.NotContains(t, id, ann.key)
		require.True(t, strings.HasPrefix(id, "tses_"), id)

		keys := decode[api.KeyList](t, b.do(t, http.MethodGet, "/api/v1/users/"+ann.id.String()+"/keys", nil))
		row, ok := b.storedSession(t, id)
		require.True(t, ok)
		require.Equal(t, keys.Keys[0].ID, *row.keyID, "the session acts through the key it was opened with")
		require.Nil(t, row.binding)
		b.requireNotInPostgres(t, id)
		b.requireNotInPostgres(t, ann.key)
	})

	t.Run("BadKeysAreRefusedAlike", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ann := b.user(t, "ann", "user", nil)
		live := b.signIn(t, token)
		rec := b.do(t, http.MethodPost, "/api/v1/users/"+ann.id.String()+"/disable", nil)
		require.Equal(t, http.StatusOK, rec.Code)
		for _, key := range []string{"", "nope", token + "x", "tock_aaaaaaaaaaaaa_secret", ann.key, live} {
			rec := b.request(t, http.MethodPost, "/ui/session", map[string]any{"key": key}, "")
			requireError(t, rec, http.StatusUnauthorized, apierr.CodeUnauthorized)
			require.Nil(t, sessionCookie(rec), "key %q", key)
		}
		var n int
		require.NoError(t, b.store.Pool().QueryRow(t.Context(), `SELECT count(*) FROM sessions`).Scan(&n))
		require.Equal(t, 1, n, "no refused sign-in stored a session")
	})

	t.Run("CrossSiteSignInIsRefused", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		rec := b.send(t, http.MethodPost, "/ui/session", map[string]any{"key": token}, func(r *http.Request) {
			r.Header.Set("Origin", "https://evil.example")
		})
		requireError(t, rec, http.StatusForbidden, apierr.CodeForbidden)
		require.Nil(t, sessionCookie(rec))
	})

	// The cookie authenticates as the key it was opened with; only a
	// session id is taken from the cookie, and only from the cookie.
	t.Run("CookieAuthenticatesAPICalls", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ann := b.user(t, "ann", "user", nil)
		id := b.signIn(t, ann.key)
		rec := b.withCookie(t, http.MethodGet, "/api/v1/me", nil, id, false)
		require.Equal(t, http.StatusOK, rec.Code, "body: %s", rec.Body.String())
		me := decode[api.User](t, rec)
		require.Equal(t, ann.id, me.ID)
		require.ElementsMatch(t, []string{"jobs:read", "jobs:write", "runs:read"}, me.Scopes)
		rec = b.withCookie(t, http.MethodGet, "/api/v1/jobs", nil, id, false)
		require.Equal(t, http.StatusOK, rec.Code, "body: %s", rec.Body.String())

		for name, value := range map[string]string{
			"KeyInTheCookie":   ann.key, // what a cookie of an earlier release held
			"TokenInTheCookie": token,
			"UnknownSession":   "tses_" + strings.Repeat("A", 43),
			"SessionTooShort":  id[:len(id)-1],
		} {
			t.Run(name, func(t *testing.T) {
				requireError(t, b.withCookie(t, http.MethodGet, "/api/v1/me", nil, value, false),
					http.StatusUnauthorized, apierr.CodeUnauthorized)
			})
		}
		requireError(t, b.request(t, http.MethodGet, "/api/v1/me", nil, "Bearer "+id),
			http.StatusUnauthorized, apierr.CodeUnauthorized)
	})

	t.Run("ReadOnlyKeysSessionIsReadOnly", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ann := b.user(t, "ann", "user", nil)
		rec := b.as(t, ann, http.MethodPost, "/api/v1/users/"+ann.id.String()+"/keys",
			map[string]any{"name": "wall", "scopes": []string{"jobs:read", "runs:read"}})
		require.Equal(t, http.StatusCreated, rec.Code, "body: %s", rec.Body.String())
		id := b.signIn(t, decode[api.Key](t, rec).Key)
		require.Equal(t, http.StatusOK, b.withCookie(t, http.MethodGet, "/api/v1/jobs", nil, id, false).Code)
		requireError(t, b.withCookie(t, http.MethodPost, "/api/v1/jobs", spec("x", b.now.Add(time.Hour)), id, true),
			http.StatusForbidden, apierr.CodeForbidden)
	})

	t.Run("CookieChangesNeedTheCSRFHeader", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		id := b.signIn(t, token)
		body := spec("from the browser", b.now.Add(time.Hour))
		rec := b.withCookie(t, http.MethodPost, "/api/v1/jobs", body, id, false)
		requireError(t, rec, http.StatusUnauthorized, apierr.CodeUnauthorized)

		rec = b.withCookie(t, http.MethodPost, "/api/v1/jobs", body, id, true)
		require.Equal(t, http.StatusCreated, rec.Code, "body: %s", rec.Body.String())
		j := decode[api.Job](t, rec)

		rec = b.withCookie(t, http.MethodDelete, "/api/v1/jobs/"+j.ID.String(), nil, id, false)
		requireError(t, rec, http.StatusUnauthorized, apierr.CodeUnauthorized)
		rec = b.withCookie(t, http.MethodDelete, "/api/v1/jobs/"+j.ID.String(), nil, id, true)
		require.Equal(t, http.StatusNoContent, rec.Code, "body: %s", rec.Body.String())
	})

	// Signing out deletes the session's row: the same cookie, sent again
	// (kept by a copy of the browser's profile, say), is refused.
	t.Run("SignOutEndsTheSession", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ann := b.user(t, "ann", "user", nil)
		for _, method := range []string{http.MethodPost, http.MethodDelete} {
			path := "/ui/session"
			if method == http.MethodPost {
				path += "/logout"
			}
			id := b.signIn(t, ann.key)
			other := b.signIn(t, ann.key)
			require.Equal(t, http.StatusOK, b.withCookie(t, http.MethodGet, "/api/v1/me", nil, id, false).Code)

			rec := b.withCookie(t, method, path, nil, id, true)
			require.Equal(t, http.StatusNoContent, rec.Code)
			c := sessionCookie(rec)
			require.NotNil(t, c)
			require.Empty(t, c.Value)
			require.Negative(t, c.MaxAge)
			_, ok := b.storedSession(t, id)
			require.False(t, ok, "deleted in Postgres")
			requireError(t, b.withCookie(t, http.MethodGet, "/api/v1/me", nil, id, false), http.StatusUnauthorized, apierr.CodeUnauthorized)
			require.Equal(t, http.StatusOK, b.withCookie(t, http.MethodGet, "/api/v1/me", nil, other, false).Code,
				"another session of the same key stays")
			require.Equal(t, http.StatusOK, b.as(t, ann, http.MethodGet, "/api/v1/me", nil).Code, "and so does the key")
		}
		// Without a session, or with one already ended, signing out only
		// clears the cookie.
		for _, value := range []string{"", "not-a-session", "tses_" + strings.Repeat("A", 43)} {
			rec := b.withCookie(t, http.MethodDelete, "/ui/session", nil, value, false)
			require.Equal(t, http.StatusNoContent, rec.Code)
			require.Negative(t, sessionCookie(rec).MaxAge)
		}
	})

	// What ends a key ends the sessions opened with it, on the next request.
	t.Run("EndingTheKeyEndsTheSession", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		for name, end := range map[string]func(t *testing.T, p person, keyID uuid.UUID){
			"Revoked": func(t *testing.T, _ person, keyID uuid.UUID) {
				require.Equal(t, http.StatusNoContent, b.do(t, http.MethodDelete, "/api/v1/keys/"+keyID.String(), nil).Code)
			},
			"UserDisabled": func(t *testing.T, p person, _ uuid.UUID) {
				require.Equal(t, http.StatusOK, b.do(t, http.MethodPost, "/api/v1/users/"+p.id.String()+"/disable", nil).Code)
			},
			"UserErased": func(t *testing.T, p person, _ uuid.UUID) {
				require.Equal(t, http.StatusOK, b.do(t, http.MethodPost, "/api/v1/users/"+p.id.String()+"/erase", nil).Code)
			},
		} {
			t.Run(name, func(t *testing.T) {
				p := b.user(t, "u-"+name, "user", nil)
				keys := decode[api.KeyList](t, b.do(t, http.MethodGet, "/api/v1/users/"+p.id.String()+"/keys", nil))
				id := b.signIn(t, p.key)
				require.Equal(t, http.StatusOK, b.withCookie(t, http.MethodGet, "/api/v1/me", nil, id, false).Code)
				end(t, p, keys.Keys[0].ID)
				requireError(t, b.withCookie(t, http.MethodGet, "/api/v1/me", nil, id, false), http.StatusUnauthorized, apierr.CodeUnauthorized)
				if name != "UserDisabled" {
					_, ok := b.storedSession(t, id)
					require.False(t, ok, "the session's row is deleted with the key")
				}
			})
		}
	})

	t.Run("ExpiringKeyEndsTheSession", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ann := b.user(t, "ann", "user", nil)
		rec := b.as(t, ann, http.MethodPost, "/api/v1/users/"+ann.id.String()+"/keys",
			map[string]any{"expires_at": b.now.Add(time.Hour).Format(time.RFC3339Nano)})
		require.Equal(t, http.StatusCreated, rec.Code, "body: %s", rec.Body.String())
		id := b.signIn(t, decode[api.Key](t, rec).Key)
		require.Equal(t, http.StatusOK, b.withCookie(t, http.MethodGet, "/api/v1/me", nil, id, false).Code)
		b.now = b.now.Add(time.Hour)
		requireError(t, b.withCookie(t, http.MethodGet, "/api/v1/me", nil, id, false), http.StatusUnauthorized, apierr.CodeUnauthorized)
	})

	t.Run("SessionEndsAfterTwelveHours", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		id := b.signIn(t, token)
		b.now = b.now.Add(12*time.Hour - time.Millisecond)
		require.Equal(t, http.StatusOK, b.withCookie(t, http.MethodGet, "/api/v1/me", nil, id, false).Code)
		b.now = b.now.Add(time.Millisecond)
		requireError(t, b.withCookie(t, http.MethodGet, "/api/v1/me", nil, id, false), http.StatusUnauthorized, apierr.CodeUnauthorized)
	})

	// A session of the admin token ends when TOCK_ADMIN_TOKEN changes.
	t.Run("NewAdminTokenEndsItsSessions", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		id := b.signIn(t, token)
		restarted := b.another(t, func(d *api.Deps) { d.AdminToken = "another-admin-token-0123456789" })
		requireError(t, restarted.withCookie(t, http.MethodGet, "/api/v1/me", nil, id, false), http.StatusUnauthorized, apierr.CodeUnauthorized)
		same := b.another(t)
		require.Equal(t, http.StatusOK, same.withCookie(t, http.MethodGet, "/api/v1/me", nil, id, false).Code,
			"another dashboard with the same token serves it")
	})

	t.Run("ServesThePages", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		for path, ctype := range map[string]string{"/": "text/html", "/ui/app.js": "javascript", "/ui/app.css": "text/css"} {
			rec := b.request(t, http.MethodGet, path, nil, "")
			require.Equal(t, http.StatusOK, rec.Code, path)
			require.Contains(t, rec.Header().Get("Content-Type"), ctype, path)
			require.Contains(t, rec.Header().Get("Content-Security-Policy"), "frame-ancestors 'none'", path)
		}
		for _, path := range []string{"/ui/nothing.js", "/ui/index.html", "/ui/..%2fweb.go"} {
			rec := b.request(t, http.MethodGet, path, nil, "")
			require.Equal(t, http.StatusNotFound, rec.Code, path)
		}
	})
}

func TestListJobsSearch(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ann := b.user(t, "ann", "user", nil)
	report := b.create(t, "Weekly Report", b.now.Add(time.Hour))
	b.create(t, "cleanup", b.now.Add(time.Hour))
	body := spec("ann's report", b.now.Add(time.Hour))
	body["owner"] = ann.id.String()
	rec := b.do(t, http.MethodPost, "/api/v1/jobs", body)
	require.Equal(t, http.StatusCreated, rec.Code, "body: %s", rec.Body.String())

	list := func(t *testing.T, rec *httptest.ResponseRecorder) []string {
		t.Helper()
		require.Equal(t, http.StatusOK, rec.Code, "body: %s", rec.Body.String())
		return names(decode[api.JobList](t, rec).Jobs)
	}

	cases := []struct {
		name, query string
		want        []string
	}{
		{"NameSubstringIgnoringCase", "q=REPORT", []string{"ann's report", "Weekly Report"}},
		{"ExactID", "q=" + report.ID.String(), []string{"Weekly Report"}},
		{"NoMatch", "q=nothing", []string{}},
		{"Owner", "owner=" + ann.id.String(), []string{"ann's report"}},
		{"OwnerAndName", "owner=" + store.BootstrapAdmin.String() + "&q=report", []string{"Weekly Report"}},
		{"WithStatus", "q=report&status=paused", []string{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := list(t, b.do(t, http.MethodGet, "/api/v1/jobs?"+tc.query, nil))
			require.ElementsMatch(t, tc.want, got)
		})
	}

	t.Run("UserSeesOnlyOwnMatches", func(t *testing.T) {
		t.Parallel()
		require.Equal(t, []string{"ann's report"}, list(t, b.as(t, ann, http.MethodGet, "/api/v1/jobs?q=report", nil)))
		require.Empty(t, list(t, b.as(t, ann, http.MethodGet, "/api/v1/jobs?q="+report.ID.String(), nil)))
		require.Equal(t, []string{"ann's report"}, list(t, b.as(t, ann, http.MethodGet, "/api/v1/jobs?owner="+ann.id.String(), nil)))
	})

	t.Run("UserCannotNameAnotherOwner", func(t *testing.T) {
		t.Parallel()
		rec := b.as(t, ann, http.MethodGet, "/api/v1/jobs?owner="+store.BootstrapAdmin.String(), nil)
		requireError(t, rec, http.StatusForbidden, apierr.CodeForbidden)
	})

	t.Run("MalformedOwner", func(t *testing.T) {
		t.Parallel()
		rec := b.do(t, http.MethodGet, "/api/v1/jobs?owner=ann", nil)
		require.Equal(t, "owner", requireError(t, rec, http.StatusBadRequest, apierr.CodeInvalid).Field)
	})
}

func TestSystem(t *testing.T) {
	t.Parallel()

	t.Run("FiguresOfTheHourAroundNow", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		// Ten seconds into a minute, so both attempts start in the same one.
		b.now = b.now.Truncate(time.Minute).Add(time.Minute + 10*time.Second)
		// Two attempts of one occurrence: the first 500 ms late and failed,
		// the retry 1500 ms late and completed.
		j := b.create(t, "flaky", b.now.Add(time.Second))
		occ := b.occurrence(j)
		due := j.RunAt.Time
		b.finish(t, store.Result{Occurrence: occ, Status: job.RunFailed, DueAt: due, StartedAt: due.Add(500 * time.Millisecond),
			FinishedAt: due.Add(600 * time.Millisecond), Error: "status 503"})
		b.finish(t, store.Result{Occurrence: occ.Next(), Status: job.RunCompleted, DueAt: due, StartedAt: due.Add(1500 * time.Millisecond),
			FinishedAt: due.Add(1600 * time.Millisecond)})

		// Two minutes on: those runs are behind, a new job is ahead, in Redis.
		b.now = b.now.Add(2 * time.Minute)
		ahead := b.create(t, "ahead", b.now.Add(5*time.Minute))
		require.NoError(t, b.rdb.Set(t.Context(), b.keys.LoaderLock(), "token", 8*time.Second).Err())
		require.NoError(t, queue.NewShard(b.rdb, b.keys).EnsureGroup(t.Context()))
		require.NoError(t, b.rdb.XGroupCreateConsumer(t.Context(), b.keys.Ready(), queue.Group, "worker-1").Err())

		rec := b.do(t, http.MethodGet, "/api/v1/system", nil)
		require.Equal(t, http.StatusOK, rec.Code, "body: %s", rec.Body.String())
		sys := decode[api.System](t, rec)
		require.True(t, sys.GeneratedAt.Equal(b.now))
		require.Equal(t, []api.MinuteCount{{Minute: api.Time{ahead.RunAt.Truncate(time.Minute)}, Count: 1}}, sys.DueNextHour)
		require.Equal(t, int64(2), sys.Queue.Due, "both jobs were within the horizon when created")
		require.Len(t, sys.Runs, 1)
		var total int64
		for _, n := range sys.Runs[0].Counts {
			total += n
		}
		require.Equal(t, int64(2), total)
		require.Equal(t, int64(1), sys.Runs[0].Counts["failed"])
		require.Equal(t, int64(1), sys.Runs[0].Counts["completed"])
		require.Len(t, sys.Lateness, 1)
		require.Equal(t, int64(2), sys.Lateness[0].Runs)
		require.InDelta(t, 1000, sys.Lateness[0].P50MS, 1)
		require.InDelta(t, 1490, sys.Lateness[0].P99MS, 1)
		require.True(t, sys.Scheduler.LoaderLockHeld)
		require.InDelta(t, 8000, sys.Scheduler.LoaderLockTTLMS, 2000)
		require.Len(t, sys.Workers, 1)
		require.Equal(t, "worker-1", sys.Workers[0].Name)
	})

	t.Run("EmptyWhenNothingHappens", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		rec := b.do(t, http.MethodGet, "/api/v1/system", nil)
		require.Equal(t, http.StatusOK, rec.Code, "body: %s", rec.Body.String())
		sys := decode[api.System](t, rec)
		require.Empty(t, sys.DueNextHour)
		require.Empty(t, sys.Runs)
		require.Empty(t, sys.Workers)
		require.False(t, sys.Scheduler.LoaderLockHeld)
		require.Zero(t, sys.Queue)
	})

	t.Run("AdministratorsOnly", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ann := b.user(t, "ann", "user", nil)
		requireError(t, b.as(t, ann, http.MethodGet, "/api/v1/system", nil), http.StatusForbidden, apierr.CodeForbidden)
	})
}
