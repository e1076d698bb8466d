package api_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/queue"
	"github.com/tockhq/tock/pkg/store"
	"github.com/tockhq/tock/services/dashboard/api"
	"github.com/tockhq/tock/services/dashboard/apierr"
)

// horizon is the look-ahead setup gives the API.
const horizon = 10 * time.Minute

// berlin is the zone most schedules below are evaluated in.
var berlin = mustZone("Europe/Berlin")

func mustZone(name string) *time.Location {
	loc, err := time.LoadLocation(name)
	if err != nil {
		panic(err)
	}
	return loc
}

// recurring is a valid recurring ping job with the given schedule object.
func recurring(name string, sched map[string]any) map[string]any {
	return map[string]any{
		"name":     name,
		"type":     "ping",
		"schedule": sched,
		"payload":  map[string]any{"url": "https://example.com/health"},
	}
}

// oneOff is a valid one-off ping job whose timing is set by timing.
func oneOff(name string, timing map[string]any) map[string]any {
	m := map[string]any{"name": name, "type": "ping", "payload": map[string]any{"url": "https://example.com/health"}}
	for k, v := range timing {
		m[k] = v
	}
	return m
}

// post creates a job from body and returns it.
func (b *bundle) post(t *testing.T, body map[string]any) api.Job {
	t.Helper()
	rec := b.do(t, http.MethodPost, "/api/v1/jobs", body)
	require.Equal(t, http.StatusCreated, rec.Code, "body: %s", rec.Body.String())
	return decode[api.Job](t, rec)
}

// stored reads the job as Postgres holds it.
func (b *bundle) stored(t *testing.T, id [16]byte) *job.Job {
	t.Helper()
	j, err := b.store.GetJob(t.Context(), store.AnyOwner, id)
	require.NoError(t, err)
	return j
}

// due returns every occurrence queued to run with its due time: in the due
// set, or published to the stream.
func (b *bundle) due(t *testing.T) map[job.Occurrence]time.Time {
	t.Helper()
	zs, err := b.rdb.ZRangeWithScores(t.Context(), b.keys.Due(), 0, -1).Result()
	require.NoError(t, err)
	out := make(map[job.Occurrence]time.Time, len(zs))
	for _, z := range zs {
		o, err := job.ParseMember(z.Member.(string))
		require.NoError(t, err)
		out[o] = time.UnixMilli(int64(z.Score)).UTC()
	}
	// An occurrence due within the publish lead is published at once
	// (queue.Queue.EnqueueSoon): queued all the same, at its due time.
	entries, err := b.rdb.XRange(t.Context(), b.keys.Ready(), "-", "+").Result()
	require.NoError(t, err)
	for _, e := range entries {
		o, err := job.ParseMember(e.Values["m"].(string))
		require.NoError(t, err)
		ms, err := strconv.ParseInt(e.Values["d"].(string), 10, 64)
		require.NoError(t, err)
		out[o] = time.UnixMilli(ms).UTC()
	}
	return out
}

// inDue reports whether occ is in the due set.
func (b *bundle) inDue(t *testing.T, occ job.Occurrence) bool {
	t.Helper()
	err := b.rdb.ZScore(t.Context(), b.keys.Due(), occ.Member()).Err()
	if err == redis.Nil {
		return false
	}
	require.NoError(t, err)
	return true
}

func firstAttempt(j api.Job, generation int) job.Occurrence {
	return job.Occurrence{JobID: j.ID, ScheduledFor: j.RunAt.Time, Attempt: 1, Priority: j.Priority, Generation: generation}.Route(j.Owner, j.Payload)
}

func path(j api.Job, suffix string) string { return "/api/v1/jobs/" + j.ID.String() + suffix }

