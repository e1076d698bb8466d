package api_test

import (
	"bytes"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"go.uber.org/zap/zaptest"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/jobspec"
	"github.com/tockhq/tock/pkg/jobtype"
	"github.com/tockhq/tock/pkg/probe"
	"github.com/tockhq/tock/pkg/queue"
	"github.com/tockhq/tock/pkg/store"
	"github.com/tockhq/tock/pkg/testenv"
	"github.com/tockhq/tock/services/dashboard/api"
	"github.com/tockhq/tock/services/dashboard/apierr"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const token = "test-admin-token-0123456789abcdef"

// bundle is what one test works with: the API's handler, the real store and
// Redis behind it, the queue's keys and the fixed time the API's clock reads.
type bundle struct {
	h     http.Handler
	store *store.Store
	rdb   redis.UniversalClient
	keys  queue.Keys
	now   time.Time
	// deps built h; another builds more servers from them.
	deps api.Deps
}

// setup builds the API on a schema and a key prefix of the test's own;
// options adjust the Deps before the server is built.
func setup(t *testing.T, opts ...func(*api.Deps)) *bundle {
	t.Helper()
	st := testenv.Store(t)
	rdb, prefix := testenv.Redis(t)
	b := &bundle{
		store: st,
		rdb:   rdb,
		keys:  queue.Keys{Prefix: prefix, Shard: 0},
		now:   time.Now().UTC().Truncate(time.Millisecond),
	}
	d := api.Deps{
		Store:      st,
		Queue:      queue.New(rdb, prefix, 1),
		Redis:      rdb,
		Logger:     zaptest.NewLogger(t),
		Clock:      func() time.Time { return b.now },
		AdminToken: token,
		Horizon:    10 * time.Minute,
		Limits:     jobspec.DefaultLimits,
	}
	for _, o := range opts {
		o(&d)
	}
	b.deps = d
	b.h = validated(t, api.New(d).Handler())
	return b
}

// another is a second dashboard beside b's: a server of its own (its own
// memory of blocked addresses and good tokens) on the same Postgres, Redis
// prefix and clock (b's now), adjusted by opts, as behind one load
// balancer. Its requests are sent through the bundle it returns.
func (b *bundle) another(t *testing.T, opts ...func(*api.Deps)) *bundle {
	t.Helper()
	d := b.deps
	for _, o := range opts {
		o(&d)
	}
	b2 := *b
	b2.deps = d
	b2.h = validated(t, api.New(d).Handler())
	return &b2
}

// deadRedis is a client for a port nothing listens on: every command fails.
func deadRedis(t *testing.T) redis.UniversalClient {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: time.Second})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// deadStore is a store on a port nothing listens on: every query fails.
func deadStore(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.Open(t.Context(), "postgres://postgres@127.0.0.1:1/test?sslmode=disable&connect_timeout=1", 2)
	require.NoError(t, err)
	t.Cleanup(st.Close)
	return st
}

// request sends body (nil, a string, or a value to encode as JSON) with the
// given Authorization header.
func (b *bundle) request(t *testing.T, method, path string, body any, auth string) *httptest.ResponseRecorder {
	t.Helper()
	var r io.Reader
	switch v := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(v)
	case io.Reader:
		r = v
	default:
		raw, err := json.Marshal(v)
		require.NoError(t, err)
		r = bytes.NewReader(raw)
	}
	req := httptest.NewRequestWithContext(t.Context(), method, path, r)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	rec := httptest.NewRecorder()
	b.h.ServeHTTP(rec, req)
	return rec
}

// do sends an authenticated request.
func (b *bundle) do(t *testing.T, method, path string, body any) *httptest.ResponseRecorder {
	t.Helper()
	return b.request(t, method, path, body, "Bearer "+token)
}

func decode[T any](t *testing.T, rec *httptest.ResponseRecorder) T {
	t.Helper()
	var v T
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &v), "body: %s", rec.Body.String())
	return v
}

// requireError checks the status and the error shape, and returns the detail.
func requireError(t *testing.T, rec *httptest.ResponseRecorder, status int, code string) apierr.Detail {
	t.Helper()
	require.Equal(t, status, rec.Code, "body: %s", rec.Body.String())
	require.Equal(t, "application/json", rec.Header().Get("Content-Type"))
	var raw map[string]map[string]any
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &raw), "body: %s", rec.Body.String())
	require.Len(t, raw, 1, "only the error key: %s", rec.Body.String())
	body := decode[apierr.Body](t, rec)
	require.Equal(t, code, body.Error.Code)
	require.NotEmpty(t, body.Error.Message)
	if body.Error.Field == "" {
		require.NotContains(t, raw["error"], "field", "field is omitted when none")
	}
	return body.Error
}

// spec is a valid ping job due at runAt, as a client would send it.
func spec(name string, runAt time.Time) map[string]any {
	return map[string]any{
		"name":    name,
		"type":    "ping",
		"run_at":  runAt.Format(time.RFC3339Nano),
		"payload": map[string]any{"url": "https://example.com/health"},
	}
}

