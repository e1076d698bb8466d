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

// setJitter gives j the jitter d, and a new offset: on an edit, a new
// generation, so what Redis holds under the old offset never runs. The job
// is planned with it once every field is set (settleJitter).
func setJitter(j *job.Job, d time.Duration, a *applyState) error {
	if d == j.Jitter {
		return nil
	}
	if !a.jitterChanged {
		a.jitterChanged, a.oldOffset = true, j.JitterOffset
	}
	if a.mode != Create && !a.timingChanged {
		if !j.Recurring() && a.started {
			return fmt.Errorf("%w: a one-off job that has started cannot be rescheduled", job.ErrConflict)
		}
		j.Generation++
	}
	j.Jitter, j.JitterOffset = d, job.NewJitterOffset(d)
	return nil
}

// settleJitter plans j with its final jitter once a change has set every
// field. A timing set by the change is in nominal times, and moves by the
// offset (replan); a new jitter on the job's own timing moves it from the
// old offset to the new one (rejitter).
func settleJitter(j *job.Job, a *applyState) error {
	planned := a.mode == Create || a.timingChanged
	switch {
	case planned && j.Jitter > 0:
		return replan(j, a.now)
	case planned || !a.jitterChanged:
		return nil
	case !j.Recurring():
		j.RunAt = j.RunAt.Add(j.JitterOffset - a.oldOffset)
		j.DueAt = j.RunAt
		return nil
	}
	return rejitter(j, a)
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
	rule, err := storedRule(j)
	if err != nil {
		return err
	}
	if err := JitterFits(rule, j.Jitter, now); err != nil {
		return err
	}
	sched := rule.Jittered(j.JitterOffset)
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

// rejitter moves a recurring job's plan from its old offset to its new one.
// The rewind is done in nominal times: the occurrences handed out under the
// old offset that were not due yet (nominal time after now less the old
// offset) are planned again at their new times, each once, and count is
// given back for them, so no occurrence runs twice or is lost, whichever
// way the offset moved. One whose new time has passed runs at once, late.
func rejitter(j *job.Job, a *applyState) error {
	rule, err := storedRule(j)
	if err != nil {
		return err
	}
	if err := JitterFits(rule, j.Jitter, a.now); err != nil {
		return err
	}
	nominal := func(t time.Time) time.Time {
		if t.IsZero() {
			return t
		}
		return t.Add(-a.oldOffset)
	}
	next, used := rule.Rewind(a.now.Add(-a.oldOffset-time.Millisecond), nominal(j.DueAt), nominal(j.LastAt), j.Occurrences)
	load := rule.Jittered(j.JitterOffset).Load(a.now.Add(-time.Millisecond), used)
	if err := rule.Err(); err != nil {
		return fmt.Errorf("job %s: rewind: %w", j.ID, err)
	}
	if !next.IsZero() {
		next = next.Add(j.JitterOffset)
	}
	j.DueAt, j.Occurrences, j.LastAt, j.Load = next, used, time.Time{}, &load
	return nil
}

// storedRule compiles j's stored schedule as written, without its offset,
// within a request's units: the rule was checked when it was stored.
func storedRule(j *job.Job) (*schedule.Schedule, error) {
	b := schedule.NewBudget(context.Background(), schedule.RequestUnits, 0)
	sched, err := schedule.FromJSONWithin(b, j.Schedule)
	if err != nil {
		return nil, fmt.Errorf("job %s: %w", j.ID, err)
	}
	return sched, nil
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