func TestCreateScheduledJob(t *testing.T) {
	t.Parallel()

	t.Run("RecurringCronLoadsHorizon", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		rec := b.do(t, http.MethodPost, "/api/v1/jobs", recurring("every 10 s", map[string]any{
			"cron": "*/10 * * * * *", "timezone": "Europe/Berlin",
		}))
		require.Equal(t, http.StatusCreated, rec.Code, "body: %s", rec.Body.String())
		j := decode[api.Job](t, rec)

		first := b.now.Truncate(10 * time.Second)
		if first.Before(b.now) {
			first = first.Add(10 * time.Second)
		}
		require.Equal(t, "Europe/Berlin", j.Timezone)
		require.True(t, j.RunAt.IsZero(), "a recurring job has no run_at")
		require.True(t, first.Equal(j.NextRunAt.Time), "next_run_at %s, want %s", j.NextRunAt, first)

		var sched map[string]any
		require.NoError(t, json.Unmarshal(j.Schedule, &sched))
		require.Equal(t, "*/10 * * * * *", sched["cron"])
		require.Equal(t, "Europe/Berlin", sched["timezone"])
		require.Equal(t, "run_once", sched["misfire"], "normalized: defaults filled in")
		require.NotEmpty(t, sched["start_at"])

		raw := decode[map[string]any](t, rec)
		require.Nil(t, raw["run_at"])
		require.Regexp(t, wireTime, raw["next_run_at"])

		// Every occurrence within the horizon is in Redis, under the job's generation.
		st := b.stored(t, j.ID)
		due := b.due(t)
		require.Len(t, due, int(horizon/(10*time.Second)))
		for o, score := range due {
			require.Equal(t, j.ID, o.JobID)
			require.Equal(t, st.Generation, o.Generation)
			require.Equal(t, 1, o.Attempt)
			require.True(t, o.ScheduledFor.Equal(score))
			require.Zero(t, o.ScheduledFor.UnixMilli()%10_000, "on a 10 s boundary")
			require.False(t, o.ScheduledFor.Before(first))
			require.True(t, o.ScheduledFor.Before(b.now.Add(horizon)))
		}
		require.Contains(t, due, job.Occurrence{JobID: j.ID, ScheduledFor: first, Attempt: 1, Generation: st.Generation}.Route(j.Owner, j.Payload))
		require.False(t, st.DueAt.Before(b.now.Add(horizon)), "cursor moved past the horizon")
		require.Equal(t, len(due), st.Occurrences)

		got := decode[api.Job](t, b.do(t, http.MethodGet, path(j, ""), nil))
		require.JSONEq(t, string(j.Schedule), string(got.Schedule))
		require.True(t, first.Equal(got.NextRunAt.Time))
	})

	t.Run("OneOffHasNoSchedule", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		rec := b.do(t, http.MethodPost, "/api/v1/jobs", spec("once", b.now.Add(time.Hour)))
		require.Equal(t, http.StatusCreated, rec.Code)
		raw := decode[map[string]any](t, rec)
		require.NotContains(t, raw, "schedule")
		require.Equal(t, "UTC", raw["timezone"])
	})

	t.Run("DelayRunsAfterInjectedClock", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := b.post(t, oneOff("in 90 s", map[string]any{"delay": "90s"}))
		want := b.now.Add(90 * time.Second)
		require.True(t, want.Equal(j.RunAt.Time), "run_at %s, want %s", j.RunAt, want)
		require.True(t, want.Equal(j.NextRunAt.Time))
		require.True(t, b.inDue(t, firstAttempt(j, 0)), "due within the horizon: in Redis")

		later := b.post(t, oneOff("in 15 days", map[string]any{"delay": "15d"}))
		require.True(t, b.now.Add(15*24*time.Hour).Equal(later.RunAt.Time))
	})

	t.Run("RunOnIsLocalMidnight", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ny := mustZone("America/New_York")
		day := b.now.In(ny).AddDate(0, 0, 30)
		j := b.post(t, oneOff("on a day", map[string]any{"run_on": day.Format("2006-01-02"), "timezone": "America/New_York"}))
		want := time.Date(day.Year(), day.Month(), day.Day(), 0, 0, 0, 0, ny).UTC()
		require.True(t, want.Equal(j.RunAt.Time), "run_at %s, want %s", j.RunAt, want)
		require.Equal(t, "America/New_York", j.Timezone)
	})

	t.Run("RejectsInvalidTiming", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		cron := func(edit func(m map[string]any)) map[string]any {
			s := map[string]any{"cron": "0 9 * * *", "timezone": "Europe/Berlin"}
			edit(s)
			return recurring("x", s)
		}
		withRunAt := cron(func(map[string]any) {})
		withRunAt["run_at"] = b.now.Add(time.Hour).Format(time.RFC3339)
		cases := []struct {
			name  string
			body  any
			field string
		}{
			{"BadCron", cron(func(s map[string]any) { s["cron"] = "61 * * * *" }), "schedule.cron"},
			{"BadZone", cron(func(s map[string]any) { s["timezone"] = "Mars/Olympus" }), "schedule.timezone"},
			{"EndBeforeStart", cron(func(s map[string]any) {
				s["start_at"] = b.now.Add(48 * time.Hour).Format(time.RFC3339)
				s["end_at"] = b.now.Add(24 * time.Hour).Format(time.RFC3339)
			}), "schedule.end_at"},
			{"BadStartAt", cron(func(s map[string]any) { s["start_at"] = "tomorrow" }), "schedule.start_at"},
			{"UnknownScheduleField", cron(func(s map[string]any) { s["crn"] = "x" }), "schedule.crn"},
			{"RunAtAndSchedule", withRunAt, "schedule"},
			{"BadDelay", oneOff("x", map[string]any{"delay": "abc"}), "delay"},
			{"RunOnWithoutTimezone", oneOff("x", map[string]any{"run_on": "2030-01-01"}), "timezone"},
			{"DelayAndRunAt", oneOff("x", map[string]any{"delay": "1m", "run_at": b.now.Add(time.Hour).Format(time.RFC3339)}), "run_at"},
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
}

func TestNextRuns(t *testing.T) {
	t.Parallel()

	t.Run("DailyBerlinInWinter", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := b.post(t, recurring("daily", map[string]any{
			"every": "day", "at": "09:00", "timezone": "Europe/Berlin", "start_at": "2030-12-07T00:00:00Z",
		}))
		rec := b.do(t, http.MethodGet, path(j, "/next?n=3"), nil)
		require.Equal(t, http.StatusOK, rec.Code, "body: %s", rec.Body.String())
		require.JSONEq(t, `{"next": [
			{"at": "2030-12-07T09:00:00+01:00", "utc": "2030-12-07T08:00:00Z"},
			{"at": "2030-12-08T09:00:00+01:00", "utc": "2030-12-08T08:00:00Z"},
			{"at": "2030-12-09T09:00:00+01:00", "utc": "2030-12-09T08:00:00Z"}
		]}`, rec.Body.String())

		list := decode[api.UpcomingList](t, b.do(t, http.MethodGet, path(j, "/next"), nil))
		require.Len(t, list.Next, api.DefaultUpcoming)
	})

	t.Run("CountLimitsTheList", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := b.post(t, recurring("thrice", map[string]any{
			"cron": "0 9 * * *", "timezone": "Europe/Berlin", "start_at": "2030-12-07T00:00:00Z", "count": 3,
		}))
		list := decode[api.UpcomingList](t, b.do(t, http.MethodGet, path(j, "/next?n=10"), nil))
		require.Len(t, list.Next, 3)
	})

	t.Run("CountCoversLoadedOccurrences", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := b.post(t, recurring("five", map[string]any{"cron": "*/10 * * * * *", "count": 5}))
		st := b.stored(t, j.ID)
		require.Equal(t, 5, st.Occurrences, "all five loaded at once")
		require.True(t, st.DueAt.IsZero(), "nothing left to load")
		require.Len(t, b.due(t), 5)

		list := decode[api.UpcomingList](t, b.do(t, http.MethodGet, path(j, "/next"), nil))
		require.Len(t, list.Next, 5, "loaded but still ahead: not used up")
		require.Equal(t, j.NextRunAt.Format(time.RFC3339), list.Next[0].UTC)
		require.True(t, j.NextRunAt.Equal(decode[api.Job](t, b.do(t, http.MethodGet, path(j, ""), nil)).NextRunAt.Time))
	})

	t.Run("OneOffListsItsRunAtUntilCancelled", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		runAt := b.now.Add(time.Hour)
		j := b.post(t, oneOff("once", map[string]any{"run_at": runAt.Format(time.RFC3339Nano), "timezone": "Asia/Tokyo"}))
		list := decode[api.UpcomingList](t, b.do(t, http.MethodGet, path(j, "/next"), nil))
		require.Equal(t, []api.Upcoming{{
			At:  runAt.In(mustZone("Asia/Tokyo")).Format(time.RFC3339Nano),
			UTC: runAt.Format(time.RFC3339Nano),
		}}, list.Next)

		require.Equal(t, http.StatusNoContent, b.do(t, http.MethodDelete, path(j, ""), nil).Code)
		rec := b.do(t, http.MethodGet, path(j, "/next"), nil)
		require.Equal(t, http.StatusOK, rec.Code)
		require.JSONEq(t, `{"next": []}`, rec.Body.String())
	})

	t.Run("RejectsBadN", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := b.create(t, "x", b.now.Add(time.Hour))
		for _, n := range []string{"0", "101", "ten", "-1"} {
			e := requireError(t, b.do(t, http.MethodGet, path(j, "/next?n="+n), nil), http.StatusBadRequest, apierr.CodeInvalid)
			require.Equal(t, "n", e.Field, n)
		}
		require.Equal(t, http.StatusOK, b.do(t, http.MethodGet, path(j, "/next?n=100"), nil).Code)
	})

	t.Run("UnknownIs404", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		requireError(t, b.do(t, http.MethodGet, "/api/v1/jobs/"+job.NewID().String()+"/next", nil), http.StatusNotFound, apierr.CodeNotFound)
	})
}

