package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	tock "github.com/tockhq/tock/sdk/go"
)

const (
	backfillJob = "0193a000-0000-7000-8000-000000000001"
	backfillID  = "0193a000-0000-7000-8000-0000000000b1"
)

// backfillBody is a backfill's JSON, changed by edits.
func backfillBody(t *testing.T, edits map[string]any) string {
	t.Helper()
	b := map[string]any{"id": backfillID, "job_id": backfillJob, "from": "2026-11-01T00:00:00.000Z",
		"to": "2026-11-08T00:00:00.000Z", "overlap": "skip", "status": "running", "total": 168, "existing": 20,
		"queued": 0, "running": 0, "completed": 0, "failed": 0, "skipped": 0, "remaining": 148,
		"created_at": "2026-12-01T08:00:00.000Z", "finished_at": nil}
	for k, v := range edits {
		b[k] = v
	}
	out, err := json.Marshal(b)
	require.NoError(t, err)
	return string(out)
}

// fakeBackfills is a dashboard that answers each "METHOD path" it knows
// with a status and body, and keeps the requests' bodies.
type fakeBackfills struct {
	mu      sync.Mutex
	answers map[string]answer
	sent    []string // "METHOD path body"
}

type answer struct {
	status int
	body   string
}

func (f *fakeBackfills) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	body, _ := io.ReadAll(r.Body)
	route := r.Method + " " + r.URL.Path
	f.sent = append(f.sent, strings.TrimSpace(route+" "+string(body)))
	a, ok := f.answers[route]
	if !ok {
		a = answer{http.StatusNotFound, `{"error":{"code":"not_found","message":"backfill not found"}}`}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(a.status)
	w.Write([]byte(a.body))
}

