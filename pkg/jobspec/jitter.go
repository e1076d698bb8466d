package jobspec

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/schedule"
)

// jitterGapSample bounds the occurrences whose gaps a recurring job's
// jitter is checked against.
const jitterGapSample = 100

// parseJitter reads a jitter: a Go duration from 1ms to job.MaxJitter, or
// "" for none (zero).
func parseJitter(raw json.RawMessage) (time.Duration, error) {
	var s string
	if err := decodeValue("jitter", raw, &s); err != nil {
		return 0, err
	}
	return ParseJitter(s)
}

// ParseJitter reads a jitter's text as parseJitter does.
func ParseJitter(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, invalid("jitter", "is not a duration such as 60s or 5m")
	}
	if d < time.Millisecond || d > job.MaxJitter {
		return 0, invalid("jitter", "must be between 1ms and %s", job.MaxJitter)
	}
	return d.Truncate(time.Millisecond), nil
}

// setJitter gives j the jitter d. A new jitter is a new offset, so the job
// is planned again from now on a new generation: what Redis holds under
// the old offset never runs.
func setJitter(j *job.Job, d time.Duration, a *applyState) error {
	if d == j.Jitter {
		return nil
	}
	nominal := j.NominalRunAt()
	j.Jitter, j.JitterOffset = d, job.NewJitterOffset(d)
	if !j.Recurring() {
		if a.mode != Create && !a.timingChanged {
			if a.started {
				return fmt.Errorf("%w: a one-off job that has started cannot be rescheduled", job.ErrConflict)
			}
			j.Generation++
		}
		j.RunAt = nominal
		return replan(j, a.now)
	}
	if a.mode == Create || a.timingChanged {
		return replan(j, a.now)
	}
	j.Generation++
	if err := checkJitterGap(j, a.now); err != nil {
		return err
	}
	return rewind(j, a.now)
}

// replan moves a timing just set in nominal times (a one-off job's RunAt;
// a recurring job's DueAt, the first occurrence from now, with
// Occurrences and Load) by the job's jitter offset. A recurring job's
// first jittered occurrence may come from a nominal one just before now.
func replan(j *job.Job, now time.Time) error {
	if !j.Recurring() {
		j.RunAt = j.RunAt.Add(j.JitterOffset)
		j.DueAt = j.RunAt
		return nil
	}
	sched, err := jitteredSchedule(j)
	if err != nil {
		return err
	}
	if err := JitterFits(sched.Jittered(0), j.Jitter, now); err != nil {
		return err
	}
	first, ok := sched.Next(now.Add(-time.Millisecond))
	used := sched.UsedBefore(first)
	load := sched.Load(now.Add(-time.Millisecond), used)
	if err := sched.Err(); err != nil {
		return invalid("jitter", "makes the schedule too expensive to evaluate: %v", err)
	}
	if !ok || sched.Count() > 0 && used >= sched.Count() {
		return invalid("schedule", "has no occurrence from now on")
	}
	j.DueAt, j.Occurrences, j.Load = first, used, &load
	return nil
}

// checkJitterGap checks a recurring job's jitter against its schedule.
func checkJitterGap(j *job.Job, now time.Time) error {
	sched, err := jitteredSchedule(j)
	if err != nil {
		return err
	}
	return JitterFits(sched.Jittered(0), j.Jitter, now)
}

// jitteredSchedule compiles j's stored schedule, moved by its offset,
// within a request's units.
func jitteredSchedule(j *job.Job) (*schedule.Schedule, error) {
	b := schedule.NewBudget(context.Background(), schedule.RequestUnits, 0)
	sched, err := schedule.FromJSONWithin(b, j.Schedule)
	if err != nil {
		return nil, fmt.Errorf("job %s: %w", j.ID, err)
	}
	return sched.Jittered(j.JitterOffset), nil
}

// JitterFits checks that jitter is at most the shortest gap between the
// schedule's next occurrences (up to jitterGapSample of them): a jitter is
// a spread within one period, not a move past the next occurrence.
func JitterFits(sched *schedule.Schedule, jitter time.Duration, now time.Time) error {
	prev, ok := sched.Next(now.Add(-time.Millisecond))
	gap := time.Duration(0)
	for i := 0; ok && i < jitterGapSample; i++ {
		next, more := sched.Next(prev)
		if !more {
			break
		}
		if d := next.Sub(prev); gap == 0 || d < gap {
			gap = d
		}
		prev = next
	}
	if gap > 0 && jitter > gap {
		return invalid("jitter", "must be at most %s, the shortest gap between the schedule's occurrences", gap)
	}
	return nil
}