func TestPreviewSchedule(t *testing.T) {
	t.Parallel()

	t.Run("FirstMondayInBerlin", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		rec := b.do(t, http.MethodPost, "/api/v1/schedules/preview", map[string]any{"schedule": map[string]any{
			"rrule":    "FREQ=MONTHLY;BYDAY=1MO;BYHOUR=9;BYMINUTE=0;BYSECOND=0",
			"timezone": "Europe/Berlin",
			"start_at": "2030-01-01T00:00:00Z",
		}})
		require.Equal(t, http.StatusOK, rec.Code, "body: %s", rec.Body.String())
		list := decode[api.UpcomingList](t, rec)

		var want []api.Upcoming
		for m := time.January; m <= time.October; m++ {
			d := time.Date(2030, m, 1, 9, 0, 0, 0, berlin)
			for d.Weekday() != time.Monday {
				d = d.AddDate(0, 0, 1)
			}
			want = append(want, api.Upcoming{At: d.Format(time.RFC3339), UTC: d.UTC().Format(time.RFC3339)})
		}
		require.Equal(t, want, list.Next)
		require.Equal(t, "2030-01-07T09:00:00+01:00", list.Next[0].At)
		require.Equal(t, "2030-06-03T09:00:00+02:00", list.Next[5].At, "summer time")
		require.Equal(t, "2030-06-03T07:00:00Z", list.Next[5].UTC)

		jobs := decode[api.JobList](t, b.do(t, http.MethodGet, "/api/v1/jobs", nil))
		require.Empty(t, jobs.Jobs, "a preview creates no job")
		n, err := b.rdb.ZCard(t.Context(), b.keys.Due()).Result()
		require.NoError(t, err)
		require.Zero(t, n)
	})

	t.Run("HonoursN", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		list := decode[api.UpcomingList](t, b.do(t, http.MethodPost, "/api/v1/schedules/preview", map[string]any{
			"schedule": map[string]any{"cron": "*/10 * * * * *"}, "n": 3,
		}))
		require.Len(t, list.Next, 3)
		first, err := time.Parse(time.RFC3339, list.Next[0].UTC)
		require.NoError(t, err)
		require.False(t, first.Before(b.now))
		require.Less(t, first.Sub(b.now), 10*time.Second)
	})

	t.Run("OneOffTimings", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		list := decode[api.UpcomingList](t, b.do(t, http.MethodPost, "/api/v1/schedules/preview", map[string]any{"delay": "2h30m"}))
		require.Equal(t, []api.Upcoming{{
			At: b.now.Add(150 * time.Minute).Format(time.RFC3339Nano), UTC: b.now.Add(150 * time.Minute).Format(time.RFC3339Nano),
		}}, list.Next)

		list = decode[api.UpcomingList](t, b.do(t, http.MethodPost, "/api/v1/schedules/preview", map[string]any{
			"run_on": "2030-12-24", "timezone": "Europe/Berlin",
		}))
		require.Equal(t, []api.Upcoming{{At: "2030-12-24T00:00:00+01:00", UTC: "2030-12-23T23:00:00Z"}}, list.Next)
	})

	t.Run("RejectsInvalid", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		cases := []struct {
			name  string
			body  any
			field string
		}{
			{"BadCron", map[string]any{"schedule": map[string]any{"cron": "nope"}}, "schedule.cron"},
			{"BadZone", map[string]any{"schedule": map[string]any{"cron": "@daily", "timezone": "Nowhere/City"}}, "schedule.timezone"},
			{"EndBeforeStart", map[string]any{"schedule": map[string]any{"cron": "@daily",
				"start_at": "2030-02-01T00:00:00Z", "end_at": "2030-01-01T00:00:00Z"}}, "schedule.end_at"},
			{"BadRRule", map[string]any{"schedule": map[string]any{"rrule": "FREQ=SOMETIMES"}}, "schedule.rrule"},
			{"ZoneOutsideSchedule", map[string]any{"schedule": map[string]any{"cron": "@daily"}, "timezone": "Europe/Berlin"}, "timezone"},
			{"Nothing", map[string]any{}, "run_at"},
			{"RunAtAndSchedule", map[string]any{"schedule": map[string]any{"cron": "@daily"}, "run_at": "2030-01-01T00:00:00Z"}, "schedule"},
			{"PastRunAt", map[string]any{"run_at": b.now.Add(-time.Minute).Format(time.RFC3339)}, "run_at"},
			{"BadRunAt", map[string]any{"run_at": "soon"}, "run_at"},
			{"BadDelay", map[string]any{"delay": "abc"}, "delay"},
			{"RunOnWithoutTimezone", map[string]any{"run_on": "2030-12-24"}, "timezone"},
			{"BadRunOn", map[string]any{"run_on": "24.12.2030", "timezone": "Europe/Berlin"}, "run_on"},
			{"ZeroN", map[string]any{"delay": "1m", "n": 0}, "n"},
			{"TooManyN", map[string]any{"delay": "1m", "n": 101}, "n"},
			{"JobFieldsAreUnknown", map[string]any{"delay": "1m", "name": "x"}, "name"},
			{"UnknownNestedField", map[string]any{"schedule": map[string]any{"cron": "@daily", "tz": "UTC"}}, "schedule.tz"},
			{"BadJitter", map[string]any{"delay": "1m", "jitter": "later"}, "jitter"},
			{"JitterPastTheGap", map[string]any{"schedule": map[string]any{"cron": "@hourly"}, "jitter": "61m"}, "jitter"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				rec := b.do(t, http.MethodPost, "/api/v1/schedules/preview", tc.body)
				e := requireError(t, rec, http.StatusBadRequest, apierr.CodeInvalid)
				require.Equal(t, tc.field, e.Field, "message: %s", e.Message)
			})
		}
	})

	t.Run("JitterListsNominalTimes", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		list := decode[api.UpcomingList](t, b.do(t, http.MethodPost, "/api/v1/schedules/preview", map[string]any{
			"schedule": map[string]any{"cron": "0 9 * * *", "start_at": "2030-01-01T00:00:00Z"}, "jitter": "60s", "n": 2}))
		require.Equal(t, []api.Upcoming{{At: "2030-01-01T09:00:00Z", UTC: "2030-01-01T09:00:00Z"},
			{At: "2030-01-02T09:00:00Z", UTC: "2030-01-02T09:00:00Z"}}, list.Next)
	})

	t.Run("NeedsToken", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		rec := b.request(t, http.MethodPost, "/api/v1/schedules/preview", map[string]any{"delay": "1m"}, "")
		requireError(t, rec, http.StatusUnauthorized, apierr.CodeUnauthorized)
	})
}