// create posts a valid job and returns it.
func (b *bundle) create(t *testing.T, name string, runAt time.Time) api.Job {
	t.Helper()
	rec := b.do(t, http.MethodPost, "/api/v1/jobs", spec(name, runAt))
	require.Equal(t, http.StatusCreated, rec.Code, "body: %s", rec.Body.String())
	return decode[api.Job](t, rec)
}

func (b *bundle) occurrence(j api.Job) job.Occurrence {
	return job.Occurrence{JobID: j.ID, ScheduledFor: j.RunAt.Time, Attempt: 1, Priority: j.Priority}.Route(j.Owner, j.Payload)
}

// running starts attempt o (routed, so that its member names its owner) as
// a worker does: its lease, from startedAt for an hour, goes into its job's
// run hash in Redis, where attempts in flight live; Postgres holds nothing
// of it until its outcome.
func (b *bundle) running(t *testing.T, o job.Occurrence, dueAt, startedAt time.Time) queue.Lease {
	t.Helper()
	l := lease(o, dueAt, startedAt)
	require.Equal(t, queue.StartRun, b.start(t, l), "attempt %s is leased", o.Member())
	return l
}

// lease is the lease a worker asks for to start attempt o, due at dueAt,
// at startedAt, for an hour.
func lease(o job.Occurrence, dueAt, startedAt time.Time) queue.Lease {
	return queue.Lease{Occurrence: o, Worker: "worker-1", Run: job.NewID(), StartedAt: startedAt, Until: startedAt.Add(time.Hour),
		DueAt: dueAt, Entry: "0-1", Member: o.Member()}
}

// start asks to lease l as a worker does that read its job at the
// generation of l's occurrence, and returns the start script's answer
// (queue.StartRun, queue.StartFenced, ...).
func (b *bundle) start(t *testing.T, l queue.Lease) int {
	t.Helper()
	q := queue.New(b.rdb, b.keys.Prefix, 1)
	got, err := q.Of(l.Occurrence.JobID).Start(t.Context(), []queue.Start{{Generation: l.Occurrence.Generation, Lease: l}},
		l.StartedAt, store.OverlapWaitKept)
	require.NoError(t, err)
	require.Len(t, got, 1)
	return got[0]
}

// finish records outcomes as a worker does: each attempt's one row in
// Postgres, owned by its occurrence's owner.
func (b *bundle) finish(t *testing.T, results ...store.Result) {
	t.Helper()
	for i := range results {
		results[i].Owner = results[i].Occurrence.Owner
	}
	require.NoError(t, b.store.FinishRuns(t.Context(), results, results[0].FinishedAt))
}

// wireTime matches TimeFormat: UTC with milliseconds.
var wireTime = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)

func TestAuth(t *testing.T) {
	t.Parallel()

	t.Run("MissingTokenIs401", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		rec := b.request(t, http.MethodGet, "/api/v1/jobs", nil, "")
		requireError(t, rec, http.StatusUnauthorized, apierr.CodeUnauthorized)
		require.Contains(t, rec.Header().Get("WWW-Authenticate"), "Bearer")
	})

	t.Run("WrongTokenIs401", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		for _, auth := range []string{
			"Bearer wrong-token-0123456789abcdef",
			"Bearer " + token + "x",
			"Bearer " + token[:len(token)-1],
			"Bearer ",
			"Basic " + token,
			token,
		} {
			rec := b.request(t, http.MethodPost, "/api/v1/jobs", spec("x", b.now.Add(time.Hour)), auth)
			requireError(t, rec, http.StatusUnauthorized, apierr.CodeUnauthorized)
		}
	})

	t.Run("EmptyConfiguredTokenAdmitsNobody", func(t *testing.T) {
		t.Parallel()
		b := setup(t, func(d *api.Deps) { d.AdminToken = "" })
		requireError(t, b.request(t, http.MethodGet, "/api/v1/jobs", nil, "Bearer "), http.StatusUnauthorized, apierr.CodeUnauthorized)
		requireError(t, b.request(t, http.MethodGet, "/api/v1/jobs", nil, "Bearer  "), http.StatusUnauthorized, apierr.CodeUnauthorized)
	})

	t.Run("AdminTokenIsAdmitted", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		require.Equal(t, http.StatusOK, b.request(t, http.MethodGet, "/api/v1/jobs", nil, "Bearer "+token).Code)
		require.Equal(t, http.StatusOK, b.request(t, http.MethodGet, "/api/v1/jobs", nil, "bearer "+token).Code)
	})
}

