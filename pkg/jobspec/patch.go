package jobspec

import (
	"context"
	"fmt"
	"time"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/schedule"
)

// Pause stops a job from running until Resume; what Redis holds for it is
// invalidated by the new generation.
func Pause(j *job.Job, _ bool) error {
	if j.Status != job.StatusScheduled {
		return fmt.Errorf("%w: a %s job cannot be paused", job.ErrConflict, j.Status)
	}
	j.Status = job.StatusPaused
	j.Generation++
	return nil
}

// Resume schedules a paused job again from now: a recurring job continues
// with its next occurrence after now (the occurrences it missed while paused
// are not misfires: it was told not to run); a one-off job runs at its time,
// or at once if that passed while it was paused.
func Resume(now time.Time) func(j *job.Job, _ bool) error {
	return func(j *job.Job, _ bool) error {
		if j.Status != job.StatusPaused {
			return fmt.Errorf("%w: a %s job cannot be resumed", job.ErrConflict, j.Status)
		}
		j.Status = job.StatusScheduled
		j.Generation++
		j.PausedReason = ""
		if !j.Recurring() {
			j.DueAt = j.RunAt
			return nil
		}
		return rewind(j, now)
	}
}

// rewindUnits and rewindTime bound the work of a rewind, which runs under
// the job's row lock: the stored schedule was checked when it was stored,
// and the walk covers at most what the loader planned ahead (a horizon's
// worth).
const (
	rewindUnits = schedule.RequestUnits / 4
	rewindTime  = 5 * time.Millisecond
)

// rewind points a recurring job's cursor back at its first occurrence from now
// on, so whatever was loaded under an older generation is planned again.
func rewind(j *job.Job, now time.Time) error {
	b := schedule.NewBudget(context.Background(), rewindUnits, rewindTime)
	sched, err := schedule.FromJSONWithin(b, j.Schedule)
	if err != nil {
		return fmt.Errorf("job %s: %w", j.ID, err)
	}
	sched = sched.Jittered(j.JitterOffset)
	due, used := sched.Rewind(now.Add(-time.Millisecond), j.DueAt, j.LastAt, j.Occurrences)
	if err := sched.Err(); err != nil {
		return fmt.Errorf("job %s: rewind: %w", j.ID, err)
	}
	j.DueAt, j.Occurrences = due, used
	j.LastAt = time.Time{}
	return nil
}
