package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/jobtype"
)

// fakeAPI answers bulk creates with the given answers in turn, recording
// every request's body.
type fakeAPI struct {
	mu      sync.Mutex
	answers []func(w http.ResponseWriter, n int)
	bodies  []batchBody
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != batchPath || r.Header.Get("Authorization") != "Bearer secret-token" {
		http.Error(w, "wrong request", http.StatusTeapot)
		return
	}
	var body batchBody
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, err.Error(), http.StatusTeapot)
		return
	}
	f.mu.Lock()
	f.bodies = append(f.bodies, body)
	answer := f.answers[0]
	if len(f.answers) > 1 {
		f.answers = f.answers[1:]
	}
	f.mu.Unlock()
	answer(w, len(body.Jobs))
}

func created(w http.ResponseWriter, n int) {
	w.WriteHeader(http.StatusCreated)
	ids := make([]string, n)
	for i := range ids {
		ids[i] = job.NewID().String()
	}
	_ = json.NewEncoder(w).Encode(batchCreated{Created: n, IDs: ids})
}

func setup(t *testing.T, answers ...func(w http.ResponseWriter, n int)) (*fakeAPI, *apiSink, *[]time.Duration) {
	t.Helper()
	f := &fakeAPI{answers: answers}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	a := newAPISink(srv.URL+"/", "secret-token")
	var slept []time.Duration
	a.sleep = func(_ context.Context, d time.Duration) error {
		slept = append(slept, d)
		return nil
	}
	return f, a, &slept
}

func items(t *testing.T, n int) []Item {
	t.Helper()
	return generated(t, Mix{Name: "x", Types: []job.Type{jobtype.TypePing}, URL: defaultURL}, []int{n}, 1)
}

func TestAPISink(t *testing.T) {
	t.Parallel()
	t.Run("SendsTheJobsAsSpecs", func(t *testing.T) {
		t.Parallel()
		f, a, _ := setup(t, created)
		require.NoError(t, a.create(t.Context(), items(t, 3)))
		require.Len(t, f.bodies, 1)
		require.Len(t, f.bodies[0].Jobs, 3)
		require.Equal(t, "x-1", f.bodies[0].Jobs[0].Name)
		require.Equal(t, jobtype.TypePing, f.bodies[0].Jobs[0].Type)
	})
	t.Run("WaitsOutA429WithRetryAfter", func(t *testing.T) {
		t.Parallel()
		limited := func(w http.ResponseWriter, _ int) {
			w.Header().Set("Retry-After", "2")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = w.Write([]byte(`{"error":{"code":"rate_limited","message":"too many job creations"}}`))
		}
		f, a, slept := setup(t, limited, limited, created)
		require.NoError(t, a.create(t.Context(), items(t, 2)))
		require.Len(t, f.bodies, 3)
		require.Equal(t, []time.Duration{2 * time.Second, 2 * time.Second}, *slept)
	})
	t.Run("StopsOnA429WithoutRetryAfter", func(t *testing.T) {
		t.Parallel()
		_, a, slept := setup(t, func(w http.ResponseWriter, _ int) {
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = w.Write([]byte(`{"error":{"code":"rate_limited","message":"2 jobs at once is more than your burst of 1; send smaller batches"}}`))
		})
		err := a.create(t.Context(), items(t, 2))
		require.ErrorContains(t, err, "429 2 jobs at once is more than your burst of 1")
		require.Empty(t, *slept)
	})
	t.Run("QuotesTheJobErrorsOfA400", func(t *testing.T) {
		t.Parallel()
		_, a, _ := setup(t, func(w http.ResponseWriter, _ int) {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error":{"code":"invalid","field":"jobs","message":"5 of 5 jobs are invalid; nothing was created"},
				"errors":[{"index":0,"field":"payload.url","message":"names a loopback address"},{"index":1,"field":"run_at","message":"is in the past"},
				{"index":2,"message":"a"},{"index":3,"message":"b"},{"index":4,"message":"c"}]}`))
		})
		err := a.create(t.Context(), items(t, 5))
		require.EqualError(t, err, "bulk create: 400 5 of 5 jobs are invalid; nothing was created; batch item 0: payload.url names a loopback address; batch item 1: run_at is in the past; batch item 2:  a; and 2 more")
	})
	t.Run("ReportsAnAnswerThatIsNotJSON", func(t *testing.T) {
		t.Parallel()
		_, a, _ := setup(t, func(w http.ResponseWriter, _ int) {
			http.Error(w, "upstream down", http.StatusBadGateway)
		})
		require.EqualError(t, a.create(t.Context(), items(t, 1)), "bulk create: 502 Bad Gateway: upstream down")
	})
}
