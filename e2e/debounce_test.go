package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/e2e/cluster"
)

// bodyTarget keeps every call's arrival and body.
type bodyTarget struct {
	*httptest.Server
	mu    sync.Mutex
	calls []bodyCall
}

type bodyCall struct {
	at   time.Time
	path string
	job  string
	body string
}

func newBodyTarget() *bodyTarget {
	b := &bodyTarget{}
	b.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		at := time.Now()
		body, _ := io.ReadAll(r.Body)
		b.mu.Lock()
		b.calls = append(b.calls, bodyCall{at: at, path: r.URL.Path, job: r.Header.Get("X-Tock-Job-Id"), body: string(body)})
		b.mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	return b
}

func (b *bodyTarget) to(path string) []bodyCall {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []bodyCall
	for _, c := range b.calls {
		if c.path == path {
			out = append(out, c)
		}
	}
	return out
}

// debouncedJob is a webhook job to path with body n, debounced on key.
func debouncedJob(url, key string, n int, window string) map[string]any {
	return map[string]any{"name": fmt.Sprintf("%s-%d", key, n), "type": "webhook", "max_retries": 0,
		"payload":  map[string]any{"url": url, "body": map[string]any{"n": n}},
		"debounce": map[string]any{"key": key, "window": window}}
}