func TestPatchJob(t *testing.T) {
	t.Parallel()

	t.Run("MovesOneOffWithinHorizon", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := b.create(t, "move me", b.now.Add(5*time.Minute))
		old := firstAttempt(j, 0)
		require.True(t, b.inDue(t, old))

		newAt := b.now.Add(3 * time.Second)
		rec := b.do(t, http.MethodPatch, path(j, ""), map[string]any{"run_at": newAt.Format(time.RFC3339Nano)})
		require.Equal(t, http.StatusOK, rec.Code, "body: %s", rec.Body.String())
		got := decode[api.Job](t, rec)
		require.Equal(t, j.ID, got.ID)
		require.True(t, newAt.Equal(got.RunAt.Time))
		require.True(t, newAt.Equal(got.NextRunAt.Time))

		require.False(t, b.inDue(t, old), "old member removed")
		st := b.stored(t, j.ID)
		require.Equal(t, 1, st.Generation)
		require.Equal(t, map[job.Occurrence]time.Time{firstAttempt(got, 1): newAt}, b.due(t), "only the new member")
		require.True(t, st.DueAt.IsZero(), "claimed by the load")

		// A second move removes the member of the first.
		again := decode[api.Job](t, b.do(t, http.MethodPatch, path(j, ""), map[string]any{"delay": "4s"}))
		require.Equal(t, map[job.Occurrence]time.Time{firstAttempt(again, 2): b.now.Add(4 * time.Second)}, b.due(t))
	})

	t.Run("MovesIntoHorizonFromBeyond", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := b.create(t, "later", b.now.Add(time.Hour))
		got := decode[api.Job](t, b.do(t, http.MethodPatch, path(j, ""), map[string]any{"delay": "3s"}))
		require.True(t, b.now.Add(3*time.Second).Equal(got.RunAt.Time))
		require.True(t, b.inDue(t, firstAttempt(got, 1)))
	})

	t.Run("PriorityOnly", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := b.create(t, "prio", b.now.Add(2*time.Second))
		old := firstAttempt(j, 0)
		require.True(t, b.inDue(t, old))

		rec := b.do(t, http.MethodPatch, path(j, ""), map[string]any{"priority": 5})
		require.Equal(t, http.StatusOK, rec.Code, "body: %s", rec.Body.String())
		got := decode[api.Job](t, rec)
		require.Equal(t, 5, got.Priority)
		require.True(t, j.RunAt.Equal(got.RunAt.Time), "run_at unchanged")
		require.Equal(t, map[job.Occurrence]time.Time{firstAttempt(got, 1): j.RunAt.Time}, b.due(t),
			"the member moved to the new priority and generation")
	})

	t.Run("RecurringScheduleChangeReloads", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := b.post(t, recurring("tick", map[string]any{"cron": "*/10 * * * * *"}))
		rec := b.do(t, http.MethodPatch, path(j, ""), map[string]any{"schedule": map[string]any{"cron": "*/30 * * * * *", "timezone": "Europe/Berlin"}})
		require.Equal(t, http.StatusOK, rec.Code, "body: %s", rec.Body.String())
		got := decode[api.Job](t, rec)
		require.Equal(t, "Europe/Berlin", got.Timezone)
		require.Contains(t, string(got.Schedule), `"*/30 * * * * *"`)
		fresh := 0
		for o := range b.due(t) {
			if o.Generation == 1 {
				require.Zero(t, o.ScheduledFor.UnixMilli()%30_000)
				fresh++
			}
		}
		require.Equal(t, int(horizon/(30*time.Second)), fresh)
	})

	t.Run("NameOnlyKeepsGeneration", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := b.create(t, "old name", b.now.Add(2*time.Second))
		got := decode[api.Job](t, b.do(t, http.MethodPatch, path(j, ""), map[string]any{"name": "new name"}))
		require.Equal(t, "new name", got.Name)
		require.Zero(t, b.stored(t, j.ID).Generation)
		require.True(t, b.inDue(t, firstAttempt(j, 0)), "member untouched")
	})

	t.Run("StartedOneOffCannotMove", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := b.create(t, "busy", b.now.Add(2*time.Second))
		b.running(t, firstAttempt(j, 0), j.RunAt.Time, j.RunAt.Time)
		requireError(t, b.do(t, http.MethodPatch, path(j, ""), map[string]any{"delay": "1h"}), http.StatusConflict, apierr.CodeConflict)
		require.True(t, j.RunAt.Equal(b.stored(t, j.ID).RunAt))
		require.Zero(t, b.stored(t, j.ID).Generation)
	})

	t.Run("RejectsInvalid", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := b.create(t, "x", b.now.Add(time.Hour))
		cases := []struct {
			name  string
			body  any
			field string
		}{
			{"UnknownField", map[string]any{"nmae": "typo"}, "nmae"},
			{"BadDelay", map[string]any{"delay": "abc"}, "delay"},
			{"BadCron", map[string]any{"schedule": map[string]any{"cron": "* * *"}}, "schedule.cron"},
			{"BlankName", map[string]any{"name": " "}, "name"},
			{"PastRunAt", map[string]any{"run_at": b.now.Add(-time.Hour).Format(time.RFC3339)}, "run_at"},
			{"NotAnObject", `[]`, ""},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				e := requireError(t, b.do(t, http.MethodPatch, path(j, ""), tc.body), http.StatusBadRequest, apierr.CodeInvalid)
				require.Equal(t, tc.field, e.Field, "message: %s", e.Message)
			})
		}
		require.Zero(t, b.stored(t, j.ID).Generation, "nothing changed")
	})

	t.Run("UnknownIs404", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		requireError(t, b.do(t, http.MethodPatch, "/api/v1/jobs/"+job.NewID().String(), map[string]any{"name": "x"}),
			http.StatusNotFound, apierr.CodeNotFound)
	})
}

