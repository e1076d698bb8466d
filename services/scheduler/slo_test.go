package main

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/queue"
	"github.com/tockhq/tock/pkg/store"
)

// everySecond is a stored every-second schedule.
var everySecond = json.RawMessage(`{"cron": "* * * * * *", "timezone": "UTC", "start_at": "2026-01-01T00:00:00Z"}`)

func TestJudgeSLO(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	notify := &job.Notify{On: []job.NotifyEvent{job.NotifySLOBreach, job.NotifySLORecovered}, Webhook: &job.NotifyWebhook{URL: "https://example.com/"}}
	base := func(slo job.SLO) store.SLOJob {
		return store.SLOJob{ID: uuid.New(), Owner: uuid.New(), Name: "j", Type: "webhook", Status: job.StatusScheduled,
			Schedule: everySecond, SLO: slo, Notify: notify, CreatedAt: now.Add(-time.Hour), WatchingSince: now.Add(-time.Minute)}
	}

	t.Run("SilentBreachesOnceThenRecovers", func(t *testing.T) {
		j := base(job.SLO{SilentAfter: 10 * time.Second})
		j.SeenTo, j.LastOK = now.Add(-time.Second), now.Add(-11*time.Second)
		c, _, _ := judgeSLO(&j, nil, time.Time{}, now)
		require.NotNil(t, c)
		require.True(t, c.SilentSince.Equal(now))
		require.Len(t, c.Alerts, 1)
		require.Equal(t, job.NotifySLOBreach, c.Alerts[0].Event)

		j.SilentSince = now
		c, _, _ = judgeSLO(&j, nil, time.Time{}, now.Add(time.Second))
		require.Nil(t, c, "once per breach")

		j.LastOK = now.Add(2 * time.Second)
		c, _, _ = judgeSLO(&j, nil, time.Time{}, now.Add(3*time.Second))
		require.NotNil(t, c)
		require.True(t, c.SilentSince.IsZero())
		require.Equal(t, job.NotifySLORecovered, c.Alerts[0].Event)
	})

	t.Run("SilenceCountsFromTheFirstCheck", func(t *testing.T) {
		j := base(job.SLO{SilentAfter: 10 * time.Second})
		j.WatchingSince = time.Time{}
		c, _, _ := judgeSLO(&j, nil, time.Time{}, now)
		require.Nil(t, c)
	})

	t.Run("OverdueBreachesOnTheSecondLook", func(t *testing.T) {
		j := base(job.SLO{LateAfter: 500 * time.Millisecond})
		j.SeenTo = now.Add(-2 * time.Second) // the occurrence due a second ago has not started
		c, _, suspect := judgeSLO(&j, nil, time.Time{}, now)
		require.Nil(t, c, "not on the first look")
		require.True(t, suspect.Equal(now.Add(-time.Second)))
		c, _, _ = judgeSLO(&j, nil, suspect, now.Add(500*time.Millisecond))
		require.NotNil(t, c)
		require.False(t, c.LateSince.IsZero())
		require.Equal(t, 1500*time.Millisecond, c.LateBy)
	})

	t.Run("ARunningAttemptIsStarted", func(t *testing.T) {
		j := base(job.SLO{LateAfter: 500 * time.Millisecond})
		j.SeenTo = now.Add(-2 * time.Second)
		due := now.Add(-time.Second)
		running := []queue.Lease{{Occurrence: job.Occurrence{JobID: j.ID, ScheduledFor: due, Attempt: 1}, DueAt: due, StartedAt: due.Add(10 * time.Millisecond)}}
		c, seenTo, suspect := judgeSLO(&j, running, due, now)
		require.Nil(t, c)
		require.True(t, suspect.IsZero())
		require.True(t, seenTo.Equal(due))
	})

	t.Run("LateStartBreachesAndOnTimeRecovers", func(t *testing.T) {
		j := base(job.SLO{LateAfter: 500 * time.Millisecond})
		j.SeenTo = now.Add(-3 * time.Second)
		j.NewestRun, j.NewestStarted, j.NewestLate, j.WorstLate = now.Add(-time.Second), now.Add(-time.Second), 800*time.Millisecond, 800*time.Millisecond
		c, _, _ := judgeSLO(&j, nil, time.Time{}, now)
		require.NotNil(t, c)
		require.Equal(t, 800*time.Millisecond, c.LateBy)

		j.LateSince, j.LateBy, j.SeenTo = now, c.LateBy, now.Add(-time.Second)
		j.NewestRun, j.NewestStarted, j.NewestLate, j.WorstLate = now, now, 20*time.Millisecond, 20*time.Millisecond
		c, _, _ = judgeSLO(&j, nil, time.Time{}, now.Add(100*time.Millisecond))
		require.NotNil(t, c)
		require.True(t, c.LateSince.IsZero())
		require.Equal(t, job.NotifySLORecovered, c.Alerts[0].Event)
	})

	t.Run("APlanChangeJudgesFromNow", func(t *testing.T) {
		// Paused for 20 minutes, then resumed: a new generation. The
		// occurrences the pause dropped are not waited for.
		j := base(job.SLO{LateAfter: 5 * time.Second})
		j.SeenTo, j.Generation, j.StateGeneration = now.Add(-20*time.Minute), 3, 2
		c, seenTo, suspect := judgeSLO(&j, nil, time.Time{}, now)
		require.Nil(t, c)
		require.True(t, suspect.IsZero())
		require.True(t, seenTo.Equal(now))
	})

	t.Run("AFirstCheckHoldsNoHistoryAgainstIt", func(t *testing.T) {
		j := base(job.SLO{LateAfter: 500 * time.Millisecond})
		j.WatchingSince = time.Time{}
		j.NewestRun, j.NewestStarted, j.NewestLate, j.WorstLate = now.Add(-time.Minute), now.Add(-time.Minute), 3*time.Second, 3*time.Second
		c, _, _ := judgeSLO(&j, nil, time.Time{}, now)
		require.Nil(t, c)
	})

	t.Run("ALateOneOffThatEndedIsStillReported", func(t *testing.T) {
		j := base(job.SLO{LateAfter: 500 * time.Millisecond})
		j.Schedule, j.Status = nil, job.StatusCompleted
		j.NewestRun, j.NewestStarted, j.NewestLate, j.WorstLate = now.Add(-time.Second), now.Add(-time.Second), 2*time.Second, 2*time.Second
		c, _, _ := judgeSLO(&j, nil, time.Time{}, now)
		require.NotNil(t, c)
		require.Equal(t, job.NotifySLOBreach, c.Alerts[0].Event)
		j.LateSince = now
		c, _, _ = judgeSLO(&j, nil, time.Time{}, now.Add(time.Second))
		require.NotNil(t, c, "then the breach ends with its job")
		require.True(t, c.LateSince.IsZero())
		require.Empty(t, c.Alerts)
	})

	t.Run("AJobThatEndsEndsItsBreachSilently", func(t *testing.T) {
		j := base(job.SLO{LateAfter: time.Second, SilentAfter: time.Minute})
		j.Status, j.LateSince, j.SilentSince = job.StatusCancelled, now, now
		c, _, _ := judgeSLO(&j, nil, time.Time{}, now)
		require.NotNil(t, c)
		require.True(t, c.LateSince.IsZero())
		require.True(t, c.SilentSince.IsZero())
		require.Empty(t, c.Alerts)
	})
}
