package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/e2e/cluster"
)

// TestIdempotentCreate: a client that repeats a POST /api/v1/jobs with the
// same Idempotency-Key (after a timeout, say) gets the first answer back,
// byte for byte, and the job exists and runs once; repeats sent at the same
// moment as the first get either that answer or 409, never a second job.
func TestIdempotentCreate(t *testing.T) {
	c := start(t, cluster.Options{Schedulers: 1, Workers: 1})
	target := cluster.NewTarget()
	defer target.Close()
	body, err := json.Marshal(map[string]any{"name": "charge 1234", "type": "webhook",
		"run_at": time.Now().Add(2 * time.Second), "payload": map[string]any{"url": target.URL + "/ok"}})
	require.NoError(t, err)
	post := func(key string) (int, []byte, string) {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, c.APIURL+"/api/v1/jobs", bytes.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+c.Token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", key)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, b, resp.Header.Get("Idempotent-Replayed")
	}

	code, first, replayed := post("order-1234-charge")
	require.Equal(t, http.StatusCreated, code, "body: %s", first)
	require.Empty(t, replayed)
	for range 3 {
		code, again, replayed := post("order-1234-charge")
		require.Equal(t, http.StatusCreated, code)
		require.Equal(t, string(first), string(again))
		require.Equal(t, "true", replayed)
	}

	// Eight at once with a fresh key: one runs, the rest replay it or are
	// told it is in flight.
	var wg sync.WaitGroup
	codes := make([]int, 8)
	for i := range codes {
		wg.Go(func() { codes[i], _, _ = post("order-5678-charge") })
	}
	wg.Wait()
	for _, code := range codes {
		require.Contains(t, []int{http.StatusCreated, http.StatusConflict}, code)
	}

	var list struct {
		Jobs []cluster.Job `json:"jobs"`
	}
	code, err = c.API().Do(t.Context(), http.MethodGet, "/api/v1/jobs?limit=100", nil, &list)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code)
	require.Len(t, list.Jobs, 2, "one job per key")

	require.True(t, target.WaitFor(15*time.Second, func(d []cluster.Delivery) bool { return len(d) >= 2 }), "both jobs ran")
	time.Sleep(time.Second)
	require.Equal(t, 2, target.Count(), "each ran once")
}
