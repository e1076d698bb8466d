package e2e

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/e2e/cluster"
)

// TestDeadLetters: on the real services (two schedulers, two workers),
// one-off jobs whose only attempt a target refuses become dead letters,
// listed for their owner only; a dry run of a bulk replay changes nothing,
// the replay runs each once more, under its idempotency key, and empties
// the list; a purge removes another user's without touching its runs.
func TestDeadLetters(t *testing.T) {
	c := start(t, cluster.Options{Schedulers: 2, Workers: 2})
	admin := c.API()
	ctx := t.Context()
	ann, _, err := admin.User(ctx, "ann", nil)
	require.NoError(t, err)
	bob, _, err := admin.User(ctx, "bob", nil)
	require.NoError(t, err)

	// A target that refuses every call until told to take them, and keeps
	// each call's job and attempt.
	var accept atomic.Bool
	var mu sync.Mutex
	calls := map[string][]string{} // job id -> "attempt|idempotency key" per call
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		id := r.Header.Get("X-Tock-Job-Id")
		calls[id] = append(calls[id], r.Header.Get("X-Tock-Attempt")+"|"+r.Header.Get("Idempotency-Key"))
		mu.Unlock()
		if !accept.Load() {
			http.Error(w, "not today", http.StatusInternalServerError)
		}
	}))
	defer target.Close()

	at := time.Now().Add(time.Second)
	create := func(api *cluster.API, name string) string {
		j, err := api.CreateJob(ctx, map[string]any{"name": name, "type": "webhook", "run_at": at, "max_retries": 0,
			"payload": map[string]any{"url": target.URL + "/hook"}})
		require.NoError(t, err)
		return j.ID
	}
	var anns []string
	for i := range 10 {
		anns = append(anns, create(ann, "ann "+strconv.Itoa(i)))
	}
	bobs := create(bob, "bob")
	waitStatus := func(ids []string, status string) {
		t.Helper()
		require.True(t, cluster.WaitUntil(30*time.Second, 100*time.Millisecond, func() bool {
			for _, id := range ids {
				j, err := admin.GetJob(ctx, id)
				if err != nil || j.Status != status {
					return false
				}
			}
			return true
		}), "not every job reached %s", status)
	}
	waitStatus(append([]string{bobs}, anns...), "permanently_failed")

	type letter struct {
		ID      string `json:"id"`
		JobID   string `json:"job_id"`
		Attempt int    `json:"attempt"`
		Error   string `json:"error"`
	}
	list := func(api *cluster.API) map[string]letter {
		t.Helper()
		var page struct {
			DeadLetters []letter `json:"dead_letters"`
			NextCursor  string   `json:"next_cursor"`
		}
		code, err := api.Do(ctx, http.MethodGet, "/api/v1/dead-letters?limit=100", nil, &page)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, code)
		require.Empty(t, page.NextCursor)
		out := map[string]letter{}
		for _, l := range page.DeadLetters {
			out[l.JobID] = l
		}
		return out
	}
	annsDead := list(ann)
	require.Len(t, annsDead, 10, "ann's ten, not bob's")
	for _, id := range anns {
		require.Contains(t, annsDead, id)
		require.Equal(t, 1, annsDead[id].Attempt)
		require.Contains(t, annsDead[id].Error, "status 500")
	}
	require.Len(t, list(bob), 1)

	type result struct {
		Matched int      `json:"matched"`
		Changed int      `json:"changed"`
		IDs     []string `json:"ids"`
		Skipped []any    `json:"skipped"`
	}
	// The dry run through the CLI, as an operator would.
	listed := cli(t, c, ann.Token, "dead-letters", "list", "-o", "json")
	require.Zero(t, listed.code, listed.err)
	var cliList struct {
		DeadLetters []letter `json:"dead_letters"`
	}
	require.NoError(t, json.Unmarshal([]byte(listed.out), &cliList))
	require.Len(t, cliList.DeadLetters, 10)
	dryRun := cli(t, c, ann.Token, "dead-letters", "replay", "--all-matching", "--type", "webhook", "--dry-run", "-o", "json")
	require.Zero(t, dryRun.code, dryRun.err)
	var dry result
	require.NoError(t, json.Unmarshal([]byte(dryRun.out), &dry))
	require.Equal(t, 10, dry.Matched)
	require.Zero(t, dry.Changed)
	require.Len(t, dry.IDs, 10)
	require.Len(t, list(ann), 10, "a dry run replays nothing")

	accept.Store(true)
	var done result
	code, err := ann.Do(ctx, http.MethodPost, "/api/v1/dead-letters:replay", map[string]any{"filter": map[string]any{}}, &done)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, 10, done.Matched)
	require.Equal(t, 10, done.Changed, "skipped: %v", done.Skipped)
	waitStatus(anns, "completed")
	require.Empty(t, list(ann), "replayed dead letters leave the list")

	// Each ran once more: two calls in all, the second attempt 2, under
	// the occurrence's own idempotency key.
	time.Sleep(time.Second) // room for a duplicate to show up, were there one
	mu.Lock()
	for _, id := range anns {
		got := calls[id]
		require.Len(t, got, 2, "job %s: %v", id, got)
		key := got[0][2:]
		require.Equal(t, []string{"1|" + key, "2|" + key}, got)
	}
	mu.Unlock()

	purged := cli(t, c, bob.Token, "dead-letters", "purge", list(bob)[bobs].ID)
	require.Zero(t, purged.code, purged.err)
	require.Contains(t, purged.out, "purged: 1 of 1 dead letters")
	require.Empty(t, list(bob))
	runs, err := bob.Runs(ctx, bobs, 10)
	require.NoError(t, err)
	require.Len(t, runs, 1, "a purge leaves the job's runs")
	j, err := admin.GetJob(ctx, bobs)
	require.NoError(t, err)
	require.Equal(t, "permanently_failed", j.Status)
}
