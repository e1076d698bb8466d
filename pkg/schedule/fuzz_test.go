package schedule

import (
	"context"
	"encoding/json"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/tockhq/tock/pkg/job"
)

// fuzzZones exercise a fixed zone, whole-hour DST on both hemispheres, a
// half-hour DST (Lord Howe) and a 45-minute offset with DST (Chatham).
var fuzzZones = []string{"UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Pacific/Chatham", "America/Sao_Paulo"}

// fuzzStart sits a few weeks before a Berlin, New York and Chatham change,
// so short walks cross transitions.
var fuzzStart = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)

// checkSchedule compiles spec and, when valid, walks Next from a few points:
// nothing may panic, times must be strictly increasing whole milliseconds
// after their argument, and every call must return.
func checkSchedule(t *testing.T, spec Spec) {
	t.Helper()
	panics := libraryPanics.Load()
	defer func() {
		if n := libraryPanics.Load() - panics; n > 0 {
			t.Fatalf("%d library panic(s) recovered for %+v", n, spec)
		}
	}()

	s, err := spec.Compile(fuzzStart)
	if err != nil {
		var fe *job.FieldError
		if !errors.As(err, &fe) || !errors.Is(err, job.ErrInvalid) {
			t.Fatalf("error %v is not a *job.FieldError", err)
		}
		return
	}
	first, ok := s.First()
	if !ok {
		t.Fatalf("compiled %+v without a first occurrence", spec)
	}
	if first.Before(fuzzStart) {
		t.Fatalf("first %s before start", first)
	}
	for _, from := range []time.Time{
		fuzzStart.Add(-time.Hour),
		first,
		fuzzStart.AddDate(0, 0, 7).Add(1500 * time.Millisecond),
		fuzzStart.AddDate(0, 7, 24).Add(23 * time.Hour),
		fuzzStart.AddDate(3, 0, 0),
	} {
		at := from
		for range 12 {
			next, ok := s.Next(at)
			if !ok {
				break
			}
			if !next.After(at) {
				t.Fatalf("%+v: Next(%s) = %s, not after", spec, at, next)
			}
			if next.Before(fuzzStart) || next.Nanosecond()%int(time.Millisecond) != 0 || next.Location() != time.UTC {
				t.Fatalf("%+v: Next(%s) = %s", spec, at, next)
			}
			at = next
		}
	}
	s.Misfired(first, first.Add(time.Hour), time.Second)

	// The normalized spec compiles again to the same schedule.
	raw, err := json.Marshal(s.Spec())
	if err != nil {
		t.Fatalf("marshal %+v: %v", s.Spec(), err)
	}
	var back Spec
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	again, err := back.Compile(fuzzStart.AddDate(1, 0, 0))
	if err != nil {
		t.Fatalf("normalized %s does not compile: %v", raw, err)
	}
	if got, want := again.Upcoming(first.Add(-time.Second), 3, 0), s.Upcoming(first.Add(-time.Second), 3, 0); !equalTimes(got, want) {
		t.Fatalf("normalized %s gives %v, not %v", raw, got, want)
	}
}

// requestCPU is the CPU time one request may spend on a schedule, whatever
// the rule (the issue of bounded work per request asks for 50 ms).
const requestCPU = 50 * time.Millisecond

// checkRequestBound does what one API request does with spec, within one
// RequestBudget: compile it, find its first occurrence from now, its rate and
// a preview of ten, and fails if that took more than requestCPU of the
// thread's CPU time.
func checkRequestBound(t *testing.T, spec Spec) {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before := threadCPU()
	s, err := spec.CompileWithin(RequestBudget(context.Background()), fuzzStart)
	if err == nil {
		s.Next(fuzzStart)
		s.UsedBefore(fuzzStart)
		s.PerHour(fuzzStart)
		s.Upcoming(fuzzStart, 10, 0)
	}
	if spent := threadCPU() - before; spent > requestCPU {
		t.Fatalf("%+v took %s of CPU in one request's budget (at most %s)", spec, spent, requestCPU)
	}
}

func equalTimes(a, b []time.Time) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].Equal(b[i]) {
			return false
		}
	}
	return true
}

func policy(b byte) *DSTPolicy {
	p := &DSTPolicy{Gap: GapShift, Overlap: OverlapFirst}
	if b&1 != 0 {
		p.Gap = GapSkip
	}
	if b&2 != 0 {
		p.Overlap = OverlapBoth
	}
	return p
}

