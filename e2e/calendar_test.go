package e2e

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/e2e/cluster"
)

// TestCalendars is the calendar acceptance on the real services (and an
// RRULE's EXDATE): an
// every-second job that skips a calendar's range runs before and after it,
// and records each occurrence inside it skipped with the calendar's
// reason; its preview leaves them out and lists them as skipped; a job
// may name only calendars its owner has, and a calendar a live job names
// cannot be deleted.
func TestCalendars(t *testing.T) {
	c := start(t, cluster.Options{Schedulers: 1, Workers: 1})
	target := cluster.NewTarget()
	defer target.Close()
	api := c.API()
	ctx := t.Context()

	t0 := ceilSecond(time.Now().Add(3 * time.Second))
	window := map[string]any{"from": t0.Add(2 * time.Second), "to": t0.Add(4 * time.Second)}
	var cal struct {
		Name     string           `json:"name"`
		Timezone string           `json:"timezone"`
		Dates    []string         `json:"dates"`
		Ranges   []map[string]any `json:"ranges"`
		RRules   []string         `json:"rrules"`
	}
	code, err := api.Do(ctx, "PUT", "/api/v1/calendars/maintenance", map[string]any{"timezone": "Europe/Berlin",
		"ranges": []any{window}, "dates": []string{"2030-12-25"}, "rrules": []string{"FREQ=YEARLY;BYMONTH=5;BYMONTHDAY=1"}}, &cal)
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, code)
	require.Equal(t, "maintenance", cal.Name)
	require.Equal(t, "Europe/Berlin", cal.Timezone)
	require.Equal(t, []string{"2030-12-25"}, cal.Dates)
	require.Len(t, cal.Ranges, 1)

	job, err := api.CreateJob(ctx, map[string]any{"name": "every second", "type": "webhook",
		"schedule":       map[string]any{"cron": "* * * * * *", "start_at": t0, "end_at": t0.Add(6 * time.Second)},
		"skip_calendars": []string{"maintenance"}, "payload": hookTo(target.URL + "/cal")})
	require.NoError(t, err)

	t.Run("PreviewsLeaveTheSkippedOut", func(t *testing.T) {
		var out struct {
			Next []struct {
				UTC time.Time `json:"utc"`
			} `json:"next"`
			Skipped []struct {
				UTC    time.Time `json:"utc"`
				Reason string    `json:"reason"`
			} `json:"skipped"`
		}
		code, err := api.Do(ctx, "GET", "/api/v1/jobs/"+job.ID+"/next?n=4", nil, &out)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, code)
		var next, skipped []time.Time
		for _, n := range out.Next {
			next = append(next, n.UTC)
		}
		for _, s := range out.Skipped {
			skipped = append(skipped, s.UTC)
			require.True(t, strings.HasPrefix(s.Reason, "calendar maintenance: range "), s.Reason)
		}
		require.Equal(t, []time.Time{t0, t0.Add(time.Second), t0.Add(4 * time.Second), t0.Add(5 * time.Second)}, next)
		require.Equal(t, []time.Time{t0.Add(2 * time.Second), t0.Add(3 * time.Second)}, skipped)
	})

	t.Run("RunsAroundTheRangeAndRecordsTheSkipped", func(t *testing.T) {
		require.True(t, target.WaitFor(time.Until(t0)+15*time.Second, func(ds []cluster.Delivery) bool { return len(ds) >= 4 }))
		cluster.SleepUntil(ctx, t0.Add(7*time.Second))
		var got []time.Time
		for _, d := range target.Deliveries() {
			got = append(got, d.ScheduledFor)
		}
		slices.SortFunc(got, time.Time.Compare)
		require.Equal(t, []time.Time{t0, t0.Add(time.Second), t0.Add(4 * time.Second), t0.Add(5 * time.Second)}, got)
		require.True(t, cluster.WaitUntil(10*time.Second, 100*time.Millisecond, func() bool {
			runs, err := api.Runs(ctx, job.ID, 100)
			return err == nil && len(runs) == 6
		}))
		runs, err := api.Runs(ctx, job.ID, 100)
		require.NoError(t, err)
		for _, r := range runs {
			inside := !r.ScheduledFor.Before(t0.Add(2*time.Second)) && r.ScheduledFor.Before(t0.Add(4*time.Second))
			if inside {
				require.Equal(t, "skipped", r.Status, "%s", r.ScheduledFor)
				require.True(t, strings.HasPrefix(r.Error, "calendar maintenance: range "), r.Error)
			} else {
				require.Equal(t, "completed", r.Status, "%s", r.ScheduledFor)
			}
		}
	})

	t.Run("AnRRuleTakesOutItsExdates", func(t *testing.T) {
		t1 := ceilSecond(time.Now().Add(3 * time.Second))
		ex := t1.Add(time.Second).UTC().Format("20060102T150405Z")
		j, err := api.CreateJob(ctx, map[string]any{"name": "exdate", "type": "webhook",
			"schedule": map[string]any{"rrule": "FREQ=SECONDLY\nEXDATE:" + ex, "start_at": t1, "end_at": t1.Add(3 * time.Second)},
			"payload":  hookTo(target.URL + "/exdate")})
		require.NoError(t, err)
		var out struct {
			Next []struct {
				UTC time.Time `json:"utc"`
			} `json:"next"`
		}
		code, err := api.Do(ctx, "GET", "/api/v1/jobs/"+j.ID+"/next?n=5", nil, &out)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, code)
		require.Len(t, out.Next, 2)
		require.True(t, out.Next[0].UTC.Equal(t1) && out.Next[1].UTC.Equal(t1.Add(2*time.Second)), "%v", out.Next)
		cluster.SleepUntil(ctx, t1.Add(4*time.Second))
		require.True(t, cluster.WaitUntil(10*time.Second, 50*time.Millisecond, func() bool {
			return len(cluster.ForJob(target.Deliveries(), j.ID)) >= 2
		}))
		time.Sleep(500 * time.Millisecond)
		var got []time.Time
		for _, d := range cluster.ForJob(target.Deliveries(), j.ID) {
			got = append(got, d.ScheduledFor)
		}
		slices.SortFunc(got, time.Time.Compare)
		require.Equal(t, []time.Time{t1, t1.Add(2 * time.Second)}, got, "the EXDATE's second never runs")
	})

	t.Run("BadRequestsAndDeletes", func(t *testing.T) {
		var e apiError
		code, err := api.Do(ctx, "POST", "/api/v1/jobs", map[string]any{"name": "typo", "type": "webhook",
			"schedule": map[string]any{"cron": "0 9 * * 1-5"}, "skip_calendars": []string{"de-holidayz"},
			"payload": hookTo(target.URL + "/typo")}, &e)
		require.NoError(t, err)
		require.Equal(t, http.StatusBadRequest, code)
		require.Equal(t, "skip_calendars", e.Error.Field, e.Error.Message)
		code, err = api.Do(ctx, "POST", "/api/v1/jobs", map[string]any{"name": "one-off", "type": "webhook",
			"run_at": time.Now().Add(time.Hour), "skip_calendars": []string{"maintenance"}, "payload": hookTo(target.URL + "/x")}, &e)
		require.NoError(t, err)
		require.Equal(t, http.StatusBadRequest, code)
		require.Equal(t, "skip_calendars", e.Error.Field)

		for _, tt := range []struct {
			body  map[string]any
			field string
		}{
			{map[string]any{"timezone": "Mars/Olympus"}, "timezone"},
			{map[string]any{"dates": []string{"2026-12-25", "25.12.2026"}}, "dates[1]"},
			{map[string]any{"ranges": []any{map[string]any{"from": t0, "to": t0.Add(-time.Second)}}}, "ranges[0].to"},
			{map[string]any{"ranges": []any{map[string]any{"from": "soon", "to": t0}}}, "ranges[0].from"},
			{map[string]any{"rrules": []string{"FREQ=SOMETIMES"}}, "rrules[0]"},
			{map[string]any{"holidays": true}, "holidays"},
		} {
			code, err := api.Do(ctx, "PUT", "/api/v1/calendars/bad", tt.body, &e)
			require.NoError(t, err)
			require.Equal(t, http.StatusBadRequest, code, "%v", tt.body)
			require.Equal(t, tt.field, e.Error.Field, "%v: %s", tt.body, e.Error.Message)
		}
		code, err = api.Do(ctx, "GET", "/api/v1/calendars/bad", nil, nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusNotFound, code, "a refused PUT stores nothing")
		code, err = api.Do(ctx, "PUT", "/api/v1/calendars/Bad%20Name", map[string]any{}, &e)
		require.NoError(t, err)
		require.Equal(t, http.StatusBadRequest, code)

		// In use by a job that can still run: 409, until it is cancelled.
		long, err := api.CreateJob(ctx, map[string]any{"name": "weekdays", "type": "webhook",
			"schedule": map[string]any{"cron": "0 9 * * 1-5"}, "skip_calendars": []string{"maintenance"}, "payload": hookTo(target.URL + "/w")})
		require.NoError(t, err)
		code, err = api.Do(ctx, "DELETE", "/api/v1/calendars/maintenance", nil, &e)
		require.NoError(t, err)
		require.Equal(t, http.StatusConflict, code, e.Error.Message)
		for _, id := range []string{long.ID, job.ID} {
			code, err = api.Do(ctx, "DELETE", "/api/v1/jobs/"+id, nil, nil)
			require.NoError(t, err)
			require.Contains(t, []int{http.StatusNoContent, http.StatusConflict}, code)
		}
		var list struct {
			Calendars []struct {
				Name string `json:"name"`
			} `json:"calendars"`
		}
		code, err = api.Do(ctx, "GET", "/api/v1/calendars", nil, &list)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, code)
		require.Len(t, list.Calendars, 1)
		other, _, err := api.User(ctx, "calendar-other", nil)
		require.NoError(t, err)
		code, err = other.Do(ctx, "GET", "/api/v1/calendars/maintenance", nil, nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusNotFound, code, "another owner's calendar")
		code, err = api.Do(ctx, "DELETE", "/api/v1/calendars/maintenance", nil, nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusNoContent, code)
	})
}
