package jobspec_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/jobspec"
)

// A jittered job is due at its nominal time plus its offset, an offset in
// [0, jitter) kept while the jitter stays the same.
func TestJitter(t *testing.T) {
	t.Run("OneOff", func(t *testing.T) {
		s := validSpec()
		s["jitter"] = "10m"
		j, err := s.Build(owner, now, jobspec.DefaultLimits)
		require.NoError(t, err)
		require.Equal(t, 10*time.Minute, j.Jitter)
		require.GreaterOrEqual(t, j.JitterOffset, time.Duration(0))
		require.Less(t, j.JitterOffset, 10*time.Minute)
		require.Equal(t, now.Add(time.Hour), j.NominalRunAt())
		require.Equal(t, now.Add(time.Hour+j.JitterOffset), j.RunAt, "stored: the time it is due")
		require.Equal(t, j.RunAt, j.DueAt)
		v := view(t, j)
		require.Equal(t, "10m0s", v["jitter"])
		require.Equal(t, "2030-01-15T15:00:00.000Z", v["run_at"], "shown: the time given")

		// A new jitter moves it from the same nominal time.
		gen := j.Generation
		require.NoError(t, patch(j, spec{"jitter": "1s"}))
		require.Less(t, j.JitterOffset, time.Second)
		require.Equal(t, now.Add(time.Hour+j.JitterOffset), j.RunAt)
		require.Greater(t, j.Generation, gen)
		// A new run_at keeps the offset.
		off := j.JitterOffset
		require.NoError(t, patch(j, spec{"run_at": now.Add(2 * time.Hour)}))
		require.Equal(t, off, j.JitterOffset)
		require.Equal(t, now.Add(2*time.Hour+off), j.RunAt)
		require.NoError(t, patch(j, spec{"jitter": ""}))
		require.Equal(t, now.Add(2*time.Hour), j.RunAt)
	})
	t.Run("Recurring", func(t *testing.T) {
		s := validSpec()
		delete(s, "run_at")
		s["schedule"] = map[string]any{"cron": "0 * * * *"}
		s["jitter"] = "30m"
		j, err := s.Build(owner, now, jobspec.DefaultLimits)
		require.NoError(t, err)
		// now is 14:00:00 sharp: that occurrence, moved by the offset, is
		// still to come.
		require.Equal(t, now.Add(j.JitterOffset), j.DueAt)
		require.NotNil(t, j.Load)
		require.Equal(t, uint64(1)<<(j.JitterOffset/time.Second%60), j.Load.Seconds)

		// The same jitter again keeps the offset and the plan.
		before, due, gen := j.JitterOffset, j.DueAt, j.Generation
		require.NoError(t, patch(j, spec{"jitter": "30m"}))
		require.Equal(t, before, j.JitterOffset)
		require.Equal(t, due, j.DueAt)
		require.Equal(t, gen, j.Generation)

		// A new schedule keeps the offset and moves by it.
		require.NoError(t, patch(j, spec{"schedule": map[string]any{"cron": "30 * * * *"}}))
		require.Equal(t, before, j.JitterOffset)
		require.Equal(t, now.Add(30*time.Minute+j.JitterOffset), j.DueAt)

		// No jitter: the nominal times, on a new generation.
		gen = j.Generation
		require.NoError(t, patch(j, spec{"jitter": ""}))
		require.Zero(t, j.Jitter)
		require.Zero(t, j.JitterOffset)
		require.Equal(t, now.Add(30*time.Minute), j.DueAt)
		require.Greater(t, j.Generation, gen)
		require.NotContains(t, view(t, j), "jitter")
	})
	t.Run("Refused", func(t *testing.T) {
		for _, c := range []struct {
			jitter   any
			schedule map[string]any
			msg      string
		}{
			{"soon", nil, "is not a duration"},
			{"0s", nil, "between 1ms and 24h"},
			{"25h", nil, "between 1ms and 24h"},
			{60, nil, ""},
			{"61s", map[string]any{"cron": "* * * * *"}, "at most 1m0s"},
			{"2h", map[string]any{"cron": "0 9,10 * * *"}, "at most 1h0m0s"},
		} {
			s := validSpec()
			s["jitter"] = c.jitter
			if c.schedule != nil {
				delete(s, "run_at")
				s["schedule"] = c.schedule
			}
			_, err := s.Build(owner, now, jobspec.DefaultLimits)
			var fe *job.FieldError
			require.True(t, errors.As(err, &fe), "jitter %v: %v", c.jitter, err)
			require.Equal(t, "jitter", fe.Field)
			require.Contains(t, fe.Message, c.msg)
		}
	})
}

