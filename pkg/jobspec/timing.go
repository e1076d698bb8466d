package jobspec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/schedule"
)

// timingInput is the timing fields a request gives, read together once
// the last of them is (timingStep): a job runs once (run_at, delay, or
// run_on with timezone) or recurs (schedule), never both.
type timingInput struct {
	runAt, delay, runOn, timezone, schedule json.RawMessage
	// next is the timing they describe, once checked.
	next *job.Job
}

func (t *timingInput) given() bool {
	return t.runAt != nil || t.delay != nil || t.runOn != nil || t.timezone != nil || t.schedule != nil
}

// timingParse is the parse of a timing field: it keeps the value for
// timingStep, which checks them together.
func timingParse(keep func(t *timingInput, raw json.RawMessage)) func(json.RawMessage, *parser) (applier, error) {
	return func(raw json.RawMessage, p *parser) (applier, error) {
		keep(&p.timing, raw)
		return nil, nil
	}
}

// timingStep checks the timing fields given, and returns what sets them:
// nil for a patch that gives none. A create or replace must give one.
func (p *parser) timingStep() (applier, error) {
	in := &p.timing
	if !in.given() {
		if p.mode == Patch {
			return nil, nil
		}
		return nil, invalid("run_at", "one of run_at, delay, run_on or schedule is required")
	}
	spec, err := in.decode()
	if err != nil {
		return nil, err
	}
	next := &job.Job{}
	if err := spec.applyTiming(next, p.now, p.budget); err != nil {
		return nil, err
	}
	in.next = next
	keep := p.mode == Replace && p.cur != nil && sameTiming(p.cur, next, spec, p.budget)
	return func(j *job.Job, a *applyState) error {
		if keep && j.Generation == p.cur.Generation {
			return nil // the same timing: the job keeps its plan
		}
		if a.mode != Create && a.started && !j.Recurring() {
			return fmt.Errorf("%w: a one-off job that has started cannot be rescheduled", job.ErrConflict)
		}
		j.RunAt, j.Schedule, j.Timezone, j.DueAt = next.RunAt, next.Schedule, next.Timezone, next.DueAt
		j.Occurrences, j.PerHour, j.Load, j.LastAt = next.Occurrences, next.PerHour, next.Load, time.Time{}
		if a.mode != Create {
			j.Generation++
			a.timingChanged = true
		}
		return nil // in nominal times: settleJitter moves them by the job's jitter
	}, nil
}

// timingSpec is the timing fields decoded.
type timingSpec struct {
	RunAt    *time.Time
	Delay    string
	RunOn    string
	Timezone string
	Schedule *schedule.Spec
}

