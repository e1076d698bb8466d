package api_test

import (
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/store"
	"github.com/tockhq/tock/pkg/testenv"
	"github.com/tockhq/tock/services/dashboard/api"
	"github.com/tockhq/tock/services/dashboard/apierr"
)

// withKey sends an authenticated request carrying Idempotency-Key values
// (none for no header), as the admin or as p.
func (b *bundle) withKey(t *testing.T, p *person, method, path string, body any, keys ...string) *httptest.ResponseRecorder {
	t.Helper()
	auth := "Bearer " + token
	if p != nil {
		auth = p.auth()
	}
	b2 := *b
	h := b.h
	b2.h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, k := range keys {
			r.Header.Add("Idempotency-Key", k)
		}
		h.ServeHTTP(w, r)
	})
	return b2.request(t, method, path, body, auth)
}

func TestIdempotencyKey(t *testing.T) {
	t.Parallel()

	t.Run("RepeatedCreateReplaysTheFirstAnswer", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		body := spec("once", b.now.Add(time.Hour))
		first := b.withKey(t, nil, http.MethodPost, "/api/v1/jobs", body, "create-1")
		require.Equal(t, http.StatusCreated, first.Code, "body: %s", first.Body.String())
		require.Empty(t, first.Header().Get("Idempotent-Replayed"))
		for range 3 {
			again := b.withKey(t, nil, http.MethodPost, "/api/v1/jobs", body, "create-1")
			require.Equal(t, http.StatusCreated, again.Code)
			require.Equal(t, first.Body.String(), again.Body.String(), "the same body, byte for byte")
			require.Equal(t, "true", again.Header().Get("Idempotent-Replayed"))
			require.Equal(t, "application/json", again.Header().Get("Content-Type"))
		}
		list := decode[api.JobList](t, b.do(t, http.MethodGet, "/api/v1/jobs", nil))
		require.Len(t, list.Jobs, 1, "one job, however often the create was sent")

		// Without the header, each POST creates a job.
		require.Equal(t, http.StatusCreated, b.do(t, http.MethodPost, "/api/v1/jobs", body).Code)
		require.Len(t, decode[api.JobList](t, b.do(t, http.MethodGet, "/api/v1/jobs", nil)).Jobs, 2)
	})

	t.Run("SameKeyOtherRequestIs422", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		require.Equal(t, http.StatusCreated, b.withKey(t, nil, http.MethodPost, "/api/v1/jobs", spec("a", b.now.Add(time.Hour)), "k").Code)
		e := requireError(t, b.withKey(t, nil, http.MethodPost, "/api/v1/jobs", spec("b", b.now.Add(time.Hour)), "k"),
			http.StatusUnprocessableEntity, apierr.CodeIdempotencyKeyReused)
		require.Equal(t, "Idempotency-Key", e.Field)
		require.Len(t, decode[api.JobList](t, b.do(t, http.MethodGet, "/api/v1/jobs", nil)).Jobs, 1, "nothing changed")
	})

	t.Run("KeysAreScopedToTheCaller", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ann, bob := b.user(t, "ann", "user", nil), b.user(t, "bob", "user", nil)
		body := spec("mine", b.now.Add(time.Hour))
		a := b.withKey(t, &ann, http.MethodPost, "/api/v1/jobs", body, "shared")
		require.Equal(t, http.StatusCreated, a.Code, "body: %s", a.Body.String())
		o := b.withKey(t, &bob, http.MethodPost, "/api/v1/jobs", body, "shared")
		require.Equal(t, http.StatusCreated, o.Code)
		require.Empty(t, o.Header().Get("Idempotent-Replayed"), "another caller's key is another key")
		require.NotEqual(t, decode[api.Job](t, a).ID, decode[api.Job](t, o).ID)
	})

	t.Run("InFlightIs409", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		body := spec("slow", b.now.Add(time.Hour))
		raw, err := json.Marshal(body)
		require.NoError(t, err)
		// The request hash is the method, path and query, each followed by
		// a zero byte, then the body.
		h := sha256.Sum256([]byte("POST\x00/api/v1/jobs\x00\x00" + string(raw)))
		state, _, err := b.store.ClaimIdempotencyKey(t.Context(), store.BootstrapAdmin, "busy", h[:], b.now)
		require.NoError(t, err)
		require.Equal(t, store.KeyNew, state)
		rec := b.withKey(t, nil, http.MethodPost, "/api/v1/jobs", body, "busy")
		e := requireError(t, rec, http.StatusConflict, apierr.CodeConflict)
		require.Equal(t, "Idempotency-Key", e.Field)
		require.Equal(t, "1", rec.Header().Get("Retry-After"), "a client repeats it shortly")
		require.Empty(t, decode[api.JobList](t, b.do(t, http.MethodGet, "/api/v1/jobs", nil)).Jobs)
	})

	t.Run("ErrorsAndDeletesReplayToo", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		bad := map[string]any{"name": "x", "type": "ping"}
		first := b.withKey(t, nil, http.MethodPost, "/api/v1/jobs", bad, "bad")
		require.Equal(t, http.StatusBadRequest, first.Code)
		again := b.withKey(t, nil, http.MethodPost, "/api/v1/jobs", bad, "bad")
		require.Equal(t, http.StatusBadRequest, again.Code)
		require.Equal(t, first.Body.String(), again.Body.String())
		require.Equal(t, "true", again.Header().Get("Idempotent-Replayed"))

		j := b.create(t, "to cancel", b.now.Add(time.Hour))
		require.Equal(t, http.StatusNoContent, b.withKey(t, nil, http.MethodDelete, "/api/v1/jobs/"+j.ID.String(), nil, "del").Code)
		repeat := b.withKey(t, nil, http.MethodDelete, "/api/v1/jobs/"+j.ID.String(), nil, "del")
		require.Equal(t, http.StatusNoContent, repeat.Code, "a repeated cancel is answered as the first, not 409")
		require.Equal(t, "true", repeat.Header().Get("Idempotent-Replayed"))
		require.Equal(t, http.StatusConflict, b.do(t, http.MethodDelete, "/api/v1/jobs/"+j.ID.String(), nil).Code, "without the key it is a new request")

		batch := map[string]any{"jobs": []any{spec("b1", b.now.Add(time.Hour)), spec("b2", b.now.Add(time.Hour))}}
		one := b.withKey(t, nil, http.MethodPost, "/api/v1/jobs:batch", batch, "batch")
		require.Equal(t, http.StatusCreated, one.Code, "body: %s", one.Body.String())
		two := b.withKey(t, nil, http.MethodPost, "/api/v1/jobs:batch", batch, "batch")
		require.Equal(t, one.Body.String(), two.Body.String())
	})

	t.Run("RateRefusalIsNotKept", func(t *testing.T) {
		t.Parallel()
		// One creation a second, none saved up: the second create in a row
		// is refused until the bucket refills.
		q := api.DefaultQuotas
		q.JobsPerMinute, q.JobBurst = 60, 1
		b := setup(t, func(d *api.Deps) { d.Quotas = &q })
		ann := b.user(t, "ann", "user", nil)
		require.Equal(t, http.StatusCreated, b.withKey(t, &ann, http.MethodPost, "/api/v1/jobs", spec("first", b.now.Add(time.Hour)), "first").Code)
		body := spec("second", b.now.Add(time.Hour))
		refused := b.withKey(t, &ann, http.MethodPost, "/api/v1/jobs", body, "second")
		requireError(t, refused, http.StatusTooManyRequests, apierr.CodeRateLimited)
		require.NotEmpty(t, refused.Header().Get("Retry-After"))

		// The SDK and the CLI repeat a 429 with the same key: each repeat
		// runs again, until the limit lets it through.
		var rec *httptest.ResponseRecorder
		testenv.WaitUntil(t, 10*time.Second, func() bool {
			rec = b.withKey(t, &ann, http.MethodPost, "/api/v1/jobs", body, "second")
			require.Empty(t, rec.Header().Get("Idempotent-Replayed"), "a 429 is never replayed: %s", rec.Body.String())
			return rec.Code != http.StatusTooManyRequests
		}, "the repeat was still refused")
		require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
		again := b.withKey(t, &ann, http.MethodPost, "/api/v1/jobs", body, "second")
		require.Equal(t, http.StatusCreated, again.Code)
		require.Equal(t, "true", again.Header().Get("Idempotent-Replayed"), "the success is kept")
		require.Equal(t, rec.Body.String(), again.Body.String())
		require.Len(t, decode[api.JobList](t, b.as(t, ann, http.MethodGet, "/api/v1/jobs", nil)).Jobs, 2)
	})

	t.Run("MalformedKeyIs400", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		body := spec("x", b.now.Add(time.Hour))
		for name, keys := range map[string][]string{
			"Empty":    {""},
			"TooLong":  {strings.Repeat("k", 256)},
			"Control":  {"a\x01b"},
			"NonASCII": {"clé"},
			"Twice":    {"a", "b"},
		} {
			e := requireError(t, b.withKey(t, nil, http.MethodPost, "/api/v1/jobs", body, keys...), http.StatusBadRequest, apierr.CodeInvalid)
			require.Equal(t, "Idempotency-Key", e.Field, name)
		}
		require.Equal(t, http.StatusCreated, b.withKey(t, nil, http.MethodPost, "/api/v1/jobs", body, strings.Repeat("k", 255)).Code)
		require.Len(t, decode[api.JobList](t, b.do(t, http.MethodGet, "/api/v1/jobs", nil)).Jobs, 1)
	})
}

