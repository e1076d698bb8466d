package e2e

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/e2e/cluster"
)

// backfillView is what the tests read of a backfill.
type backfillView struct {
	ID         string     `json:"id"`
	JobID      string     `json:"job_id"`
	Status     string     `json:"status"`
	Reason     string     `json:"reason"`
	Overlap    string     `json:"overlap"`
	Total      int        `json:"total"`
	Existing   int        `json:"existing"`
	Queued     int        `json:"queued"`
	Running    int        `json:"running"`
	Completed  int        `json:"completed"`
	Failed     int        `json:"failed"`
	Skipped    int        `json:"skipped"`
	Remaining  int        `json:"remaining"`
	FinishedAt *time.Time `json:"finished_at"`
}

// apiError is an error answer's body.
type apiError struct {
	Error struct {
		Code, Message, Field string
	} `json:"error"`
}

func backfill(ctx context.Context, t *testing.T, api *cluster.API, id string, body map[string]any) backfillView {
	t.Helper()
	var b backfillView
	code, err := api.Do(ctx, "POST", "/api/v1/jobs/"+id+"/backfill", body, &b)
	require.NoError(t, err)
	require.Equal(t, http.StatusAccepted, code)
	return b
}

func getBackfill(ctx context.Context, t *testing.T, api *cluster.API, id string) backfillView {
	t.Helper()
	var b backfillView
	code, err := api.Do(ctx, "GET", "/api/v1/backfills/"+id, nil, &b)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code)
	return b
}

func waitBackfill(ctx context.Context, t *testing.T, api *cluster.API, id string, within time.Duration) backfillView {
	t.Helper()
	var b backfillView
	require.True(t, cluster.WaitUntil(within, 100*time.Millisecond, func() bool {
		b = getBackfill(ctx, t, api, id)
		return b.Status != "running"
	}), "backfill %s still running: %+v", id, b)
	return b
}

