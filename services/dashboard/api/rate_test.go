package api_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/services/dashboard/api"
	"github.com/tockhq/tock/services/dashboard/apierr"
)

// every is a recurring ping job on a cron rule, named after it.
func every(cron string) map[string]any { return cronSpec("every "+cron, cron) }

// cronBatch is the body of a bulk create of n jobs on the rule.
func cronBatch(n int, cron string) map[string]any {
	jobs := make([]map[string]any, n)
	for i := range jobs {
		jobs[i] = every(cron)
	}
	return map[string]any{"jobs": jobs}
}

// TestOccurrenceLimits holds a user to occurrences_per_minute in their busiest
// minute and occurrences_per_second in their busiest second (defaults 600 and
// 100): each recurring job counts in the UTC hours, minutes and seconds it
// fires in, and a create, an edit or a resume that would pass either is a 400
// on the schedule that names the limit, the busiest minute or second, and
// what to do.
func TestOccurrenceLimits(t *testing.T) {
	t.Parallel()
	b := setup(t)

	t.Run("RefusesABurstWithinOneMinute", func(t *testing.T) {
		t.Parallel()
		u := b.user(t, "burst-minute", "user", nil)
		// The defect: 600 jobs on every second of minute 51, 36,000
		// occurrences in that minute, passed an hourly average of 600 a
		// minute.
		rec := b.as(t, u, http.MethodPost, "/api/v1/jobs:batch", cronBatch(600, "* 51 * * * *"))
		e := requireError(t, rec, http.StatusBadRequest, apierr.CodeInvalid)
		require.Equal(t, "schedule", e.Field)
		require.Contains(t, e.Message, "with these 600 jobs, the owner's scheduled recurring jobs would fire 36000 times in their busiest minute (00:51 UTC), past the limit of 600 (occurrences_per_minute)")

		// Ten fill minute 51 (10 × 60 = 600, the limit itself); the
		// eleventh passes it.
		require.Equal(t, http.StatusCreated, b.as(t, u, http.MethodPost, "/api/v1/jobs:batch", cronBatch(10, "* 51 * * * *")).Code)
		rec = b.as(t, u, http.MethodPost, "/api/v1/jobs", every("* 51 * * * *"))
		e = requireError(t, rec, http.StatusBadRequest, apierr.CodeInvalid)
		require.Equal(t, "schedule", e.Field)
		require.Equal(t, "with this job, the owner's scheduled recurring jobs would fire 660 times in their busiest minute (00:51 UTC), past the limit of 600 (occurrences_per_minute): spread the jobs over more minutes, run it less often, or ask an administrator to raise the limit", e.Message)

		// The minute next to it is free.
		require.Equal(t, http.StatusCreated, b.as(t, u, http.MethodPost, "/api/v1/jobs:batch", cronBatch(10, "* 52 * * * *")).Code)
	})

	t.Run("RefusesABurstWithinOneSecond", func(t *testing.T) {
		t.Parallel()
		u := b.user(t, "burst-second", "user", nil)
		require.Equal(t, http.StatusCreated, b.as(t, u, http.MethodPost, "/api/v1/jobs:batch", cronBatch(100, "0 21 * * * *")).Code)
		rec := b.as(t, u, http.MethodPost, "/api/v1/jobs", every("0 21 * * * *"))
		e := requireError(t, rec, http.StatusBadRequest, apierr.CodeInvalid)
		require.Equal(t, "schedule", e.Field)
		require.Contains(t, e.Message, "would fire 101 times in their busiest second (00:21:00 UTC), past the limit of 100 (occurrences_per_second): spread the jobs over more seconds")

		rec = b.as(t, u, http.MethodPost, "/api/v1/jobs:batch", cronBatch(200, "0 22 * * * *"))
		require.Contains(t, requireError(t, rec, http.StatusBadRequest, apierr.CodeInvalid).Message, "200 times in their busiest second (00:22:00 UTC)")

		// Another second of the same minute is free: 200 in minute 21.
		require.Equal(t, http.StatusCreated, b.as(t, u, http.MethodPost, "/api/v1/jobs:batch", cronBatch(100, "30 21 * * * *")).Code)
	})

	t.Run("AcceptsJobsSpreadOverMinutesAndHours", func(t *testing.T) {
		t.Parallel()
		u := b.user(t, "spread", "user", map[string]any{"job_burst": 2000})
		// A thousand daily jobs, each at a minute of its own.
		jobs := make([]map[string]any, 1000)
		for i := range jobs {
			jobs[i] = every(fmt.Sprintf("0 %d %d * * *", i%60, i/60))
		}
		rec := b.as(t, u, http.MethodPost, "/api/v1/jobs:batch", map[string]any{"jobs": jobs})
		require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
		// Ten every-second jobs alone would fire 600 times in every
		// minute, the limit itself; beside a daily job in a minute, nine
		// fit (541) and the tenth makes 601.
		require.Equal(t, http.StatusCreated, b.as(t, u, http.MethodPost, "/api/v1/jobs:batch", cronBatch(9, "* * * * * *")).Code)
		rec = b.as(t, u, http.MethodPost, "/api/v1/jobs", every("* * * * * *"))
		require.Contains(t, requireError(t, rec, http.StatusBadRequest, apierr.CodeInvalid).Message, "601 times in their busiest minute (00:00 UTC)")
	})

	t.Run("ChecksEditsAndResumes", func(t *testing.T) {
		t.Parallel()
		u := b.user(t, "frequent", "user", map[string]any{"occurrences_per_minute": 121})
		first := decode[api.Job](t, b.as(t, u, http.MethodPost, "/api/v1/jobs", every("* * * * * *")))
		second := decode[api.Job](t, b.as(t, u, http.MethodPost, "/api/v1/jobs", every("* * * * * *")))

		rec := b.as(t, u, http.MethodPost, "/api/v1/jobs", every("*/2 * * * * *"))
		require.Contains(t, requireError(t, rec, http.StatusBadRequest, apierr.CodeInvalid).Message, "150 times in their busiest minute")

		// A daily job still fits: 121 in the minute of 09:00.
		daily := decode[api.Job](t, b.as(t, u, http.MethodPost, "/api/v1/jobs", every("0 0 9 * * *")))

		// Pausing one makes room; resuming it then is refused, since the
		// room was taken.
		require.Equal(t, http.StatusOK, b.as(t, u, http.MethodPost, "/api/v1/jobs/"+first.ID.String()+"/pause", nil).Code)
		third := decode[api.Job](t, b.as(t, u, http.MethodPost, "/api/v1/jobs", every("* * * * * *")))
		rec = b.as(t, u, http.MethodPost, "/api/v1/jobs/"+first.ID.String()+"/resume", nil)
		e := requireError(t, rec, http.StatusBadRequest, apierr.CodeInvalid)
		require.Equal(t, "schedule", e.Field)
		require.Contains(t, e.Message, "181 times in their busiest minute (09:00 UTC), past the limit of 121 (occurrences_per_minute)")

		// So is a bulk resume, job by job, with the same words.
		rec = b.as(t, u, http.MethodPost, "/api/v1/jobs:bulk", map[string]any{"action": "resume", "ids": []string{first.ID.String()}})
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		res := decode[api.BulkResult](t, rec)
		require.Equal(t, 0, res.Changed)
		require.Len(t, res.Skipped, 1)
		require.Contains(t, res.Skipped[0].Reason, "181 times in their busiest minute (09:00 UTC), past the limit of 121 (occurrences_per_minute)")

		// An edit within the job's own occurrences is never refused; one
		// that makes it fire where it did not counts with the others.
		patch := func(j api.Job, body map[string]any) int {
			return b.as(t, u, http.MethodPatch, "/api/v1/jobs/"+j.ID.String(), body).Code
		}
		require.Equal(t, http.StatusOK, patch(third, map[string]any{"schedule": map[string]any{"cron": "*/2 * * * * *"}}))
		require.Equal(t, http.StatusOK, patch(third, map[string]any{"schedule": map[string]any{"cron": "* * * * * *"}}), "back to 121 at 09:00")
		require.Equal(t, http.StatusOK, patch(second, map[string]any{"name": "renamed"}))
		rec = b.as(t, u, http.MethodPatch, "/api/v1/jobs/"+daily.ID.String(), map[string]any{"schedule": map[string]any{"cron": "* 0 9 * * *"}})
		require.Contains(t, requireError(t, rec, http.StatusBadRequest, apierr.CodeInvalid).Message, "180 times in their busiest minute (09:00 UTC)")

		// PUT by key replaces a definition through the same check.
		keyed := every("0 0 10 * * *")
		require.Equal(t, http.StatusCreated, b.as(t, u, http.MethodPut, "/api/v1/jobs/by-key/nightly", keyed).Code)
		keyed["schedule"] = map[string]any{"cron": "* * * * * *"}
		rec = b.as(t, u, http.MethodPut, "/api/v1/jobs/by-key/nightly", keyed)
		require.Contains(t, requireError(t, rec, http.StatusBadRequest, apierr.CodeInvalid).Message, "181 times in their busiest minute")
	})

	t.Run("ShowsAndTakesTheLimits", func(t *testing.T) {
		t.Parallel()
		u := b.user(t, "limited", "user", map[string]any{"occurrences_per_minute": 121, "occurrences_per_second": 2})
		me := decode[api.User](t, b.as(t, u, http.MethodGet, "/api/v1/me", nil))
		require.Equal(t, 121, me.EffectiveLimits.OccurrencesPerMinute)
		require.Equal(t, 2, me.EffectiveLimits.OccurrencesPerSecond)
		require.Equal(t, 2, *me.Limits.OccurrencesPerSecond)
		plain := decode[api.User](t, b.as(t, b.user(t, "plain", "user", nil), http.MethodGet, "/api/v1/me", nil))
		require.Equal(t, 600, plain.EffectiveLimits.OccurrencesPerMinute)
		require.Equal(t, 100, plain.EffectiveLimits.OccurrencesPerSecond)

		require.Equal(t, http.StatusCreated, b.as(t, u, http.MethodPost, "/api/v1/jobs:batch", cronBatch(2, "0 0 12 * * *")).Code)
		rec := b.as(t, u, http.MethodPost, "/api/v1/jobs", every("0 0 12 * * *"))
		require.Contains(t, requireError(t, rec, http.StatusBadRequest, apierr.CodeInvalid).Message, "3 times in their busiest second (12:00:00 UTC), past the limit of 2 (occurrences_per_second)")

		rec = b.do(t, http.MethodPatch, "/api/v1/users/"+me.ID.String(), map[string]any{"limits": map[string]any{"occurrences_per_second": 0}})
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		require.Equal(t, 0, decode[api.User](t, rec).EffectiveLimits.OccurrencesPerSecond, "0 is no cap")
		require.Equal(t, http.StatusCreated, b.as(t, u, http.MethodPost, "/api/v1/jobs", every("0 0 12 * * *")).Code)

		rec = b.do(t, http.MethodPatch, "/api/v1/users/"+me.ID.String(), map[string]any{"limits": map[string]any{"occurrences_per_second": -1}})
		require.Equal(t, "limits.occurrences_per_second", requireError(t, rec, http.StatusBadRequest, apierr.CodeInvalid).Field)
	})
}