func TestPauseResume(t *testing.T) {
	t.Parallel()

	t.Run("OneOff", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := b.create(t, "pause me", b.now.Add(2*time.Second))
		require.True(t, b.inDue(t, firstAttempt(j, 0)))

		rec := b.do(t, http.MethodPost, path(j, "/pause"), nil)
		require.Equal(t, http.StatusOK, rec.Code, "body: %s", rec.Body.String())
		require.Equal(t, job.StatusPaused, decode[api.Job](t, rec).Status)
		require.Equal(t, 1, b.stored(t, j.ID).Generation)
		require.Empty(t, b.due(t), "old member removed")

		requireError(t, b.do(t, http.MethodPost, path(j, "/pause"), nil), http.StatusConflict, apierr.CodeConflict)

		rec = b.do(t, http.MethodPost, path(j, "/resume"), nil)
		require.Equal(t, http.StatusOK, rec.Code, "body: %s", rec.Body.String())
		require.Equal(t, job.StatusScheduled, decode[api.Job](t, rec).Status)
		require.Equal(t, 2, b.stored(t, j.ID).Generation)
		require.Equal(t, map[job.Occurrence]time.Time{firstAttempt(j, 2): j.RunAt.Time}, b.due(t), "reloaded under the new generation")

		requireError(t, b.do(t, http.MethodPost, path(j, "/resume"), nil), http.StatusConflict, apierr.CodeConflict)
	})

	t.Run("Recurring", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := b.post(t, recurring("tick", map[string]any{"cron": "*/10 * * * * *"}))
		require.Equal(t, http.StatusOK, b.do(t, http.MethodPost, path(j, "/pause"), nil).Code)
		paused := decode[api.Job](t, b.do(t, http.MethodGet, path(j, ""), nil))
		require.Equal(t, job.StatusPaused, paused.Status)
		require.True(t, paused.NextRunAt.IsZero(), "a paused job has no next run")
		require.Empty(t, b.due(t), "its loaded occurrences left the due set")

		rec := b.do(t, http.MethodPost, path(j, "/resume"), nil)
		require.Equal(t, http.StatusOK, rec.Code, "body: %s", rec.Body.String())
		st := b.stored(t, j.ID)
		require.Equal(t, 2, st.Generation)
		fresh := 0
		for o := range b.due(t) {
			if o.Generation == st.Generation {
				fresh++
			}
		}
		require.Equal(t, int(horizon/(10*time.Second)), fresh, "the horizon is loaded again under the new generation")
	})

	t.Run("UnknownIs404", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		requireError(t, b.do(t, http.MethodPost, "/api/v1/jobs/"+job.NewID().String()+"/pause", nil), http.StatusNotFound, apierr.CodeNotFound)
		requireError(t, b.do(t, http.MethodPost, "/api/v1/jobs/"+job.NewID().String()+"/resume", nil), http.StatusNotFound, apierr.CodeNotFound)
	})
}

