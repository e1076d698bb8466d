package jobspec

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/schedule"
)

// Patch is the body of PATCH /api/v1/jobs/{id}: every field is optional, and
// only the fields given change. The timing fields (run_at, delay, run_on with
// timezone, schedule) replace the job's timing as a whole, as in Spec.
type Patch struct {
	Name       *string         `json:"name"`
	RunAt      *time.Time      `json:"run_at"`
	Delay      string          `json:"delay"`
	RunOn      string          `json:"run_on"`
	Timezone   string          `json:"timezone"`
	Schedule   *schedule.Spec  `json:"schedule"`
	Payload    json.RawMessage `json:"payload"`
	Priority   *int            `json:"priority"`
	MaxRetries *int            `json:"max_retries"`
	Timeout    string          `json:"timeout"`
}

func (p *Patch) timing() bool {
	return p.RunAt != nil || p.Delay != "" || p.RunOn != "" || p.Schedule != nil || p.Timezone != ""
}

// Apply changes j as the patch asks, validated as a new job would be. started
// says whether any run of the job exists: a one-off job that has started can no
// longer move in time. A change of timing or priority moves the job to a new
// generation, so whatever Redis holds for it under the old one never runs.
func (p *Patch) Apply(j *job.Job, started bool, now time.Time, lim Limits) error {
	if j.Status != job.StatusScheduled && j.Status != job.StatusPaused {
		return fmt.Errorf("%w: a %s job cannot be edited", job.ErrConflict, j.Status)
	}
	s := Spec{Name: j.Name, Type: j.Type, Payload: j.Payload, Priority: p.Priority, MaxRetries: p.MaxRetries, Timeout: p.Timeout}
	if p.Name != nil {
		s.Name = *p.Name
	}
	if len(p.Payload) > 0 {
		s.Payload = p.Payload
	}
	tmp := &job.Job{}
	if err := s.applyOptions(tmp); err != nil {
		return err
	}
	name, err := validName(s.Name)
	if err != nil {
		return err
	}
	payload, err := ValidatePayload(j.Type, s.Payload, lim)
	if err != nil {
		return err
	}
	if p.timing() {
		if started && !j.Recurring() {
			return fmt.Errorf("%w: a one-off job that has started cannot be rescheduled", job.ErrConflict)
		}
		t := Spec{RunAt: p.RunAt, Delay: p.Delay, RunOn: p.RunOn, Timezone: p.Timezone, Schedule: p.Schedule}
		next := &job.Job{}
		if err := t.applyTiming(next, now.UTC().Truncate(time.Millisecond)); err != nil {
			return err
		}
		j.RunAt, j.Schedule, j.Timezone, j.DueAt = next.RunAt, next.Schedule, next.Timezone, next.DueAt
		j.Occurrences, j.LastAt = 0, time.Time{}
		j.Generation++
	}
	if p.Priority != nil && *p.Priority != j.Priority {
		j.Priority = *p.Priority
		j.Generation++
		switch {
		case j.Recurring() && !p.timing():
			// Its loaded occurrences carry the old priority and generation:
			// plan them again from now.
			if err := rewind(j, now); err != nil {
				return err
			}
		case j.DueAt.IsZero() && !j.Recurring() && !started:
			// Its member is in Redis under the old priority: load it again.
			j.DueAt = j.RunAt
		}
	}
	if p.MaxRetries != nil {
		j.MaxRetries = tmp.MaxRetries
	}
	if p.Timeout != "" {
		j.Timeout = tmp.Timeout
	}
	if p.timing() && j.DueAt.IsZero() {
		return fmt.Errorf("%w: nothing left to run", job.ErrInvalid)
	}
	j.Name, j.Payload = name, payload
	return nil
}

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

// rewind points a recurring job's cursor back at its first occurrence from now
// on, so whatever was loaded under an older generation is planned again.
func rewind(j *job.Job, now time.Time) error {
	sched, err := schedule.FromJSON(j.Schedule)
	if err != nil {
		return fmt.Errorf("job %s: %w", j.ID, err)
	}
	j.DueAt, j.Occurrences = sched.Rewind(now.Add(-time.Millisecond), j.DueAt, j.LastAt, j.Occurrences)
	j.LastAt = time.Time{}
	return nil
}