// TestIdempotencyKeyWindow: a key is replayed for 24 hours, then taken for
// a new request; a first request abandoned in flight frees its key after
// two minutes; pruning removes keys past their day.
func TestIdempotencyKeyWindow(t *testing.T) {
	t.Parallel()
	b := setup(t)
	h1, h2 := []byte("request one"), []byte("request two")
	claim := func(key string, h []byte, at time.Time) store.KeyState {
		t.Helper()
		s, _, err := b.store.ClaimIdempotencyKey(t.Context(), store.BootstrapAdmin, key, h, at)
		require.NoError(t, err)
		return s
	}
	require.Equal(t, store.KeyNew, claim("day", h1, b.now))
	require.NoError(t, b.store.SaveIdempotentResponse(t.Context(), store.BootstrapAdmin, "day", store.StoredResponse{Status: 201, Body: []byte("{}")}))
	require.Equal(t, store.KeyReplay, claim("day", h1, b.now.Add(23*time.Hour)))
	require.Equal(t, store.KeyReused, claim("day", h2, b.now.Add(23*time.Hour)))
	require.Equal(t, store.KeyNew, claim("day", h2, b.now.Add(25*time.Hour)), "past its day the key is free")

	require.Equal(t, store.KeyNew, claim("abandoned", h1, b.now))
	require.Equal(t, store.KeyInFlight, claim("abandoned", h1, b.now.Add(time.Minute)))
	require.Equal(t, store.KeyNew, claim("abandoned", h1, b.now.Add(3*time.Minute)), "its dashboard died: taken over")

	n, err := b.store.RemoveIdempotencyKeysBefore(t.Context(), b.now.Add(2*time.Minute), 100)
	require.NoError(t, err)
	require.Equal(t, 0, n, "both keys were claimed again after that")
	n, err = b.store.RemoveIdempotencyKeysBefore(t.Context(), b.now.Add(26*time.Hour), 100)
	require.NoError(t, err)
	require.Equal(t, 2, n)
}