func TestCreateJob(t *testing.T) {
	t.Parallel()

	t.Run("ReturnsCreatedJob", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		runAt := b.now.Add(time.Hour)
		body := spec("nightly ping", runAt)
		body["priority"] = 7
		body["max_retries"] = 5
		body["timeout"] = "1m30s"
		rec := b.do(t, http.MethodPost, "/api/v1/jobs", body)
		require.Equal(t, http.StatusCreated, rec.Code, "body: %s", rec.Body.String())

		j := decode[api.Job](t, rec)
		require.NotEqual(t, [16]byte{}, j.ID)
		require.Equal(t, "nightly ping", j.Name)
		require.Equal(t, jobtype.TypePing, j.Type)
		require.Equal(t, job.StatusScheduled, j.Status)
		require.JSONEq(t, `{"url":"https://example.com/health"}`, string(j.Payload))
		require.Equal(t, 7, j.Priority)
		require.Equal(t, 5, j.MaxRetries)
		require.Equal(t, "1m30s", j.Timeout)
		require.True(t, runAt.Equal(j.RunAt.Time))
		require.True(t, runAt.Equal(j.NextRunAt.Time))
		require.True(t, b.now.Equal(j.CreatedAt.Time))
		require.True(t, b.now.Equal(j.UpdatedAt.Time))
		require.Equal(t, api.AdminID, j.Owner)

		raw := decode[map[string]any](t, rec)
		for _, k := range []string{"run_at", "next_run_at", "created_at", "updated_at"} {
			require.Regexp(t, wireTime, raw[k], k)
		}
		require.ElementsMatch(t, []string{"id", "name", "type", "status", "payload", "priority", "max_retries",
			"timeout", "run_at", "timezone", "next_run_at", "created_at", "updated_at", "owner", "last_run", "history", "labels"}, keys(raw))
		require.Equal(t, "UTC", raw["timezone"])
	})

	t.Run("AppliesDefaults", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := b.create(t, "defaults", b.now.Add(time.Hour))
		require.Equal(t, 0, j.Priority)
		require.Equal(t, job.DefaultMaxRetries, j.MaxRetries)
		require.Equal(t, "30s", j.Timeout)
	})

	t.Run("ShortNoticeGoesToRedis", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := b.create(t, "soon", b.now.Add(2*time.Second))

		score, err := b.rdb.ZScore(t.Context(), b.keys.Due(), b.occurrence(j).Member()).Result()
		require.NoError(t, err)
		require.Equal(t, float64(j.RunAt.UnixMilli()), score)

		stored, err := b.store.GetJob(t.Context(), store.AnyOwner, j.ID)
		require.NoError(t, err)
		require.True(t, stored.DueAt.IsZero(), "stored as claimed")
		require.True(t, j.RunAt.Equal(stored.RunAt))
	})

	t.Run("BeyondHorizonStaysInPostgres", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := b.create(t, "later", b.now.Add(time.Hour))

		n, err := b.rdb.ZCard(t.Context(), b.keys.Due()).Result()
		require.NoError(t, err)
		require.Zero(t, n)

		stored, err := b.store.GetJob(t.Context(), store.AnyOwner, j.ID)
		require.NoError(t, err)
		require.True(t, j.RunAt.Equal(stored.DueAt), "left for the loader")
	})

	t.Run("EnqueueFailureReleasesClaim", func(t *testing.T) {
		t.Parallel()
		b := setup(t, func(d *api.Deps) { d.Queue = queue.New(deadRedis(t), "unused", 1) })
		j := b.create(t, "redis down", b.now.Add(2*time.Second))

		stored, err := b.store.GetJob(t.Context(), store.AnyOwner, j.ID)
		require.NoError(t, err)
		require.True(t, j.RunAt.Equal(stored.DueAt), "handed back to the loader")
		require.Equal(t, job.StatusScheduled, stored.Status)
	})

	t.Run("PostgresDownIs503", func(t *testing.T) {
		t.Parallel()
		b := setup(t, func(d *api.Deps) { d.Store = deadStore(t) })
		rec := b.do(t, http.MethodPost, "/api/v1/jobs", spec("x", b.now.Add(2*time.Second)))
		requireError(t, rec, http.StatusServiceUnavailable, apierr.CodeUnavailable)

		n, err := b.rdb.ZCard(t.Context(), b.keys.Due()).Result()
		require.NoError(t, err)
		require.Zero(t, n, "nothing enqueued for a job not committed")
	})

	t.Run("RejectsInvalidSpec", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		valid := func(edit func(m map[string]any)) map[string]any {
			m := spec("x", b.now.Add(time.Hour))
			edit(m)
			return m
		}
		cases := []struct {
			name  string
			body  any
			field string
		}{
			{"MissingName", valid(func(m map[string]any) { delete(m, "name") }), "name"},
			{"BlankName", valid(func(m map[string]any) { m["name"] = "  " }), "name"},
			{"BadType", valid(func(m map[string]any) { m["type"] = "fax" }), "type"},
			{"MissingType", valid(func(m map[string]any) { delete(m, "type") }), "type"},
			{"PastRunAt", valid(func(m map[string]any) { m["run_at"] = b.now.Add(-time.Second).Format(time.RFC3339) }), "run_at"},
			{"MissingRunAt", valid(func(m map[string]any) { delete(m, "run_at") }), "run_at"},
			{"RunAtWithoutOffset", valid(func(m map[string]any) { m["run_at"] = "2030-01-02T15:04:05" }), "run_at"},
			{"RunAtNotString", valid(func(m map[string]any) { m["run_at"] = 12 }), "run_at"},
			{"BadURL", valid(func(m map[string]any) { m["payload"] = map[string]any{"url": "ftp://example.com"} }), "payload.url"},
			{"MissingPayload", valid(func(m map[string]any) { delete(m, "payload") }), "payload"},
			{"PayloadOverLimit", valid(func(m map[string]any) {
				m["type"] = "webhook"
				m["payload"] = map[string]any{"url": "https://example.com", "body": strings.Repeat("a", 70<<10)}
			}), "payload"},
			{"BadTimeout", valid(func(m map[string]any) { m["timeout"] = "soon" }), "timeout"},
			{"PriorityWrongType", valid(func(m map[string]any) { m["priority"] = "high" }), "priority"},
			{"UnknownField", valid(func(m map[string]any) { m["nmae"] = "typo" }), "nmae"},
			{"MalformedJSON", `{"name": "x", `, ""},
			{"NotAnObject", `["x"]`, ""},
			{"TrailingData", `{"name": "x"} {}`, ""},
			{"EmptyBody", "", ""},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				rec := b.do(t, http.MethodPost, "/api/v1/jobs", tc.body)
				e := requireError(t, rec, http.StatusBadRequest, apierr.CodeInvalid)
				require.Equal(t, tc.field, e.Field, "message: %s", e.Message)
			})
		}
		list := decode[api.JobList](t, b.do(t, http.MethodGet, "/api/v1/jobs", nil))
		require.Empty(t, list.Jobs, "nothing stored")
	})

	t.Run("BodyOverCapIs413", func(t *testing.T) {
		t.Parallel()
		b := setup(t, func(d *api.Deps) { d.MaxBodyBytes = 4 << 10 })
		m := spec("x", b.now.Add(time.Hour))
		m["name"] = strings.Repeat("n", 5<<10)
		raw, err := json.Marshal(m)
		require.NoError(t, err)

		// With a declared length, and streamed without one.
		requireError(t, b.do(t, http.MethodPost, "/api/v1/jobs", bytes.NewReader(raw)), http.StatusRequestEntityTooLarge, apierr.CodeTooLarge)
		requireError(t, b.do(t, http.MethodPost, "/api/v1/jobs", io.MultiReader(bytes.NewReader(raw))), http.StatusRequestEntityTooLarge, apierr.CodeTooLarge)
	})
}