func TestTriggerJob(t *testing.T) {
	t.Parallel()

	t.Run("EnqueuesOccurrenceNow", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := b.create(t, "kick", b.now.Add(time.Hour))
		rec := b.do(t, http.MethodPost, path(j, "/trigger"), nil)
		require.Equal(t, http.StatusAccepted, rec.Code, "body: %s", rec.Body.String())
		key := j.ID.String() + ":" + strconv.FormatInt(b.now.UnixMilli(), 10)
		require.JSONEq(t, `{"job_id": "`+j.ID.String()+`", "scheduled_for": "`+b.now.Format(api.TimeFormat)+`", "idempotency_key": "`+key+`"}`,
			rec.Body.String())

		occ := job.Occurrence{JobID: j.ID, ScheduledFor: b.now, Attempt: 1, Priority: j.Priority, Generation: 0}.Route(j.Owner, j.Payload)
		require.Equal(t, key, occ.Key())
		require.Equal(t, map[job.Occurrence]time.Time{occ: b.now}, b.due(t))
	})

	t.Run("PausedIs409", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := b.create(t, "asleep", b.now.Add(time.Hour))
		require.Equal(t, http.StatusOK, b.do(t, http.MethodPost, path(j, "/pause"), nil).Code)
		requireError(t, b.do(t, http.MethodPost, path(j, "/trigger"), nil), http.StatusConflict, apierr.CodeConflict)
		require.Empty(t, b.due(t))
	})

	t.Run("UnknownIs404", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		requireError(t, b.do(t, http.MethodPost, "/api/v1/jobs/"+job.NewID().String()+"/trigger", nil), http.StatusNotFound, apierr.CodeNotFound)
	})
}