func TestBackfillCommands(t *testing.T) {
	t.Parallel()
	setup := func(t *testing.T, answers map[string]answer) (map[string]string, *fakeBackfills) {
		f := &fakeBackfills{answers: answers}
		srv := httptest.NewServer(f)
		t.Cleanup(srv.Close)
		return map[string]string{"TOCK_URL": srv.URL, "TOCK_TOKEN": "secret-token-1234", "HOME": t.TempDir()}, f
	}
	post := "POST /api/v1/jobs/" + backfillJob + "/backfill"

	t.Run("StartSendsTheRange", func(t *testing.T) {
		t.Parallel()
		env, f := setup(t, map[string]answer{post: {http.StatusAccepted, backfillBody(t, nil)}})
		out, errOut, code := invoke(t, env, "", "jobs", "backfill", backfillJob,
			"--from", "2026-11-01T00:00:00Z", "--to", "2026-11-08T01:00:00+01:00", "--overlap", "skip", "-o", "json")
		require.Equal(t, 0, code, errOut)
		require.Len(t, f.sent, 1)
		route, body, _ := strings.Cut(strings.TrimPrefix(f.sent[0], post), " ")
		require.Empty(t, route)
		require.JSONEq(t, `{"from":"2026-11-01T00:00:00Z","to":"2026-11-08T01:00:00+01:00","overlap":"skip"}`, body)
		var b tock.Backfill
		require.NoError(t, json.Unmarshal([]byte(out), &b), out)
		require.Equal(t, backfillID, b.ID)
		require.Equal(t, tock.BackfillRunning, b.Status)
	})

	t.Run("StartPrintsTheBackfill", func(t *testing.T) {
		t.Parallel()
		env, _ := setup(t, map[string]answer{post: {http.StatusAccepted, backfillBody(t, nil)}})
		out, errOut, code := invoke(t, env, "", "jobs", "backfill", backfillJob, "--from", "7d", "--to", "1h")
		require.Equal(t, 0, code, errOut)
		require.Contains(t, out, "id:        "+backfillID)
		require.Contains(t, out, "range:     2026-11-01 00:00:00Z to 2026-11-08 00:00:00Z")
		require.Contains(t, out, "progress:  running: 0 queued, 0 completed, 0 failed, 0 skipped of 168 (20 ran before, 148 remaining)")
	})

	t.Run("UsageMistakes", func(t *testing.T) {
		t.Parallel()
		env, f := setup(t, nil)
		for _, args := range [][]string{
			{"jobs", "backfill", backfillJob, "--from", "2026-11-01T00:00:00Z"},
			{"jobs", "backfill", backfillJob, "--to", "2026-11-01T00:00:00Z"},
			{"jobs", "backfill", backfillJob, "--from", "last week", "--to", "1h"},
			{"jobs", "backfill", "--from", "7d", "--to", "1h"},
			{"jobs", "backfills"},
			{"backfills", "get"},
			{"backfills", "cancel", "a", "b"},
		} {
			_, errOut, code := invoke(t, env, "", args...)
			require.Equal(t, exitUsage, code, "tock %v: %s", args, errOut)
		}
		require.Empty(t, f.sent, "nothing is sent for a usage mistake")
	})

	t.Run("RefusalNamesTheField", func(t *testing.T) {
		t.Parallel()
		env, _ := setup(t, map[string]answer{post: {http.StatusBadRequest,
			`{"error":{"code":"invalid","message":"must not be in the future","field":"to"}}`}})
		_, errOut, code := invoke(t, env, "", "jobs", "backfill", backfillJob, "--from", "7d", "--to", "2999-01-01T00:00:00Z")
		require.Equal(t, exitError, code)
		require.Contains(t, errOut, "error: must not be in the future (invalid)\nfield: to\n")
	})

	t.Run("WaitOnAnEndedBackfill", func(t *testing.T) {
		t.Parallel()
		done := backfillBody(t, map[string]any{"status": "completed", "queued": 148, "completed": 147, "failed": 1,
			"remaining": 0, "finished_at": "2026-12-01T09:00:00.000Z"})
		env, _ := setup(t, map[string]answer{post: {http.StatusAccepted, done}})
		out, errOut, code := invoke(t, env, "", "jobs", "backfill", backfillJob, "--from", "7d", "--to", "1h", "--wait", "-o", "json")
		require.Equal(t, exitError, code, "an occurrence failed")
		require.Contains(t, errOut, "backfill "+backfillID+" of job "+backfillJob+": 2026-11-01 00:00:00Z to 2026-11-08 00:00:00Z, overlap skip\n")
		require.Contains(t, errOut, "completed: 148 queued, 147 completed, 1 failed, 0 skipped of 168")
		require.Contains(t, errOut, "error: backfill "+backfillID+": 1 of 148 occurrences queued failed")
		var b tock.Backfill
		require.NoError(t, json.Unmarshal([]byte(out), &b), "stdout holds the final backfill alone: %s", out)
		require.Equal(t, tock.BackfillCompleted, b.Status)
	})

	t.Run("List", func(t *testing.T) {
		t.Parallel()
		cancelled := backfillBody(t, map[string]any{"status": "cancelled", "reason": "cancelled by a DELETE"})
		env, f := setup(t, map[string]answer{
			"GET /api/v1/jobs/" + backfillJob + "/backfills": {http.StatusOK, `{"backfills":[` + cancelled + `]}`},
			"GET /api/v1/jobs/empty/backfills":               {http.StatusOK, `{"backfills":[]}`},
		})
		out, errOut, code := invoke(t, env, "", "jobs", "backfills", backfillJob)
		require.Equal(t, 0, code, errOut)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		require.Len(t, lines, 2, "a header and one row")
		require.Regexp(t, `^ID\s+FROM\s+TO\s+OVERLAP\s+STATUS\s+TOTAL`, lines[0])
		require.Regexp(t, `^`+backfillID+`\s+2026-11-01 00:00:00Z\s+2026-11-08 00:00:00Z\s+skip\s+cancelled\s+168\s`, lines[1])

		out, errOut, code = invoke(t, env, "", "jobs", "backfills", "empty", "-o", "json")
		require.Equal(t, 0, code, errOut)
		require.JSONEq(t, `{"backfills":[]}`, out)
		require.Equal(t, "GET /api/v1/jobs/empty/backfills", f.sent[1])
	})

	t.Run("GetAndCancel", func(t *testing.T) {
		t.Parallel()
		env, f := setup(t, map[string]answer{
			"GET /api/v1/backfills/" + backfillID: {http.StatusOK, backfillBody(t, nil)},
			"DELETE /api/v1/backfills/" + backfillID: {http.StatusOK,
				backfillBody(t, map[string]any{"status": "cancelled", "reason": "cancelled by a DELETE", "finished_at": "2026-12-01T09:00:00.000Z"})},
			"DELETE /api/v1/backfills/done": {http.StatusConflict, `{"error":{"code":"conflict","message":"the backfill completed already"}}`},
		})
		out, errOut, code := invoke(t, env, "", "backfills", "get", backfillID)
		require.Equal(t, 0, code, errOut)
		require.Contains(t, out, "status:    running\n")

		out, errOut, code = invoke(t, env, "", "backfills", "cancel", backfillID)
		require.Equal(t, 0, code, errOut)
		require.Contains(t, out, "status:    cancelled (cancelled by a DELETE)\n")
		require.Contains(t, out, "finished:  2026-12-01 09:00:00Z\n")

		_, errOut, code = invoke(t, env, "", "backfills", "cancel", "done")
		require.Equal(t, exitError, code)
		require.Contains(t, errOut, "the backfill completed already (conflict)")

		_, _, code = invoke(t, env, "", "backfills", "get", "nope")
		require.Equal(t, exitNotFound, code)
		require.Equal(t, []string{"GET /api/v1/backfills/" + backfillID, "DELETE /api/v1/backfills/" + backfillID,
			"DELETE /api/v1/backfills/done", "GET /api/v1/backfills/nope"}, f.sent)
	})
}