func TestGetJob(t *testing.T) {
	t.Parallel()

	t.Run("ReturnsStoredJob", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		created := b.create(t, "get me", b.now.Add(time.Hour))
		rec := b.do(t, http.MethodGet, "/api/v1/jobs/"+created.ID.String(), nil)
		require.Equal(t, http.StatusOK, rec.Code, "body: %s", rec.Body.String())
		got := decode[api.Job](t, rec)
		require.Equal(t, created.ID, got.ID)
		require.Equal(t, created.Name, got.Name)
		require.Equal(t, created.Timeout, got.Timeout)
		require.JSONEq(t, string(created.Payload), string(got.Payload))
		require.True(t, created.RunAt.Equal(got.RunAt.Time))
		require.True(t, created.CreatedAt.Equal(got.CreatedAt.Time))
		require.Equal(t, api.AdminID, got.Owner)
	})

	t.Run("UnknownIs404", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		requireError(t, b.do(t, http.MethodGet, "/api/v1/jobs/"+job.NewID().String(), nil), http.StatusNotFound, apierr.CodeNotFound)
	})

	t.Run("MalformedIDIs404", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		requireError(t, b.do(t, http.MethodGet, "/api/v1/jobs/not-a-uuid", nil), http.StatusNotFound, apierr.CodeNotFound)
	})

	t.Run("PostgresDownIs503", func(t *testing.T) {
		t.Parallel()
		b := setup(t, func(d *api.Deps) { d.Store = deadStore(t) })
		requireError(t, b.do(t, http.MethodGet, "/api/v1/jobs/"+job.NewID().String(), nil), http.StatusServiceUnavailable, apierr.CodeUnavailable)
	})
}