// TestBackfill is the backfill acceptance on the real services: 24 hourly
// occurrences of a past day run once each, with their times and
// X-Tock-Backfill; a second backfill of the range runs none again; a
// backfill cancelled midway starts nothing a second after its cancel; a
// range of 10,001 occurrences is a 400, as are the other bad requests.
func TestBackfill(t *testing.T) {
	c := start(t, cluster.Options{Schedulers: 1, Workers: 1})
	target := cluster.NewTarget()
	defer target.Close()
	api := c.API()
	ctx := t.Context()

	today := time.Now().UTC().Truncate(24 * time.Hour)
	yesterday := today.Add(-24 * time.Hour)
	hourly, err := api.CreateJob(ctx, map[string]any{"name": "hourly", "type": "webhook",
		"schedule": map[string]any{"cron": "0 * * * *"}, "payload": hookTo(target.URL + "/hourly")})
	require.NoError(t, err)

	t.Run("RunsEachOccurrenceOfAPastDayOnce", func(t *testing.T) {
		var b backfillView
		h := http.Header{}
		code, err := api.DoWith(ctx, "POST", "/api/v1/jobs/"+hourly.ID+"/backfill", h,
			map[string]any{"from": yesterday, "to": today}, &b)
		require.NoError(t, err)
		require.Equal(t, http.StatusAccepted, code)
		require.Equal(t, 24, b.Total)
		require.Equal(t, "running", b.Status)
		require.Equal(t, "allow", b.Overlap, "the job's policy")
		b = waitBackfill(ctx, t, api, b.ID, 60*time.Second)
		require.Equal(t, "completed", b.Status)
		require.Equal(t, backfillView{ID: b.ID, JobID: hourly.ID, Status: "completed", Overlap: "allow", Total: 24, Queued: 24, Completed: 24,
			FinishedAt: b.FinishedAt}, b)

		// The job's own occurrences (today's) run too, should an hour
		// begin meanwhile.
		backfilled := func() []cluster.Delivery {
			return slices.DeleteFunc(cluster.ForJob(target.Deliveries(), hourly.ID), func(d cluster.Delivery) bool { return !d.ScheduledFor.Before(today) })
		}
		time.Sleep(500 * time.Millisecond) // nothing more comes
		ds := byScheduledFor(backfilled())
		require.Len(t, ds, 24, "one delivery per occurrence")
		for i, d := range ds {
			at := yesterday.Add(time.Duration(i) * time.Hour)
			require.True(t, d.ScheduledFor.Equal(at), "delivery %d: X-Tock-Scheduled-For %s, want %s", i, d.ScheduledFor, at)
			require.True(t, d.Backfill, "X-Tock-Backfill")
			require.Equal(t, fmt.Sprintf("%s:%d", hourly.ID, at.UnixMilli()), d.IdempotencyKey, "the occurrence's own key")
			require.Equal(t, 1, d.Attempt)
		}
		runs, err := api.Runs(ctx, hourly.ID, 100)
		require.NoError(t, err)
		runs = slices.DeleteFunc(runs, func(r cluster.Run) bool { return !r.ScheduledFor.Before(today) })
		require.Len(t, runs, 24)
		for _, r := range runs {
			require.Equal(t, "completed", r.Status)
		}

		// Again over the same range: every occurrence ran already.
		again := backfill(ctx, t, api, hourly.ID, map[string]any{"from": yesterday, "to": today})
		again = waitBackfill(ctx, t, api, again.ID, 10*time.Second)
		require.Equal(t, "completed", again.Status)
		require.Equal(t, 24, again.Existing)
		require.Zero(t, again.Queued)
		time.Sleep(500 * time.Millisecond)
		require.Len(t, backfilled(), 24, "nothing ran twice")

		var list struct {
			Backfills []backfillView `json:"backfills"`
		}
		code, err = api.Do(ctx, "GET", "/api/v1/jobs/"+hourly.ID+"/backfills", nil, &list)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, code)
		require.Len(t, list.Backfills, 2)
		require.Equal(t, again.ID, list.Backfills[0].ID, "newest first")
	})

	t.Run("ACancelledBackfillStopsWithinASecond", func(t *testing.T) {
		// One at a time (buffer_one), 300 ms each: 60 would take 18 s.
		slow, err := api.CreateJob(ctx, map[string]any{"name": "minutely", "type": "webhook",
			"schedule": map[string]any{"cron": "* * * * *"}, "payload": hookTo(target.URL + "/answers-in-300ms")})
		require.NoError(t, err)
		from := time.Now().UTC().Truncate(time.Minute).Add(-2 * time.Hour)
		b := backfill(ctx, t, api, slow.ID, map[string]any{"from": from, "to": from.Add(time.Hour), "overlap": "buffer_one"})
		require.Equal(t, 60, b.Total)
		count := func() int { return len(cluster.ForJob(target.Deliveries(), slow.ID)) }
		require.True(t, cluster.WaitUntil(20*time.Second, 20*time.Millisecond, func() bool { return count() >= 3 }))
		var cancelled backfillView
		code, err := api.Do(ctx, "DELETE", "/api/v1/backfills/"+b.ID, nil, &cancelled)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, code)
		answered := time.Now()
		require.Equal(t, "cancelled", cancelled.Status)
		require.NotNil(t, cancelled.FinishedAt)

		time.Sleep(2 * time.Second)
		ds := cluster.ForJob(target.Deliveries(), slow.ID)
		require.Less(t, len(ds), 60)
		for _, d := range ds {
			require.True(t, d.At.Before(answered.Add(time.Second)), "a delivery started %s after the cancel", d.At.Sub(answered))
		}
		after := getBackfill(ctx, t, api, b.ID)
		require.Equal(t, "cancelled", after.Status)
		require.Equal(t, "cancelled by request", after.Reason)

		// Cancelling again answers it as it is.
		code, err = api.Do(ctx, "DELETE", "/api/v1/backfills/"+b.ID, nil, &cancelled)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, code)
		require.Equal(t, "cancelled", cancelled.Status)
	})

	t.Run("BoundsAndBadRequests", func(t *testing.T) {
		everySecond, err := api.CreateJob(ctx, map[string]any{"name": "every-second", "type": "webhook",
			"schedule": map[string]any{"cron": "* * * * * *"}, "payload": hookTo(target.URL + "/second")})
		require.NoError(t, err)
		from := time.Now().UTC().Truncate(time.Second).Add(-24 * time.Hour)
		oneOff, err := api.CreateJob(ctx, map[string]any{"name": "one-off", "type": "webhook",
			"run_at": time.Now().Add(time.Hour), "payload": hookTo(target.URL + "/once")})
		require.NoError(t, err)

		for _, tt := range []struct {
			name, id string
			body     map[string]any
			status   int
			field    string
		}{
			{"10,001 occurrences", everySecond.ID, map[string]any{"from": from, "to": from.Add(10_001 * time.Second)}, 400, "to"},
			{"no from", everySecond.ID, map[string]any{"to": from}, 400, "from"},
			{"no to", everySecond.ID, map[string]any{"from": from}, 400, "to"},
			{"to before from", everySecond.ID, map[string]any{"from": from, "to": from.Add(-time.Second)}, 400, "to"},
			{"in the future", everySecond.ID, map[string]any{"from": from, "to": time.Now().Add(time.Hour)}, 400, "to"},
			{"bad overlap", everySecond.ID, map[string]any{"from": from, "to": from.Add(time.Minute), "overlap": "sometimes"}, 400, "overlap"},
			{"unknown field", everySecond.ID, map[string]any{"from": from, "to": from.Add(time.Minute), "speed": 2}, 400, "speed"},
			{"bad time", everySecond.ID, map[string]any{"from": "yesterday", "to": from}, 400, "from"},
			{"one-off job", oneOff.ID, map[string]any{"from": from, "to": from.Add(time.Minute)}, 400, ""},
			{"past run retention", everySecond.ID, map[string]any{"from": from.Add(-40 * 24 * time.Hour), "to": from.Add(-40*24*time.Hour + time.Minute)}, 400, "from"},
			{"unknown job", "0193f8a2-7c1e-7d3a-9b1f-2a4c6e8f0a1b", map[string]any{"from": from, "to": from.Add(time.Minute)}, 404, ""},
		} {
			var e apiError
			code, err := api.Do(ctx, "POST", "/api/v1/jobs/"+tt.id+"/backfill", tt.body, &e)
			require.NoError(t, err, tt.name)
			require.Equal(t, tt.status, code, "%s: %+v", tt.name, e)
			require.Equal(t, tt.field, e.Error.Field, "%s: %s", tt.name, e.Error.Message)
		}
		var list struct {
			Backfills []backfillView `json:"backfills"`
		}
		_, err = api.Do(ctx, "GET", "/api/v1/jobs/"+everySecond.ID+"/backfills", nil, &list)
		require.NoError(t, err)
		require.Empty(t, list.Backfills, "a refused request changes nothing")

		// 10,000 is the bound, not past it: taken, then cancelled.
		b := backfill(ctx, t, api, everySecond.ID, map[string]any{"from": from, "to": from.Add(10_000 * time.Second)})
		require.Equal(t, 10_000, b.Total)
		code, err := api.Do(ctx, "DELETE", "/api/v1/jobs/"+everySecond.ID+"/backfills/"+b.ID, nil, &b)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, code)
		require.Equal(t, "cancelled", b.Status)

		// Another user sees none of it.
		other, _, err := api.User(ctx, "backfill-other", nil)
		require.NoError(t, err)
		for _, path := range []string{"/api/v1/backfills/" + b.ID, "/api/v1/jobs/" + everySecond.ID + "/backfills"} {
			code, err := other.Do(ctx, "GET", path, nil, nil)
			require.NoError(t, err)
			require.Equal(t, http.StatusNotFound, code, path)
		}
		code, err = other.Do(ctx, "DELETE", "/api/v1/backfills/"+b.ID, nil, nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusNotFound, code)
		code, err = other.Do(ctx, "POST", "/api/v1/jobs/"+everySecond.ID+"/backfill", map[string]any{"from": from, "to": from.Add(time.Minute)}, nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusNotFound, code)
		require.False(t, slices.ContainsFunc(target.Deliveries(), func(d cluster.Delivery) bool { return d.Path == "/once" }))
	})
}