// TestWaitBackfill: --wait asks until the backfill ends, printing a line
// each time its progress moves, and fails when an occurrence failed or the
// backfill was cancelled.
func TestWaitBackfill(t *testing.T) {
	t.Parallel()
	type progress struct {
		status                               string
		queued, completed, failed, remaining int
		reason                               string
	}
	body := func(p progress) map[string]any {
		return map[string]any{"id": backfillID, "status": p.status, "total": 10, "existing": 2, "queued": p.queued,
			"completed": p.completed, "failed": p.failed, "remaining": p.remaining, "reason": p.reason}
	}
	tests := []struct {
		name    string
		answers []progress // what each GET answers, in turn
		lines   []string
		err     string
	}{
		{"Completed", []progress{{"running", 4, 2, 0, 4, ""}, {"running", 4, 2, 0, 4, ""}, {"completed", 8, 8, 0, 0, ""}},
			[]string{"running: 0 queued, 0 completed, 0 failed, 0 skipped of 10 (2 ran before, 8 remaining)",
				"running: 4 queued, 2 completed, 0 failed, 0 skipped of 10 (2 ran before, 4 remaining)",
				"completed: 8 queued, 8 completed, 0 failed, 0 skipped of 10 (2 ran before, 0 remaining)"}, ""},
		{"SomeFailed", []progress{{"completed", 8, 6, 2, 0, ""}},
			[]string{"running: 0 queued, 0 completed, 0 failed, 0 skipped of 10 (2 ran before, 8 remaining)",
				"completed: 8 queued, 6 completed, 2 failed, 0 skipped of 10 (2 ran before, 0 remaining)"},
			"backfill " + backfillID + ": 2 of 8 occurrences queued failed"},
		{"Cancelled", []progress{{"cancelled", 3, 3, 0, 5, "the job was cancelled"}},
			[]string{"running: 0 queued, 0 completed, 0 failed, 0 skipped of 10 (2 ran before, 8 remaining)",
				"cancelled: 3 queued, 3 completed, 0 failed, 0 skipped of 10 (2 ran before, 5 remaining)"},
			"backfill " + backfillID + " was cancelled: the job was cancelled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			gets := 0
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				defer mu.Unlock()
				if got := r.Method + " " + r.URL.Path; got != "GET /api/v1/backfills/"+backfillID {
					t.Errorf("asked %s", got)
				}
				gets++
				w.Header().Set("Content-Type", "application/json")
				json.NewEncoder(w).Encode(body(tt.answers[min(gets, len(tt.answers))-1]))
			}))
			defer srv.Close()
			var out, errOut bytes.Buffer
			a := &app{out: &out, errOut: &errOut, output: "table"}
			start := &tock.Backfill{ID: backfillID, JobID: backfillJob, From: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC),
				To: time.Date(2026, 11, 8, 0, 0, 0, 0, time.UTC), Overlap: tock.OverlapSkip, Status: tock.BackfillRunning,
				Total: 10, Existing: 2, Remaining: 8}
			err := a.waitBackfill(t.Context(), tock.New(srv.URL, "t"), start, time.Millisecond)
			if tt.err == "" {
				require.NoError(t, err)
			} else {
				require.EqualError(t, err, tt.err)
			}
			header := "backfill " + backfillID + " of job " + backfillJob + ": 2026-11-01 00:00:00Z to 2026-11-08 00:00:00Z, overlap skip\n"
			require.Equal(t, header+strings.Join(tt.lines, "\n")+"\n", out.String())
			require.Equal(t, len(tt.answers), gets, "it stops asking once the backfill ended")
			require.Empty(t, errOut.String())
		})
	}

	t.Run("StopsWithTheContext", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(t.Context())
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			defer cancel()
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(body(progress{"running", 1, 0, 0, 7, ""}))
		}))
		defer srv.Close()
		var out bytes.Buffer
		a := &app{out: &out, errOut: &out, output: "table"}
		err := a.waitBackfill(ctx, tock.New(srv.URL, "t"), &tock.Backfill{ID: backfillID, Status: tock.BackfillRunning}, time.Millisecond)
		require.ErrorIs(t, err, context.Canceled)
		require.Contains(t, err.Error(), fmt.Sprintf("stopped waiting for backfill %s, which goes on", backfillID))
	})
}