func TestListJobs(t *testing.T) {
	t.Parallel()

	t.Run("NewestFirstWithStatusFilter", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		first := b.create(t, "first", b.now.Add(time.Hour))
		second := b.create(t, "second", b.now.Add(time.Hour))
		third := b.create(t, "third", b.now.Add(time.Hour))
		require.Equal(t, http.StatusNoContent, b.do(t, http.MethodDelete, "/api/v1/jobs/"+second.ID.String(), nil).Code)

		all := decode[api.JobList](t, b.do(t, http.MethodGet, "/api/v1/jobs", nil))
		require.Equal(t, []string{third.Name, second.Name, first.Name}, names(all.Jobs))
		require.Empty(t, all.NextCursor)

		cancelled := decode[api.JobList](t, b.do(t, http.MethodGet, "/api/v1/jobs?status=cancelled", nil))
		require.Equal(t, []string{"second"}, names(cancelled.Jobs))
		require.True(t, cancelled.Jobs[0].NextRunAt.IsZero(), "a cancelled job will not run again")

		scheduled := decode[api.JobList](t, b.do(t, http.MethodGet, "/api/v1/jobs?status=scheduled&type=ping", nil))
		require.Equal(t, []string{"third", "first"}, names(scheduled.Jobs))

		webhooks := decode[api.JobList](t, b.do(t, http.MethodGet, "/api/v1/jobs?type=webhook", nil))
		require.NotNil(t, webhooks.Jobs, "an empty page is [], not null")
		require.Empty(t, webhooks.Jobs)
	})

	t.Run("PagesWithCursor", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		for _, n := range []string{"a", "b", "c", "d", "e"} {
			b.create(t, n, b.now.Add(time.Hour))
		}
		var seen []string
		path := "/api/v1/jobs?limit=2"
		for pages := 0; ; pages++ {
			require.Less(t, pages, 3, "at most three pages")
			page := decode[api.JobList](t, b.do(t, http.MethodGet, path, nil))
			require.LessOrEqual(t, len(page.Jobs), 2)
			seen = append(seen, names(page.Jobs)...)
			if page.NextCursor == "" {
				break
			}
			path = "/api/v1/jobs?limit=2&cursor=" + page.NextCursor
		}
		require.Equal(t, []string{"e", "d", "c", "b", "a"}, seen)

		// An exact fit has no next page.
		exact := decode[api.JobList](t, b.do(t, http.MethodGet, "/api/v1/jobs?limit=5", nil))
		require.Len(t, exact.Jobs, 5)
		require.Empty(t, exact.NextCursor)
	})

	t.Run("RejectsBadQuery", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		cases := []struct{ query, field string }{
			{"limit=0", "limit"},
			{"limit=501", "limit"},
			{"limit=ten", "limit"},
			{"status=bogus", "status"},
			{"type=fax", "type"},
			{"cursor=!!!", "cursor"},
			{"cursor=YWJj", "cursor"},
		}
		for _, tc := range cases {
			rec := b.do(t, http.MethodGet, "/api/v1/jobs?"+tc.query, nil)
			e := requireError(t, rec, http.StatusBadRequest, apierr.CodeInvalid)
			require.Equal(t, tc.field, e.Field, tc.query)
		}
		require.Equal(t, http.StatusOK, b.do(t, http.MethodGet, "/api/v1/jobs?limit=500", nil).Code)
	})
}

func TestCancelJob(t *testing.T) {
	t.Parallel()

	t.Run("CancelsAndLeavesRedis", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := b.create(t, "cancel me", b.now.Add(2*time.Second))
		member := b.occurrence(j).Member()
		require.NoError(t, b.rdb.ZScore(t.Context(), b.keys.Due(), member).Err(), "enqueued first")

		rec := b.do(t, http.MethodDelete, "/api/v1/jobs/"+j.ID.String(), nil)
		require.Equal(t, http.StatusNoContent, rec.Code, "body: %s", rec.Body.String())
		require.Empty(t, rec.Body.String())

		got := decode[api.Job](t, b.do(t, http.MethodGet, "/api/v1/jobs/"+j.ID.String(), nil))
		require.Equal(t, job.StatusCancelled, got.Status)
		require.True(t, got.NextRunAt.IsZero())
		require.ErrorIs(t, b.rdb.ZScore(t.Context(), b.keys.Due(), member).Err(), redis.Nil, "member removed")

		// Cancelling again is a conflict that says so, not that only a
		// one-off job that has not started, or a recurring one, can be.
		again := requireError(t, b.do(t, http.MethodDelete, "/api/v1/jobs/"+j.ID.String(), nil), http.StatusConflict, apierr.CodeConflict)
		require.Equal(t, "the job is already cancelled", again.Message)
	})

	t.Run("RunningOneOffIs409AndChangesNothing", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := b.create(t, "busy", b.now.Add(2*time.Second))
		occ := b.occurrence(j)
		b.running(t, occ, j.RunAt.Time, j.RunAt.Add(10*time.Millisecond))

		busy := requireError(t, b.do(t, http.MethodDelete, "/api/v1/jobs/"+j.ID.String(), nil), http.StatusConflict, apierr.CodeConflict)
		require.Contains(t, busy.Message, "the job has started")
		require.Contains(t, busy.Message, "/abort")
		stored := b.stored(t, j.ID)
		require.Equal(t, job.StatusScheduled, stored.Status)
		require.Zero(t, stored.Generation, "the job did not move to a new generation")
		got := decode[api.Job](t, b.do(t, http.MethodGet, "/api/v1/jobs/"+j.ID.String(), nil))
		require.Equal(t, job.StatusScheduled, got.Status)
		require.NotNil(t, got.LastRun)
		require.Equal(t, job.RunRunning, got.LastRun.Status, "its attempt still runs")
		require.NoError(t, b.rdb.ZScore(t.Context(), b.keys.Due(), occ.Member()).Err(), "its member stays")
		audit := decode[api.AuditList](t, b.do(t, http.MethodGet, "/api/v1/audit?action=job.cancel&job="+j.ID.String(), nil))
		require.Empty(t, audit.Entries)
		// The refused cancel lifted its fence: the attempt's retry, planned
		// under the job's generation, may start.
		require.Equal(t, queue.StartRun, b.start(t, lease(occ.Next(), b.now, b.now.Add(time.Second))))
	})

	t.Run("UnknownIs404", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		requireError(t, b.do(t, http.MethodDelete, "/api/v1/jobs/"+job.NewID().String(), nil), http.StatusNotFound, apierr.CodeNotFound)
		requireError(t, b.do(t, http.MethodDelete, "/api/v1/jobs/nope", nil), http.StatusNotFound, apierr.CodeNotFound)
	})

	t.Run("RedisDownTriggerLeavesNoAuditEntry", func(t *testing.T) {
		t.Parallel()
		b := setup(t, func(d *api.Deps) { d.Queue = queue.New(deadRedis(t), "unused", 1) })
		j := b.create(t, "trigger me", b.now.Add(time.Hour))
		requireError(t, b.do(t, http.MethodPost, "/api/v1/jobs/"+j.ID.String()+"/trigger", nil), http.StatusServiceUnavailable, apierr.CodeUnavailable)
		audit := decode[api.AuditList](t, b.do(t, http.MethodGet, "/api/v1/audit?action=job.trigger", nil))
		require.Empty(t, audit.Entries, "no occurrence was queued, so no trigger is recorded")
	})

	t.Run("OneOffWithAnOutcomeIs409", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := b.create(t, "failed once", b.now.Add(2*time.Second))
		due := j.RunAt.Time
		b.finish(t, store.Result{Occurrence: b.occurrence(j), Status: job.RunFailed, DueAt: due, StartedAt: due, FinishedAt: due.Add(time.Second),
			Error: "status 503"})

		requireError(t, b.do(t, http.MethodDelete, "/api/v1/jobs/"+j.ID.String(), nil), http.StatusConflict, apierr.CodeConflict)
		require.Equal(t, job.StatusScheduled, b.stored(t, j.ID).Status, "its retry is still to come")
	})

	t.Run("RedisDownIs503AndChangesNothing", func(t *testing.T) {
		t.Parallel()
		// Whether an attempt runs, and the fence that keeps one from
		// starting after the cancel, live in Redis: without it the cancel
		// cannot keep its promise, and commits nothing.
		b := setup(t, func(d *api.Deps) { d.Queue = queue.New(deadRedis(t), "unused", 1) })
		j := b.create(t, "cancel later", b.now.Add(time.Hour))
		requireError(t, b.do(t, http.MethodDelete, "/api/v1/jobs/"+j.ID.String(), nil), http.StatusServiceUnavailable, apierr.CodeUnavailable)
		stored := b.stored(t, j.ID)
		require.Equal(t, job.StatusScheduled, stored.Status)
		require.Zero(t, stored.Generation)

		// Once Redis answers, the same request cancels.
		live := b.another(t, func(d *api.Deps) { d.Queue = queue.New(b.rdb, b.keys.Prefix, 1) })
		require.Equal(t, http.StatusNoContent, live.do(t, http.MethodDelete, "/api/v1/jobs/"+j.ID.String(), nil).Code)
		require.Equal(t, job.StatusCancelled, b.stored(t, j.ID).Status)
	})
}

