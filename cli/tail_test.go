package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	tock "github.com/tockhq/tock/sdk/go"
)

// TestTailFollowsPagesBack: when more than a page of runs came since the
// last look, tail follows the pages back to the runs it saw, printing every
// new run once, oldest first.
func TestTailFollowsPagesBack(t *testing.T) {
	run := func(i int) map[string]any {
		return map[string]any{"id": fmt.Sprintf("r%03d", i), "job_id": "j", "status": "completed",
			"scheduled_for": time.Unix(int64(i), 0).UTC(), "attempt": 1}
	}
	// newest first, from hi down to lo
	page := func(hi, lo int, next string) map[string]any {
		var rs []map[string]any
		for i := hi; i >= lo; i-- {
			rs = append(rs, run(i))
		}
		return map[string]any{"runs": rs, "next_cursor": next}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		var body map[string]any
		switch {
		case calls == 1: // the first look only sets the mark
			body = page(0, 0, "")
		case r.URL.Query().Get("cursor") == "": // 250 new runs since; nothing new after
			body = page(250, 51, "p2")
		case r.URL.Query().Get("cursor") == "p2":
			body = page(50, 0, "p3")
		default:
			t.Errorf("tail asked for %s, beyond the run it had seen", r.URL)
		}
		if calls >= 4 {
			defer cancel()
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(body)
	}))
	defer srv.Close()

	var out, errOut bytes.Buffer
	a := &app{out: &out, errOut: &errOut, output: "json"}
	require.NoError(t, a.tail(ctx, tock.New(srv.URL, "t"), tock.RunFilter{Limit: 200}, time.Millisecond))
	ids := regexp.MustCompile(`"id": "(r\d+)"`).FindAllStringSubmatch(out.String(), -1)
	require.Len(t, ids, 250, "every new run once")
	require.Equal(t, "r001", ids[0][1], "oldest first")
	require.Equal(t, "r250", ids[249][1])
	require.Empty(t, errOut.String())
}

// TestTailBoundsItsLook: a flood of new runs is followed back 10 pages at
// most, and tail says that older ones were not shown.
func TestTailBoundsItsLook(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	n, looks := 0, 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if r.URL.Query().Get("cursor") == "" {
			looks++
			if looks == 3 {
				defer cancel()
			}
		}
		var rs []map[string]any
		for range 200 {
			n++ // every run is new
			rs = append(rs, map[string]any{"id": fmt.Sprintf("x%d", n), "status": "completed", "scheduled_for": time.Unix(0, 0).UTC()})
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"runs": rs, "next_cursor": "more"})
	}))
	defer srv.Close()
	var out, errOut bytes.Buffer
	a := &app{out: &out, errOut: &errOut, output: "json"}
	require.NoError(t, a.tail(ctx, tock.New(srv.URL, "t"), tock.RunFilter{Limit: 200}, time.Millisecond))
	require.Contains(t, errOut.String(), "more than 2000 new runs since the last look")
	require.Len(t, regexp.MustCompile(`"id": "x\d+"`).FindAllString(out.String(), -1), 2000, "one look prints 10 pages")
}