func TestCancelRecurring(t *testing.T) {
	t.Parallel()

	t.Run("AfterARunIs204", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := b.post(t, recurring("tick", map[string]any{"cron": "*/10 * * * * *"}))
		first := job.Occurrence{JobID: j.ID, ScheduledFor: j.NextRunAt.Time, Attempt: 1}.Route(j.Owner, j.Payload)
		b.finish(t, store.Result{Occurrence: first, Status: job.RunCompleted, DueAt: first.ScheduledFor, StartedAt: first.ScheduledFor,
			FinishedAt: first.ScheduledFor.Add(time.Millisecond)})

		require.Equal(t, http.StatusNoContent, b.do(t, http.MethodDelete, path(j, ""), nil).Code)
		got := decode[api.Job](t, b.do(t, http.MethodGet, path(j, ""), nil))
		require.Equal(t, job.StatusCancelled, got.Status)
		require.True(t, got.NextRunAt.IsZero())
		rec := b.do(t, http.MethodGet, path(j, "/next"), nil)
		require.JSONEq(t, `{"next": []}`, rec.Body.String())
	})

	t.Run("WhileAnAttemptRunsIs204AndFences", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := b.post(t, recurring("tick", map[string]any{"cron": "*/10 * * * * *"}))
		gen := b.stored(t, j.ID).Generation
		first := job.Occurrence{JobID: j.ID, ScheduledFor: j.NextRunAt.Time, Attempt: 1, Generation: gen}.Route(j.Owner, j.Payload)
		b.running(t, first, first.ScheduledFor, first.ScheduledFor)

		require.Equal(t, http.StatusNoContent, b.do(t, http.MethodDelete, path(j, ""), nil).Code)
		got := decode[api.Job](t, b.do(t, http.MethodGet, path(j, ""), nil))
		require.Equal(t, job.StatusCancelled, got.Status)
		require.True(t, got.NextRunAt.IsZero())
		require.NotNil(t, got.LastRun)
		require.Equal(t, job.RunRunning, got.LastRun.Status, "the attempt running is left to finish")
		require.Greater(t, b.stored(t, j.ID).Generation, gen)

		// An entry planned before the cancel, read by a worker under the old
		// generation, is fenced: it does not start.
		next := first
		next.ScheduledFor = first.ScheduledFor.Add(10 * time.Second)
		require.Equal(t, queue.StartFenced, b.start(t, lease(next, next.ScheduledFor, next.ScheduledFor)))
	})
}

func TestSigningSecret(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rec := b.do(t, http.MethodGet, "/api/v1/signing-secret", nil)
	require.Equal(t, http.StatusOK, rec.Code)
	var got map[string]string
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &got))
	require.Len(t, got["secret"], 64, "32 random bytes in hex")
	require.Equal(t, "no-store", rec.Header().Get("Cache-Control"))
	again := b.do(t, http.MethodGet, "/api/v1/signing-secret", nil)
	require.Equal(t, rec.Body.String(), again.Body.String(), "stable for its owner")
	require.Equal(t, http.StatusUnauthorized, b.request(t, http.MethodGet, "/api/v1/signing-secret", nil, "").Code)
}