func TestListRuns(t *testing.T) {
	t.Parallel()

	// started runs a job due in 2 s through two attempts: the first started
	// 500 ms late and failed, the second was due 1 s after it and is running,
	// 250 ms late.
	started := func(t *testing.T, b *bundle) api.Job {
		t.Helper()
		j := b.create(t, "flaky", b.now.Add(2*time.Second))
		first := b.occurrence(j)
		due := j.RunAt.Time
		b.finish(t, store.Result{Occurrence: first, Status: job.RunFailed, DueAt: due, StartedAt: due.Add(500 * time.Millisecond),
			FinishedAt: due.Add(700 * time.Millisecond), Output: "HTTP 503", Error: "status 503"})
		retryDue := due.Add(1700 * time.Millisecond)
		b.running(t, first.Next(), retryDue, retryDue.Add(250*time.Millisecond))
		return j
	}

	t.Run("ShowsAttemptsNewestFirst", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := started(t, b)
		rec := b.do(t, http.MethodGet, "/api/v1/jobs/"+j.ID.String()+"/runs", nil)
		require.Equal(t, http.StatusOK, rec.Code, "body: %s", rec.Body.String())

		list := decode[api.RunList](t, rec)
		require.Len(t, list.Runs, 2)
		require.Empty(t, list.NextCursor)
		second, first := list.Runs[0], list.Runs[1]

		require.Equal(t, j.ID, second.JobID)
		require.Equal(t, 2, second.Attempt)
		require.Equal(t, job.RunRunning, second.Status)
		require.True(t, second.FinishedAt.IsZero())
		require.EqualValues(t, 250, second.LatenessMS)
		require.True(t, j.RunAt.Equal(second.ScheduledFor.Time))

		require.Equal(t, 1, first.Attempt)
		require.Equal(t, job.RunFailed, first.Status)
		require.EqualValues(t, 500, first.LatenessMS)
		require.True(t, j.RunAt.Add(500*time.Millisecond).Equal(first.StartedAt.Time))
		require.True(t, j.RunAt.Add(700*time.Millisecond).Equal(first.FinishedAt.Time))
		require.Equal(t, "HTTP 503", first.Output)
		require.Equal(t, "status 503", first.Error)

		var raw struct {
			Runs []map[string]any `json:"runs"`
		}
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &raw))
		require.ElementsMatch(t, []string{"id", "job_id", "scheduled_for", "attempt", "status", "started_at",
			"finished_at", "output", "error", "lateness_ms", "job_name", "job_type"}, keys(raw.Runs[0]))
		require.Nil(t, raw.Runs[0]["finished_at"], "null while running")
		require.Regexp(t, wireTime, raw.Runs[1]["finished_at"])
		require.Regexp(t, wireTime, raw.Runs[1]["scheduled_for"])
	})

	t.Run("TheJobShowsItsRunningAttemptAsLastRun", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := started(t, b)
		requireRunning := func(t *testing.T, got api.Job) {
			t.Helper()
			require.NotNil(t, got.LastRun, "job %s", got.ID)
			require.Equal(t, job.RunRunning, got.LastRun.Status)
			require.Equal(t, 2, got.LastRun.Attempt, "the attempt running, newer than the failed one")
			require.True(t, j.RunAt.Equal(got.LastRun.ScheduledFor.Time))
			require.True(t, j.RunAt.Add(1950*time.Millisecond).Equal(got.LastRun.StartedAt.Time))
			require.True(t, got.LastRun.FinishedAt.IsZero())
			require.Empty(t, got.LastRun.Error)
		}
		requireRunning(t, decode[api.Job](t, b.do(t, http.MethodGet, "/api/v1/jobs/"+j.ID.String(), nil)))
		list := decode[api.JobList](t, b.do(t, http.MethodGet, "/api/v1/jobs", nil))
		require.Len(t, list.Jobs, 1)
		requireRunning(t, list.Jobs[0])
		// An edit that changes nothing answers with the job as it is.
		rec := b.do(t, http.MethodPatch, "/api/v1/jobs/"+j.ID.String(), map[string]any{"name": j.Name})
		require.Equal(t, http.StatusOK, rec.Code, "body: %s", rec.Body.String())
		requireRunning(t, decode[api.Job](t, rec))

		body := spec("keyed", b.now.Add(time.Hour))
		body["key"] = "keyed"
		rec = b.do(t, http.MethodPost, "/api/v1/jobs", body)
		require.Equal(t, http.StatusCreated, rec.Code, "body: %s", rec.Body.String())
		keyed := decode[api.Job](t, rec)
		require.Nil(t, keyed.LastRun)
		b.running(t, b.occurrence(keyed), keyed.RunAt.Time, keyed.RunAt.Time)
		got := decode[api.Job](t, b.do(t, http.MethodGet, "/api/v1/jobs/by-key/keyed", nil))
		require.NotNil(t, got.LastRun)
		require.Equal(t, job.RunRunning, got.LastRun.Status)
		require.Equal(t, 1, got.LastRun.Attempt)
	})

	t.Run("PagesWithCursor", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := started(t, b)
		path := "/api/v1/jobs/" + j.ID.String() + "/runs?limit=1"
		page1 := decode[api.RunList](t, b.do(t, http.MethodGet, path, nil))
		require.Len(t, page1.Runs, 1)
		require.Equal(t, 2, page1.Runs[0].Attempt)
		require.NotEmpty(t, page1.NextCursor)

		page2 := decode[api.RunList](t, b.do(t, http.MethodGet, path+"&cursor="+page1.NextCursor, nil))
		require.Len(t, page2.Runs, 1)
		require.Equal(t, 1, page2.Runs[0].Attempt)
		require.Empty(t, page2.NextCursor)

		e := requireError(t, b.do(t, http.MethodGet, path+"&cursor=zz", nil), http.StatusBadRequest, apierr.CodeInvalid)
		require.Equal(t, "cursor", e.Field)
	})

	t.Run("NoRunsIsEmptyList", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := b.create(t, "idle", b.now.Add(time.Hour))
		rec := b.do(t, http.MethodGet, "/api/v1/jobs/"+j.ID.String()+"/runs", nil)
		require.Equal(t, http.StatusOK, rec.Code)
		require.JSONEq(t, `{"runs": [], "next_cursor": ""}`, rec.Body.String())
	})

	t.Run("UnknownJobIs404", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		requireError(t, b.do(t, http.MethodGet, "/api/v1/jobs/"+job.NewID().String()+"/runs", nil), http.StatusNotFound, apierr.CodeNotFound)
	})
}