func (t *timingInput) decode() (*timingSpec, error) {
	s := &timingSpec{}
	if t.runAt != nil {
		if err := decodeValue("run_at", t.runAt, &s.RunAt); err != nil {
			return nil, err
		}
	}
	for _, v := range []struct {
		name string
		raw  json.RawMessage
		dst  *string
	}{{"delay", t.delay, &s.Delay}, {"run_on", t.runOn, &s.RunOn}, {"timezone", t.timezone, &s.Timezone}} {
		if v.raw != nil {
			if err := decodeValue(v.name, v.raw, v.dst); err != nil {
				return nil, err
			}
		}
	}
	if t.schedule != nil {
		if err := decodeValue("schedule", t.schedule, &s.Schedule); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// applyTiming sets when the job runs: RunAt for one run, Schedule for a
// recurrence, and DueAt, the first occurrence, either way. A recurrence
// starts from now: with a start_at in the past, the occurrences before now
// are neither run nor recorded as missed (they only spend its count), so no
// start_at makes the loader walk through years of misfires.
func (s *timingSpec) applyTiming(j *job.Job, now time.Time, b *schedule.Budget) error {
	given := 0
	for _, set := range []bool{s.RunAt != nil, s.Delay != "", s.RunOn != "", s.Schedule != nil} {
		if set {
			given++
		}
	}
	switch {
	case given == 0:
		return invalid("run_at", "one of run_at, delay, run_on or schedule is required")
	case given > 1:
		field := "schedule"
		if s.Schedule == nil {
			field = "run_at"
		}
		return invalid(field, "give only one of run_at, delay, run_on or schedule")
	}
	zone := time.UTC
	if s.Timezone != "" {
		if s.Schedule != nil {
			return invalid("timezone", "goes inside schedule for a recurring job")
		}
		loc, err := time.LoadLocation(s.Timezone)
		if err != nil || s.Timezone == "Local" {
			return invalid("timezone", "is not an IANA time zone such as Europe/Berlin")
		}
		zone, j.Timezone = loc, s.Timezone
	}
	switch {
	case s.RunAt != nil:
		j.RunAt = s.RunAt.UTC().Truncate(time.Millisecond)
		if j.RunAt.Before(now) {
			return invalid("run_at", "is in the past")
		}
	case s.Delay != "":
		d, err := ParseDelay(s.Delay)
		if err != nil {
			return invalid("delay", "%s", err)
		}
		j.RunAt = now.Add(d)
	case s.RunOn != "":
		if s.Timezone == "" {
			return invalid("timezone", "is required with run_on (the date's local midnight)")
		}
		day, err := time.ParseInLocation("2006-01-02", s.RunOn, zone)
		if err != nil {
			return invalid("run_on", "is not a date such as 2026-12-24")
		}
		j.RunAt = day.UTC()
		if j.RunAt.Before(now) {
			return invalid("run_on", "is in the past")
		}
	default:
		sched, err := s.Schedule.CompileWithin(b, now)
		if err != nil {
			return err
		}
		first, ok := sched.Next(now.Add(-time.Millisecond))
		used := sched.UsedBefore(first)
		perHour := sched.PerHour(now.Add(-time.Millisecond))
		load := sched.Load(now.Add(-time.Millisecond), used)
		if err := sched.Err(); err != nil {
			return s.Schedule.BudgetError(err)
		}
		if !ok || sched.Count() > 0 && used >= sched.Count() {
			return invalid("schedule", "has no occurrence from now on")
		}
		raw, err := json.Marshal(sched.Spec())
		if err != nil {
			return fmt.Errorf("encode schedule: %w", err)
		}
		j.Schedule, j.Timezone, j.DueAt = raw, sched.Location().String(), first
		j.Occurrences, j.PerHour, j.Load = used, perHour, &load
		return nil
	}
	if j.Timezone == "" {
		j.Timezone = "UTC"
	}
	j.DueAt = j.RunAt
	return nil
}

// sameTiming reports whether a replace's timing (spec, checked into next)
// says what cur's already does, so that the replace keeps cur's plan
// rather than moving it to now: a one-off job at the same instant in the
// same zone, or given a delay (relative to the request, so never a change
// of its own); a recurring job with the same schedule once the fields the
// request leaves to their defaults that depend on when it is made
// (start_at, and with every, on) are taken from cur's.
func sameTiming(cur, next *job.Job, spec *timingSpec, b *schedule.Budget) bool {
	switch {
	case cur.Recurring() != next.Recurring():
		return false
	case !cur.Recurring():
		if spec.Delay != "" {
			return true
		}
		return cur.NominalRunAt().Equal(next.RunAt) && zoneName(cur.Timezone) == zoneName(next.Timezone)
	}
	var stored schedule.Spec
	if json.Unmarshal(cur.Schedule, &stored) != nil {
		return false
	}
	want := *spec.Schedule
	if want.StartAt == nil {
		want.StartAt = stored.StartAt
	}
	if want.Every != "" && len(want.On) == 0 {
		want.On = stored.On
	}
	start := cur.CreatedAt
	if want.StartAt != nil {
		start = *want.StartAt
	}
	sched, err := want.CompileWithin(b, start)
	if err != nil {
		return false
	}
	raw, err := json.Marshal(sched.Spec())
	return err == nil && jsonEqual(raw, cur.Schedule)
}

func zoneName(z string) string {
	if z == "" {
		return "UTC"
	}
	return z
}

// jsonEqual compares two JSON documents by value.
func jsonEqual(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	ra, _ := json.Marshal(x)
	rb, _ := json.Marshal(y)
	return bytes.Equal(ra, rb)
}