// TestDebounce is the flow-control issue's debounce acceptance on the real
// services, two schedulers and two workers: 100 creates in 2 s with one key
// and a 3 s window make one delivery, with the last payload, about 3 s
// after the last create; every create answers the one job (201, then 200);
// a create after the delivery makes a new job; an Idempotency-Key replays
// its answer without folding twice; a bulk create folds its items.
func TestDebounce(t *testing.T) {
	c := start(t, cluster.Options{Schedulers: 2, Workers: 2})
	ctx := t.Context()
	api, _, err := c.API().User(ctx, "debounce", nil)
	require.NoError(t, err)
	target := newBodyTarget()
	defer target.Close()

	t.Run("ABurstOfCreatesMakesOneDeliveryWithTheLastPayload", func(t *testing.T) {
		url := target.URL + "/order-7"
		var ids []string
		var codes []int
		began := time.Now()
		var last time.Time
		for i := range 100 {
			cluster.SleepUntil(ctx, began.Add(time.Duration(i)*20*time.Millisecond))
			var j struct {
				ID        string `json:"id"`
				UpdatedAt string `json:"updated_at"`
			}
			code, err := api.Do(ctx, "POST", "/api/v1/jobs", debouncedJob(url, "order-7", i, "3s"), &j)
			require.NoError(t, err)
			last = time.Now()
			codes, ids = append(codes, code), append(ids, j.ID)
		}
		require.Equal(t, http.StatusCreated, codes[0], "the first create makes the job")
		for i := 1; i < 100; i++ {
			require.Equal(t, http.StatusOK, codes[i], "create %d folds into the pending job", i)
			require.Equal(t, ids[0], ids[i], "create %d answers the one job", i)
		}
		require.True(t, cluster.WaitUntil(10*time.Second, 20*time.Millisecond, func() bool { return len(target.to("/order-7")) > 0 }), "the job runs")
		time.Sleep(1500 * time.Millisecond) // a second delivery would show by now
		calls := target.to("/order-7")
		require.Len(t, calls, 1, "one delivery")
		require.JSONEq(t, `{"n": 99}`, calls[0].body, "with the last payload")
		after := calls[0].at.Sub(last)
		t.Logf("100 creates in %s: one delivery, %s after the last create (window 3s)", last.Sub(began).Round(time.Millisecond), after.Round(time.Millisecond))
		require.GreaterOrEqual(t, after, 2900*time.Millisecond, "not before the window ends")
		require.LessOrEqual(t, after, 4*time.Second, "about the window after the last create")

		// The delivery is done: the next create makes a new job.
		var j struct {
			ID string `json:"id"`
		}
		code, err := api.Do(ctx, "POST", "/api/v1/jobs", debouncedJob(url, "order-7", 100, "100ms"), &j)
		require.NoError(t, err)
		require.Equal(t, http.StatusCreated, code)
		require.NotEqual(t, ids[0], j.ID)
		require.True(t, cluster.WaitUntil(10*time.Second, 20*time.Millisecond, func() bool { return len(target.to("/order-7")) == 2 }), "the new job runs")
	})

	t.Run("ConcurrentCreatesMakeOneJob", func(t *testing.T) {
		url := target.URL + "/race"
		var wg sync.WaitGroup
		ids := make([]string, 20)
		codes := make([]int, 20)
		for i := range 20 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var j struct {
					ID string `json:"id"`
				}
				codes[i], _ = api.Do(ctx, "POST", "/api/v1/jobs", debouncedJob(url, "race", i, "3s"), &j)
				ids[i] = j.ID
			}()
		}
		wg.Wait()
		created := 0
		for i := range 20 {
			require.Contains(t, []int{http.StatusCreated, http.StatusOK}, codes[i])
			require.Equal(t, ids[0], ids[i], "every create answers the one job")
			if codes[i] == http.StatusCreated {
				created++
			}
		}
		require.Equal(t, 1, created, "one create makes it")
		require.True(t, cluster.WaitUntil(10*time.Second, 20*time.Millisecond, func() bool { return len(target.to("/race")) > 0 }))
		time.Sleep(500 * time.Millisecond)
		require.Len(t, target.to("/race"), 1, "one delivery")
	})

	t.Run("AnIdempotencyKeyReplaysWithoutFoldingAgain", func(t *testing.T) {
		url := target.URL + "/idem"
		type view struct {
			ID        string `json:"id"`
			UpdatedAt string `json:"updated_at"`
		}
		var first, second, again view
		code, err := api.Do(ctx, "POST", "/api/v1/jobs", debouncedJob(url, "idem", 1, "2s"), &first)
		require.NoError(t, err)
		require.Equal(t, http.StatusCreated, code)
		h := http.Header{"Idempotency-Key": []string{"debounce-idem-2"}}
		code, err = api.DoWith(ctx, "POST", "/api/v1/jobs", h, debouncedJob(url, "idem", 2, "2s"), &second)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, code)
		code, err = api.DoWith(ctx, "POST", "/api/v1/jobs", h, debouncedJob(url, "idem", 2, "2s"), &again)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, code, "the kept answer")
		require.Equal(t, second, again, "the same job and generation: not folded twice")
		require.Equal(t, first.ID, second.ID)
		require.True(t, cluster.WaitUntil(10*time.Second, 20*time.Millisecond, func() bool { return len(target.to("/idem")) > 0 }))
		time.Sleep(500 * time.Millisecond)
		calls := target.to("/idem")
		require.Len(t, calls, 1)
		require.JSONEq(t, `{"n": 2}`, calls[0].body)
	})

	t.Run("ABulkCreateFoldsItsItems", func(t *testing.T) {
		url := target.URL + "/bulk"
		var out struct {
			Created   int      `json:"created"`
			Debounced int      `json:"debounced"`
			IDs       []string `json:"ids"`
		}
		jobs := []any{debouncedJob(url, "bulk-a", 1, "1s"), debouncedJob(url, "bulk-a", 2, "1s"),
			debouncedJob(url, "bulk-b", 3, "1s"), map[string]any{"name": "plain", "type": "webhook", "delay": "1s", "payload": hookTo(url + "-plain")}}
		code, err := api.Do(ctx, "POST", "/api/v1/jobs:batch", map[string]any{"jobs": jobs}, &out)
		require.NoError(t, err)
		require.Equal(t, http.StatusCreated, code)
		require.Equal(t, 3, out.Created)
		require.Equal(t, 1, out.Debounced)
		require.Equal(t, out.IDs[0], out.IDs[1], "the second item folds into the first")
		require.NotEqual(t, out.IDs[0], out.IDs[2])
		require.True(t, cluster.WaitUntil(10*time.Second, 20*time.Millisecond, func() bool { return len(target.to("/bulk")) >= 2 }))
		time.Sleep(500 * time.Millisecond)
		var bodies []string
		for _, c := range target.to("/bulk") {
			var b bytes.Buffer
			require.NoError(t, json.Compact(&b, []byte(c.body)))
			bodies = append(bodies, b.String())
		}
		require.ElementsMatch(t, []string{`{"n":2}`, `{"n":3}`}, bodies)
	})

	t.Run("BadDebouncesAreFieldLevel400s", func(t *testing.T) {
		for _, tc := range []struct {
			name  string
			job   map[string]any
			field string
		}{
			{"Recurring", map[string]any{"name": "hourly", "type": "webhook", "schedule": map[string]any{"cron": "0 * * * *"}, "payload": hookTo(target.URL),
				"debounce": map[string]any{"key": "k", "window": "1s"}}, "debounce"},
			{"WindowTooShort", debouncedJob(target.URL, "k", 1, "1ns"), "debounce.window"},
			{"WindowNotADuration", debouncedJob(target.URL, "k", 1, "soon"), "debounce.window"},
			{"NoWindow", map[string]any{"name": "n", "type": "webhook", "payload": hookTo(target.URL), "debounce": map[string]any{"key": "k"}}, "debounce.window"},
			{"KeyWithASpace", debouncedJob(target.URL, "a b", 1, "1s"), "debounce.key"},
			{"NotAnObject", map[string]any{"name": "n", "type": "webhook", "payload": hookTo(target.URL), "debounce": "k"}, "debounce"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				var e struct {
					Error struct {
						Field string `json:"field"`
					} `json:"error"`
				}
				code, err := api.Do(ctx, "POST", "/api/v1/jobs", tc.job, &e)
				require.NoError(t, err)
				require.Equal(t, http.StatusBadRequest, code)
				require.Equal(t, tc.field, e.Error.Field)
			})
		}
		// A pending job of another type holds the key: 409, nothing changes.
		_, err := api.CreateJob(ctx, debouncedJob(target.URL+"/typed", "typed", 1, "1m"))
		require.NoError(t, err)
		ping := map[string]any{"name": "p", "type": "ping", "payload": hookTo(target.URL), "debounce": map[string]any{"key": "typed", "window": "1s"}}
		var e json.RawMessage
		code, err := api.Do(ctx, "POST", "/api/v1/jobs", ping, &e)
		require.NoError(t, err)
		require.Equal(t, http.StatusConflict, code, "%s", e)

		// Nor into a job with another key of the owner's (or none): it would
		// not get the create's key.
		keyed := debouncedJob(target.URL+"/typed", "typed", 2, "1s")
		keyed["key"] = "mine"
		code, err = api.Do(ctx, "POST", "/api/v1/jobs", keyed, &e)
		require.NoError(t, err)
		require.Equal(t, http.StatusConflict, code, "%s", e)

		// In a bulk create, that item fails alone: the others stand.
		var out struct {
			Created int      `json:"created"`
			IDs     []string `json:"ids"`
			Failed  []struct {
				Index int    `json:"index"`
				Field string `json:"field"`
			} `json:"failed"`
		}
		code, err = api.Do(ctx, "POST", "/api/v1/jobs:batch", map[string]any{"jobs": []any{
			map[string]any{"name": "plain", "type": "webhook", "delay": "1h", "payload": hookTo(target.URL)}, ping,
			debouncedJob(target.URL+"/other", "other", 1, "1h")}}, &out)
		require.NoError(t, err)
		require.Equal(t, http.StatusCreated, code)
		require.Equal(t, 2, out.Created)
		require.Len(t, out.Failed, 1)
		require.Equal(t, 1, out.Failed[0].Index)
		require.Equal(t, "debounce.key", out.Failed[0].Field)
		require.Equal(t, "00000000-0000-0000-0000-000000000000", out.IDs[1])
	})

	t.Run("APatchMovesTheKey", func(t *testing.T) {
		j, err := api.CreateJob(ctx, debouncedJob(target.URL+"/moved", "before", 1, "1h"))
		require.NoError(t, err)
		code, err := api.Do(ctx, "PATCH", "/api/v1/jobs/"+j.ID, map[string]any{"debounce": map[string]any{"key": "after", "window": "1h"}}, nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, code)
		// The old key is free: a create with it makes a new job; one with
		// the new key folds into the patched job.
		var fresh, folded struct {
			ID string `json:"id"`
		}
		code, err = api.Do(ctx, "POST", "/api/v1/jobs", debouncedJob(target.URL+"/moved", "before", 2, "1h"), &fresh)
		require.NoError(t, err)
		require.Equal(t, http.StatusCreated, code)
		require.NotEqual(t, j.ID, fresh.ID)
		code, err = api.Do(ctx, "POST", "/api/v1/jobs", debouncedJob(target.URL+"/moved", "after", 3, "1h"), &folded)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, code)
		require.Equal(t, j.ID, folded.ID)
		// Back to the first key, which the new job holds now: 409.
		var e json.RawMessage
		code, err = api.Do(ctx, "PATCH", "/api/v1/jobs/"+j.ID, map[string]any{"debounce": map[string]any{"key": "before", "window": "1h"}}, &e)
		require.NoError(t, err)
		require.Equal(t, http.StatusConflict, code, "%s", e)
		// Out of its key and back into it: its own key is free to take.
		code, err = api.Do(ctx, "PATCH", "/api/v1/jobs/"+j.ID, map[string]any{"debounce": map[string]any{}}, nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, code)
		code, err = api.Do(ctx, "PATCH", "/api/v1/jobs/"+j.ID, map[string]any{"debounce": map[string]any{"key": "after", "window": "1h"}}, &e)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, code, "%s", e)
	})
}