func FuzzCron(f *testing.F) {
	for _, seed := range []string{
		"* * * * *", "* * * * * *", "*/15 * * * * *", "0 */15 * * * *", "30 2 * * *",
		"0 * * * *", "0 9 * * 1#1", "0 9 * * MON#L", "0 0 L * *", "0 0 L-3 * *", "0 0 15W * *",
		"0 0 LW * *", "0 0 30 2 *", "0 0 31 2,4,6 *", "59 23 31 12 *", "0 0 29 2 1",
		"@daily", "@hourly", "@weekly", "@monthly", "@yearly", "0 22-2 * * FRI-MON",
		"5,10-20/3 1-23/2 1,15 JAN-DEC/2 ?", "0 0 ? * 7", "0 0 1-7 * 1", "H * * * *",
		"0 0 0 1 1 * 2030", "@every 1s", "CRON_TZ=UTC * * * * *", "0 30 2 * * *",
	} {
		f.Add(seed, byte(0), byte(0))
		f.Add(seed, byte(1), byte(3))
	}
	f.Fuzz(func(t *testing.T, expr string, zone, dst byte) {
		spec := Spec{
			Cron:     expr,
			Timezone: fuzzZones[int(zone)%len(fuzzZones)],
			DST:      policy(dst),
		}
		checkRequestBound(t, spec)
		checkSchedule(t, spec)
	})
}

func FuzzRRule(f *testing.F) {
	for _, seed := range []string{
		"FREQ=SECONDLY", "FREQ=SECONDLY;INTERVAL=15", "FREQ=MINUTELY;BYSECOND=0,30",
		"FREQ=HOURLY;INTERVAL=2;BYHOUR=1", "FREQ=HOURLY;BYMINUTE=0;BYSECOND=0",
		"FREQ=DAILY;BYHOUR=2;BYMINUTE=30;BYSECOND=0", "FREQ=DAILY;INTERVAL=3",
		"FREQ=WEEKLY;BYDAY=MO,WE,FR;WKST=SU", "FREQ=WEEKLY;INTERVAL=2;BYDAY=TU",
		"FREQ=MONTHLY;BYDAY=1MO;BYHOUR=9;BYMINUTE=0;BYSECOND=0",
		"FREQ=MONTHLY;BYDAY=-1FR", "FREQ=MONTHLY;BYMONTHDAY=-1", "FREQ=MONTHLY;BYMONTHDAY=31",
		"FREQ=MONTHLY;BYDAY=MO,TU,WE,TH,FR;BYSETPOS=-1", "FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=29",
		"FREQ=YEARLY;BYWEEKNO=53;BYDAY=MO", "FREQ=YEARLY;BYYEARDAY=-1,366", "FREQ=YEARLY;BYDAY=53MO",
		"FREQ=YEARLY;BYMONTH=12;BYDAY=5SU", "FREQ=YEARLY;INTERVAL=4;BYMONTH=2;BYMONTHDAY=29;BYDAY=MO",
		"RRULE:FREQ=DAILY", "FREQ=DAILY;COUNT=3", "FREQ=DAILY;UNTIL=20270101T000000Z",
		"DTSTART:20260101T000000Z\nRRULE:FREQ=DAILY", "FREQ=YEARLY;BYEASTER=0", "FREQ=MINUTELY;INTERVAL=7;BYHOUR=3;BYMINUTE=5",
		"FREQ=SECONDLY;INTERVAL=86399;BYSECOND=1", "FREQ=DAILY;BYMONTH=2;BYMONTHDAY=30",
		// Rules whose periods never produce an occurrence: rrule-go would walk
		// them to year 9999 (the isolation issue's three, and kin).
		"FREQ=SECONDLY;BYSETPOS=2", "FREQ=MINUTELY;INTERVAL=10;BYSETPOS=2", "FREQ=HOURLY;BYSETPOS=2",
		"FREQ=YEARLY;BYMONTH=5;BYSETPOS=3;BYMONTHDAY=3", "FREQ=SECONDLY;BYMONTH=2;BYMONTHDAY=30",
		"FREQ=DAILY;BYHOUR=9\nEXDATE:20261225T090000,20270101T080000Z", "FREQ=HOURLY EXDATE;VALUE=DATE:20261225",
		"FREQ=MINUTELY\nEXDATE;TZID=America/New_York:20261225T030000",
	} {
		f.Add(seed, byte(0), byte(0))
		f.Add(seed, byte(2), byte(3))
	}
	f.Fuzz(func(t *testing.T, rule string, zone, dst byte) {
		spec := Spec{
			RRule:    rule,
			Timezone: fuzzZones[int(zone)%len(fuzzZones)],
			DST:      policy(dst),
		}
		checkRequestBound(t, spec)
		checkSchedule(t, spec)
	})
}