func TestProbes(t *testing.T) {
	t.Parallel()

	t.Run("HealthzNeedsNoToken", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		rec := b.request(t, http.MethodGet, "/healthz", nil, "")
		require.Equal(t, http.StatusOK, rec.Code)
		require.JSONEq(t, `{"status":"ok"}`, rec.Body.String())
	})

	t.Run("ReadyWhenBackendsAnswer", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		rec := b.request(t, http.MethodGet, "/readyz", nil, "")
		require.Equal(t, http.StatusOK, rec.Code, "body: %s", rec.Body.String())
		require.JSONEq(t, `{"status":"ready","startup":"ok","postgres":"ok","redis":"ok"}`, rec.Body.String())
	})

	t.Run("NotReadyWhenABackendFails", func(t *testing.T) {
		t.Parallel()
		b := setup(t, func(d *api.Deps) { d.Store = deadStore(t); d.Redis = deadRedis(t) })
		rec := b.request(t, http.MethodGet, "/readyz", nil, "")
		require.Equal(t, http.StatusServiceUnavailable, rec.Code)
		require.JSONEq(t, `{"status":"not ready","startup":"ok","postgres":"unavailable","redis":"unavailable"}`, rec.Body.String())
	})

	t.Run("NotReadyAndAPI503WhileStarting", func(t *testing.T) {
		t.Parallel()
		var gate probe.Gate
		b := setup(t, func(d *api.Deps) { d.Ready = gate.Check })
		rec := b.request(t, http.MethodGet, "/readyz", nil, "")
		require.Equal(t, http.StatusServiceUnavailable, rec.Code)
		require.JSONEq(t, `{"status":"not ready","startup":"unavailable","postgres":"ok","redis":"ok"}`, rec.Body.String())
		requireError(t, b.do(t, http.MethodGet, "/api/v1/jobs", nil), http.StatusServiceUnavailable, apierr.CodeUnavailable)
		require.Equal(t, http.StatusOK, b.request(t, http.MethodGet, "/healthz", nil, "").Code, "alive while starting")

		gate.Open()
		require.Equal(t, http.StatusOK, b.request(t, http.MethodGet, "/readyz", nil, "").Code)
		require.Equal(t, http.StatusOK, b.do(t, http.MethodGet, "/api/v1/jobs", nil).Code)
	})

	t.Run("IndexServesPlaceholder", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		rec := b.request(t, http.MethodGet, "/", nil, "")
		require.Equal(t, http.StatusOK, rec.Code)
		require.Contains(t, rec.Header().Get("Content-Type"), "text/html")
		require.Contains(t, rec.Body.String(), "the API is at /api/v1")
	})
}

