package jobspec

import (
	"context"
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
	// Retention replaces the job's retention; "" returns it to the
	// operator's default.
	Retention *string `json:"retention"`
	History   string  `json:"history"`
	// Labels replace the job's labels as a whole; {} removes them.
	Labels map[string]string `json:"labels"`
	// ExpiresAfter replaces the job's expiry; "" removes it.
	ExpiresAfter *string `json:"expires_after"`
	// Overlap replaces a recurring job's overlap policy.
	Overlap string `json:"overlap"`
	// Notify replaces the job's alerting; {"on": []} removes it.
	Notify *job.Notify `json:"notify"`
}

func (p *Patch) timing() bool {
	return p.RunAt != nil || p.Delay != "" || p.RunOn != "" || p.Schedule != nil || p.Timezone != ""
}

// Apply changes j as the patch asks, validated as a new job would be: Prepare
// and then the Change's Apply, for callers that hold no lock.
func (p *Patch) Apply(j *job.Job, started bool, now time.Time, lim Limits) error {
	c, err := p.Prepare(schedule.RequestBudget(context.Background()), j, now, lim)
	if err != nil {
		return err
	}
	return c.Apply(j, started)
}

// Change is a validated patch, ready to be applied to the job under its row
// lock: everything that can fail on the input, or cost more than a few
// comparisons (compiling a new schedule), was done by Prepare.
type Change struct {
	p       *Patch
	now     time.Time
	name    string
	payload json.RawMessage
	opts    job.Job  // priority, max_retries and timeout as given
	timing  *job.Job // the new timing, when the patch gives one
}

// Prepare validates the patch for job j as a new job would be, outside any
// transaction: j is read without a lock and only its type, name and payload
// are used (the type never changes; a name or payload not given is kept as it
// is when the Change is applied). A new schedule is compiled and its first
// occurrence found within b.
func (p *Patch) Prepare(b *schedule.Budget, j *job.Job, now time.Time, lim Limits) (*Change, error) {
	now = now.UTC().Truncate(time.Millisecond)
	c := &Change{p: p, now: now}
	s := Spec{Priority: p.Priority, MaxRetries: p.MaxRetries, Timeout: p.Timeout, History: p.History, Labels: p.Labels, Overlap: p.Overlap}
	if p.Retention != nil {
		s.Retention = *p.Retention
	}
	if p.ExpiresAfter != nil {
		s.ExpiresAfter = *p.ExpiresAfter
	}
	if err := s.applyOptions(&c.opts); err != nil {
		return nil, err
	}
	if p.Notify != nil {
		n, err := ValidNotify(p.Notify, lim)
		if err != nil {
			return nil, err
		}
		c.opts.Notify = n
	}
	if p.Name != nil {
		name, err := validName(*p.Name)
		if err != nil {
			return nil, err
		}
		c.name = name
	}
	if len(p.Payload) > 0 {
		payload, err := ValidatePayload(j.Type, p.Payload, lim)
		if err != nil {
			return nil, err
		}
		c.payload = payload
	}
	if p.timing() {
		t := Spec{RunAt: p.RunAt, Delay: p.Delay, RunOn: p.RunOn, Timezone: p.Timezone, Schedule: p.Schedule}
		c.timing = &job.Job{}
		if err := t.applyTiming(c.timing, now, b); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Timing is the new timing the change gives the job (RunAt, Schedule,
// Timezone, DueAt, Occurrences, PerHour, Load), or nil when it keeps its own.
func (c *Change) Timing() *job.Job { return c.timing }

// Apply changes j, under its row lock, as prepared. started says whether any
// run of the job exists: a one-off job that has started can no longer move in
// time. A change of timing or priority moves the job to a new generation, so
// whatever Redis holds for it under the old one never runs.
func (c *Change) Apply(j *job.Job, started bool) error {
	p, now := c.p, c.now
	if j.Status != job.StatusScheduled && j.Status != job.StatusPaused {
		return fmt.Errorf("%w: a %s job cannot be edited", job.ErrConflict, j.Status)
	}
	if c.timing != nil {
		if started && !j.Recurring() {
			return fmt.Errorf("%w: a one-off job that has started cannot be rescheduled", job.ErrConflict)
		}
		next := c.timing
		j.RunAt, j.Schedule, j.Timezone, j.DueAt = next.RunAt, next.Schedule, next.Timezone, next.DueAt
		j.Occurrences, j.PerHour, j.Load, j.LastAt = next.Occurrences, next.PerHour, next.Load, time.Time{}
		j.Generation++
	}
	if p.Priority != nil && *p.Priority != j.Priority {
		j.Priority = *p.Priority
		j.Generation++
		switch {
		case j.Recurring() && c.timing == nil:
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
		j.MaxRetries = c.opts.MaxRetries
	}
	if p.Timeout != "" {
		j.Timeout = c.opts.Timeout
	}
	if p.Retention != nil {
		j.Retention = c.opts.Retention
	}
	if p.History != "" {
		j.History = c.opts.History
	}
	if p.Labels != nil {
		j.Labels = c.opts.Labels
	}
	if p.ExpiresAfter != nil {
		j.ExpiresAfter = c.opts.ExpiresAfter
	}
	if p.Notify != nil {
		j.Notify = c.opts.Notify
	}
	if p.Overlap != "" {
		j.Overlap = c.opts.Overlap
	}
	if j.Overlap != "" && !j.Recurring() {
		return invalid("overlap", "applies to recurring jobs only")
	}
	if c.timing != nil && j.DueAt.IsZero() {
		return fmt.Errorf("%w: nothing left to run", job.ErrInvalid)
	}
	if p.Name != nil {
		j.Name = c.name
	}
	if c.payload != nil {
		j.Payload = c.payload
	}
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
	due, used := sched.Rewind(now.Add(-time.Millisecond), j.DueAt, j.LastAt, j.Occurrences)
	if err := sched.Err(); err != nil {
		return fmt.Errorf("job %s: rewind: %w", j.ID, err)
	}
	j.DueAt, j.Occurrences = due, used
	j.LastAt = time.Time{}
	return nil
}
