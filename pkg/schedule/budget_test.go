package schedule

import (
	"context"
	"errors"
	"testing"
	"time"
)

// expensiveRules never produce an occurrence, or produce one only after a
// very long walk: each must be refused within the budget.
var expensiveRules = []Spec{
	{RRule: "FREQ=SECONDLY;BYSETPOS=2"},
	{RRule: "FREQ=MINUTELY;INTERVAL=10;BYSETPOS=2"},
	{RRule: "FREQ=HOURLY;BYSETPOS=2"},
	{RRule: "FREQ=DAILY;BYSETPOS=2"},
	{RRule: "FREQ=WEEKLY;BYSETPOS=3"},
	{RRule: "FREQ=YEARLY;BYMONTH=5;BYSETPOS=3;BYMONTHDAY=3"},
	{RRule: "FREQ=MONTHLY;BYMONTH=2;BYMONTHDAY=30,31;BYSETPOS=2"},
	{RRule: "FREQ=SECONDLY;BYMONTH=2;BYMONTHDAY=30"},
	{RRule: "FREQ=MINUTELY;BYMONTH=2;BYMONTHDAY=30"},
	{RRule: "FREQ=DAILY;BYMONTH=2;BYMONTHDAY=30"},
	{RRule: "FREQ=YEARLY;BYDAY=4TH;BYMONTHDAY=24;BYMONTH=11;BYSETPOS=2"},
	{RRule: "FREQ=YEARLY;BYWEEKNO=53;BYDAY=MO;BYSETPOS=-2"},
	{Cron: "0 0 0 30 2 *"},
	{Cron: "* * * 31 4 *"},
}

// BenchmarkBudget measures how long a whole RequestUnits budget takes to
// run out on the rules above: the bound on one request's schedule work.
func BenchmarkBudget(b *testing.B) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, spec := range expensiveRules {
		name := spec.RRule + spec.Cron
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				bud := RequestBudget(context.Background())
				_, err := spec.CompileWithin(bud, start)
				if err == nil {
					b.Fatal("compiled")
				}
			}
		})
	}
}

func TestBudget(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	t.Run("RefusesRulesThatNeverProduce", func(t *testing.T) {
		t.Parallel()
		for _, spec := range expensiveRules {
			began := time.Now()
			_, err := spec.CompileWithin(RequestBudget(t.Context()), start)
			if err == nil {
				t.Errorf("%+v compiled", spec)
			}
			t.Logf("%s%s: %v in %s", spec.RRule, spec.Cron, err, time.Since(began))
		}
	})
	t.Run("StopsWhenTheContextEnds", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err := Spec{RRule: "FREQ=SECONDLY;BYSETPOS=2"}.CompileWithin(NewBudget(ctx, 1<<40, 0), start)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	})
}
