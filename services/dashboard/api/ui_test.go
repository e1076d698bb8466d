package api_test

import (
	"net/http"
	"net/http/httptest"
	neturl "net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/queue"
	"github.com/tockhq/tock/pkg/store"
	"github.com/tockhq/tock/services/dashboard/api"
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
func (b *bundle) withCookie(t *testing.T, method, path string, body any, key string, csrf bool) *httptest.ResponseRecorder {
	t.Helper()
	return b.send(t, method, path, body, func(r *http.Request) {
		r.AddCookie(&http.Cookie{Name: "tock_session", Value: key})
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

func TestSession(t *testing.T) {
	t.Parallel()

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
		require.Equal(t, token, c.Value)
		require.True(t, c.HttpOnly)
		require.Equal(t, http.SameSiteStrictMode, c.SameSite)
		require.Equal(t, "/", c.Path)
		require.False(t, c.Secure, "plain HTTP")
		require.Equal(t, "no-store", rec.Header().Get("Cache-Control"))
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
		require.Equal(t, ann.key, sessionCookie(rec).Value)
	})

	t.Run("BadKeysAreRefusedAlike", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ann := b.user(t, "ann", "user", nil)
		rec := b.do(t, http.MethodPost, "/api/v1/users/"+ann.id.String()+"/disable", nil)
		require.Equal(t, http.StatusOK, rec.Code)
		for _, key := range []string{"", "nope", token + "x", "tock_aaaaaaaaaaaaa_secret", ann.key} {
			rec := b.request(t, http.MethodPost, "/ui/session", map[string]any{"key": key}, "")
			requireError(t, rec, http.StatusUnauthorized, api.CodeUnauthorized)
			require.Nil(t, sessionCookie(rec), "key %q", key)
		}
	})

	t.Run("CrossSiteSignInIsRefused", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		rec := b.send(t, http.MethodPost, "/ui/session", map[string]any{"key": token}, func(r *http.Request) {
			r.Header.Set("Origin", "https://evil.example")
		})
		requireError(t, rec, http.StatusForbidden, api.CodeForbidden)
		require.Nil(t, sessionCookie(rec))
	})

	t.Run("CookieAuthenticatesReads", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ann := b.user(t, "ann", "user", nil)
		rec := b.withCookie(t, http.MethodGet, "/api/v1/me", nil, ann.key, false)
		require.Equal(t, http.StatusOK, rec.Code, "body: %s", rec.Body.String())
		require.Equal(t, ann.id, decode[api.User](t, rec).ID)

		rec = b.withCookie(t, http.MethodGet, "/api/v1/me", nil, "tock_aaaaaaaaaaaaa_secret", false)
		requireError(t, rec, http.StatusUnauthorized, api.CodeUnauthorized)
	})

	t.Run("CookieChangesNeedTheCSRFHeader", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		body := spec("from the browser", b.now.Add(time.Hour))
		rec := b.withCookie(t, http.MethodPost, "/api/v1/jobs", body, token, false)
		requireError(t, rec, http.StatusUnauthorized, api.CodeUnauthorized)

		rec = b.withCookie(t, http.MethodPost, "/api/v1/jobs", body, token, true)
		require.Equal(t, http.StatusCreated, rec.Code, "body: %s", rec.Body.String())
		j := decode[api.Job](t, rec)

		rec = b.withCookie(t, http.MethodDelete, "/api/v1/jobs/"+j.ID.String(), nil, token, false)
		requireError(t, rec, http.StatusUnauthorized, api.CodeUnauthorized)
		rec = b.withCookie(t, http.MethodDelete, "/api/v1/jobs/"+j.ID.String(), nil, token, true)
		require.Equal(t, http.StatusNoContent, rec.Code, "body: %s", rec.Body.String())
	})

	t.Run("SignOutClearsTheCookie", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		for _, method := range []string{http.MethodPost, http.MethodDelete} {
			path := "/ui/session"
			if method == http.MethodPost {
				path += "/logout"
			}
			rec := b.withCookie(t, method, path, nil, token, true)
			require.Equal(t, http.StatusNoContent, rec.Code)
			c := sessionCookie(rec)
			require.NotNil(t, c)
			require.Empty(t, c.Value)
			require.Negative(t, c.MaxAge)
		}
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
		requireError(t, rec, http.StatusForbidden, api.CodeForbidden)
	})

	t.Run("MalformedOwner", func(t *testing.T) {
		t.Parallel()
		rec := b.do(t, http.MethodGet, "/api/v1/jobs?owner=ann", nil)
		require.Equal(t, "owner", requireError(t, rec, http.StatusBadRequest, api.CodeInvalid).Field)
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
		_, err := b.store.StartRuns(t.Context(), []store.Start{{Occurrence: occ, DueAt: due}}, due.Add(500*time.Millisecond), time.Second)
		require.NoError(t, err)
		require.NoError(t, b.store.FinishRuns(t.Context(), []store.Result{{Occurrence: occ, Status: job.RunFailed,
			FinishedAt: due.Add(600 * time.Millisecond), Error: "status 503"}}, due.Add(600*time.Millisecond)))
		_, err = b.store.StartRuns(t.Context(), []store.Start{{Occurrence: occ.Next(), DueAt: due}}, due.Add(1500*time.Millisecond), time.Second)
		require.NoError(t, err)
		require.NoError(t, b.store.FinishRuns(t.Context(), []store.Result{{Occurrence: occ.Next(), Status: job.RunCompleted,
			FinishedAt: due.Add(1600 * time.Millisecond)}}, due.Add(1600*time.Millisecond)))

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
		requireError(t, b.as(t, ann, http.MethodGet, "/api/v1/system", nil), http.StatusForbidden, api.CodeForbidden)
	})
}
