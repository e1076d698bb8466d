package main

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/store"
)

// TestLive: a recurring job that completed when its final occurrence ended
// still runs an earlier occurrence's pending attempt (a retry after the
// brokers came back lost one before); nothing else that is not scheduled
// runs.
func TestLive(t *testing.T) {
	last := time.Date(2026, 11, 26, 4, 9, 44, 0, time.UTC)
	rec := json.RawMessage(`{"cron":"* * * * * *"}`)
	occ := func(at time.Time, attempt int) job.Occurrence {
		return job.Occurrence{JobID: job.NewID(), ScheduledFor: at, Attempt: attempt}
	}
	for _, c := range []struct {
		name string
		j    *store.AttemptJob
		occ  job.Occurrence
		want bool
	}{
		{"Gone", nil, occ(last, 1), false},
		{"Scheduled", &store.AttemptJob{Status: job.StatusScheduled}, occ(last, 1), true},
		{"CompletedRecurringRetryOfEarlier", &store.AttemptJob{Status: job.StatusCompleted, Schedule: rec, LastAt: last}, occ(last.Add(-3*time.Second), 2), true},
		{"CompletedRecurringFinal", &store.AttemptJob{Status: job.StatusCompleted, Schedule: rec, LastAt: last}, occ(last, 2), true},
		{"CompletedRecurringPastItsEnd", &store.AttemptJob{Status: job.StatusCompleted, Schedule: rec, LastAt: last}, occ(last.Add(time.Second), 1), false},
		{"CompletedOneOff", &store.AttemptJob{Status: job.StatusCompleted}, occ(last, 2), false},
		{"PausedRecurring", &store.AttemptJob{Status: job.StatusPaused, Schedule: rec, LastAt: last}, occ(last.Add(-time.Second), 2), false},
		{"CancelledRecurring", &store.AttemptJob{Status: job.StatusCancelled, Schedule: rec, LastAt: last}, occ(last.Add(-time.Second), 2), false},
	} {
		t.Run(c.name, func(t *testing.T) { require.Equal(t, c.want, live(c.j, c.occ)) })
	}
}