// A new jitter on a job's own schedule moves its plan in nominal times:
// the occurrences already due keep having run once, those handed out but
// not due yet are planned again at their new times, count is given back
// for them, and the load follows the new offset. A schedule and a jitter
// changed together are checked against each other as they end up.
func TestJitterEdits(t *testing.T) {
	hourly := func(jitter string) *job.Job {
		s := validSpec()
		delete(s, "run_at")
		s["schedule"] = map[string]any{"cron": "0 * * * *", "count": 3}
		s["jitter"] = jitter
		j, err := s.Build(owner, now, jobspec.DefaultLimits)
		require.NoError(t, err)
		return j
	}
	at := func(d time.Duration) time.Time { return now.Add(d) }
	edit := func(j *job.Job, when time.Time, p spec) error {
		r, err := jobspec.NewRequest(jobspec.Patch, p)
		require.NoError(t, err)
		c, err := r.Prepare(nil, j, when, jobspec.DefaultLimits)
		if err != nil {
			return err
		}
		return c.Apply(j, true)
	}

	t.Run("LargerOffsetRunsNothingTwice", func(t *testing.T) {
		j := hourly("10m")
		off := j.JitterOffset
		// The loader handed out 14:00 (due 14:00+off) and moved on.
		j.DueAt, j.Occurrences = at(time.Hour+off), 1
		// Edited after 14:00+off: that occurrence ran.
		when := at(off + time.Minute)
		require.NoError(t, edit(j, when, spec{"jitter": "59m"}))
		require.Equal(t, at(time.Hour+j.JitterOffset), j.DueAt, "15:00 next, at its new offset")
		require.Equal(t, 1, j.Occurrences)
		require.Equal(t, uint64(1)<<(j.JitterOffset/time.Second%60), j.Load.Seconds)
	})
	t.Run("HandedOutButNotDuePlannedAgain", func(t *testing.T) {
		j := hourly("30m")
		off := j.JitterOffset
		j.DueAt, j.Occurrences = at(time.Hour+off), 1
		// Edited before 14:00+off: 14:00 is planned again, its count given back.
		when := at(off / 2)
		require.NoError(t, edit(j, when, spec{"jitter": ""}))
		require.Zero(t, j.JitterOffset)
		// 14:00 with no offset is due: it runs at once, late, not never.
		require.Equal(t, at(0), j.DueAt)
		require.Equal(t, 0, j.Occurrences)
		require.Equal(t, uint64(1), j.Load.Seconds)
	})
	t.Run("ScheduleAndJitterTogether", func(t *testing.T) {
		j := hourly("30m")
		require.NoError(t, edit(j, now, spec{"schedule": map[string]any{"cron": "* * * * *"}, "jitter": "30s"}))
		require.Less(t, j.JitterOffset, 30*time.Second)
		require.NoError(t, edit(j, now, spec{"schedule": map[string]any{"cron": "0 * * * *"}, "jitter": ""}))
		require.Equal(t, now, j.DueAt)
		err := edit(j, now, spec{"schedule": map[string]any{"cron": "* * * * *"}, "jitter": "2m"})
		var fe *job.FieldError
		require.True(t, errors.As(err, &fe), "%v", err)
		require.Equal(t, "jitter", fe.Field)
	})
}

// view is j as the API shows it, decoded.
func view(t *testing.T, j *job.Job) map[string]any {
	raw, err := json.Marshal(jobspec.NewView(j, jobspec.ViewContext{}))
	require.NoError(t, err)
	var out map[string]any
	require.NoError(t, json.Unmarshal(raw, &out))
	return out
}

// Offsets handed out one after another spread evenly: a thousand jobs
// given a 60 s jitter together start at most a few a second more than the
// mean, which independent random offsets do not promise.
func TestJitterOffsetsSpread(t *testing.T) {
	perSecond := make([]int, 60)
	for range 1000 {
		off := job.NewJitterOffset(time.Minute)
		require.Less(t, off, time.Minute)
		perSecond[off/time.Second]++
	}
	for s, n := range perSecond {
		require.LessOrEqual(t, n, 18, "second %d", s)
		require.GreaterOrEqual(t, n, 15, "second %d", s)
	}
}