// TestIdempotencyKeyOfACreateWhoseCommitIsUnanswered: Postgres stops after
// a create's COMMIT was sent and before its answer came. The client gets a
// 503 and repeats under its key: once the dashboard has found out whether
// the job was stored, the repeat gets that job (committed) or makes it
// (rolled back); either way there is one job, never two.
func TestIdempotencyKeyOfACreateWhoseCommitIsUnanswered(t *testing.T) {
	t.Parallel()

	for _, tc := range []struct {
		name      string
		committed bool
	}{{"CommittedIsReplayed", true}, {"RolledBackRunsAgain", false}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, func(d *api.Deps) { d.Store = testenv.CutCommit(t, d.Store, tc.committed) })
			body := spec("unsure", b.now.Add(time.Hour))
			first := b.withKey(t, nil, http.MethodPost, "/api/v1/jobs", body, "unsure-1")
			require.Equal(t, http.StatusServiceUnavailable, first.Code, "body: %s", first.Body.String())

			var again *httptest.ResponseRecorder
			require.Eventually(t, func() bool {
				again = b.withKey(t, nil, http.MethodPost, "/api/v1/jobs", body, "unsure-1")
				return again.Code != http.StatusConflict
			}, 20*time.Second, 100*time.Millisecond, "the key stays held while the create is looked for, then is settled")
			require.Equal(t, http.StatusCreated, again.Code, "body: %s", again.Body.String())
			replayed := "true"
			if !tc.committed {
				replayed = ""
			}
			require.Equal(t, replayed, again.Header().Get("Idempotent-Replayed"))
			got := decode[api.Job](t, again)

			jobs, err := b.store.ListJobs(t.Context(), store.JobFilter{Owner: store.AnyOwner, Limit: 10})
			require.NoError(t, err)
			require.Len(t, jobs, 1, "one job under one key")
			require.Equal(t, jobs[0].ID, got.ID)
			require.Equal(t, "unsure", got.Name)
		})
	}
}