func TestRouting(t *testing.T) {
	t.Parallel()

	t.Run("UnknownRouteIs404InErrorShape", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		requireError(t, b.do(t, http.MethodGet, "/api/v1/nothing", nil), http.StatusNotFound, apierr.CodeNotFound)
		requireError(t, b.request(t, http.MethodGet, "/nothing", nil, ""), http.StatusNotFound, apierr.CodeNotFound)
	})

	t.Run("WrongMethodIs405InErrorShape", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		rec := b.do(t, http.MethodPut, "/api/v1/jobs", "{}")
		requireError(t, rec, http.StatusMethodNotAllowed, apierr.CodeMethodNotAllowed)
		require.Contains(t, rec.Header().Get("Allow"), http.MethodPost)
	})
}

func names(jobs []api.Job) []string {
	out := make([]string, len(jobs))
	for i, j := range jobs {
		out[i] = j.Name
	}
	return out
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestJobRetentionFields: retention and history are taken on create, shown
// on every view, changed by PATCH ("" returns to the default) and refused
// with a field-level 400 when malformed, changing nothing.
func TestJobRetentionFields(t *testing.T) {
	t.Parallel()
	b := setup(t)
	body := spec("kept a quarter", b.now.Add(time.Hour))
	body["retention"], body["history"] = "90d", "failures"
	rec := b.do(t, http.MethodPost, "/api/v1/jobs", body)
	require.Equal(t, http.StatusCreated, rec.Code, "body: %s", rec.Body.String())
	j := decode[api.Job](t, rec)
	require.Equal(t, "2160h0m0s", j.Retention)
	require.Equal(t, job.HistoryFailures, j.History)
	got := decode[api.Job](t, b.do(t, http.MethodGet, "/api/v1/jobs/"+j.ID.String(), nil))
	require.Equal(t, j.Retention, got.Retention)
	require.Equal(t, j.History, got.History)

	plain := b.create(t, "default", b.now.Add(time.Hour))
	require.Empty(t, plain.Retention, "absent: the operator's default")
	require.Equal(t, job.HistoryAll, plain.History)

	rec = b.do(t, http.MethodPatch, "/api/v1/jobs/"+j.ID.String(), map[string]any{"retention": "36h", "history": "all"})
	require.Equal(t, http.StatusOK, rec.Code, "body: %s", rec.Body.String())
	patched := decode[api.Job](t, rec)
	require.Equal(t, "36h0m0s", patched.Retention)
	require.Equal(t, job.HistoryAll, patched.History)
	rec = b.do(t, http.MethodPatch, "/api/v1/jobs/"+j.ID.String(), map[string]any{"retention": ""})
	require.Equal(t, http.StatusOK, rec.Code, "body: %s", rec.Body.String())
	require.Empty(t, decode[api.Job](t, rec).Retention)

	for _, bad := range []map[string]any{{"retention": "forever"}, {"retention": "0s"}, {"history": "none"}} {
		e := requireError(t, b.do(t, http.MethodPatch, "/api/v1/jobs/"+j.ID.String(), bad), http.StatusBadRequest, apierr.CodeInvalid)
		for field := range bad {
			require.Equal(t, field, e.Field)
		}
		withBad := spec("bad", b.now.Add(time.Hour))
		maps.Copy(withBad, bad)
		e = requireError(t, b.do(t, http.MethodPost, "/api/v1/jobs", withBad), http.StatusBadRequest, apierr.CodeInvalid)
		for field := range bad {
			require.Equal(t, field, e.Field)
		}
	}
	after := decode[api.Job](t, b.do(t, http.MethodGet, "/api/v1/jobs/"+j.ID.String(), nil))
	require.Empty(t, after.Retention, "a refused patch changed nothing")
	require.Equal(t, job.HistoryAll, after.History)
}
