package schedule

import (
	"context"
	"errors"
	"time"
)

// ErrTooExpensive says a schedule needed more work than its budget allowed.
// The API reports it on the schedule's expression field.
var ErrTooExpensive = errors.New("too expensive to evaluate")

// A budget counts work units (about one candidate day, wall time or library
// call examined) and the time spent: the units make the common bounds
// deterministic, and the time bounds what the units model badly (one go-cron
// or rrule-go step costs from a few nanoseconds to tens of microseconds), so
// no rule can hold a core for longer than the budget's time. The time is
// wall time: the CPU time spent is never more.
const (
	// RequestUnits and RequestTime bound all schedule work of one API request,
	// or of one job of a bulk create: compiling, checking and previewing.
	// Plain rules need a few hundred units and well under a millisecond.
	RequestUnits = 1_000_000
	RequestTime  = 20 * time.Millisecond
	// LoaderUnits and LoaderTime bound the work the loader spends on one job
	// in one round; what is left is planned in the next round.
	LoaderUnits = 1_000_000
	LoaderTime  = 20 * time.Millisecond
)

// Budget bounds the work of evaluating schedules for one purpose: a number
// of work units, a time, and a context whose end stops the work too. Once
// any runs out, evaluations answer "no occurrence" and Err says why, so a
// caller that sees no occurrence checks Err before concluding that none
// exists. A Budget is not safe for concurrent use; give each goroutine its
// own.
type Budget struct {
	ctx      context.Context
	left     int64
	deadline time.Time
	calls    int   // spends since the time and context were last checked
	since    int64 // units spent since then
	err      error
}

// NewBudget returns a budget of units and of time d (none if d is 0) that
// also ends with ctx.
func NewBudget(ctx context.Context, units int64, d time.Duration) *Budget {
	b := &Budget{ctx: ctx, left: units}
	if d > 0 {
		b.deadline = time.Now().Add(d)
	}
	return b
}

// unitsOnly is the budget of one evaluation made without a budget of the
// caller's (Compile, FromJSON, a Schedule not bound by Within): units only,
// so that the answer does not depend on how busy the machine is.
func unitsOnly() *Budget { return NewBudget(context.Background(), RequestUnits, 0) }

// RequestBudget is the budget of one API request's schedule work.
func RequestBudget(ctx context.Context) *Budget { return NewBudget(ctx, RequestUnits, RequestTime) }

// LoaderBudget is the budget of the loader's work on one job in one round.
func LoaderBudget(ctx context.Context) *Budget { return NewBudget(ctx, LoaderUnits, LoaderTime) }

// The time and the context are looked at every checkCalls spends or
// checkUnits units, whichever comes first: about every few microseconds.
const (
	checkCalls = 32
	checkUnits = 4096
)

// spend takes n units, and reports false once the budget, its time or its
// context has run out. A nil budget never runs out.
func (b *Budget) spend(n int) bool {
	if b == nil {
		return true
	}
	if b.err != nil {
		return false
	}
	b.left -= int64(n)
	if b.left < 0 {
		b.err = ErrTooExpensive
		return false
	}
	b.calls++
	if b.since += int64(n); b.since >= checkUnits || b.calls >= checkCalls {
		b.since, b.calls = 0, 0
		if err := b.ctx.Err(); err != nil {
			b.err = err
			return false
		}
		if !b.deadline.IsZero() && time.Now().After(b.deadline) {
			b.err = ErrTooExpensive
			return false
		}
	}
	return true
}

// Spend takes n units from the budget, for work done elsewhere on its
// account (such as a smaller budget carved out of it); it reports whether
// any are left.
func (b *Budget) Spend(n int64) bool {
	if b == nil {
		return true
	}
	if b.err != nil {
		return false
	}
	b.left -= n
	if b.left < 0 {
		b.err = ErrTooExpensive
		return false
	}
	return true
}

// Err is nil while the budget lasts, then ErrTooExpensive, or the context's
// error if it ended first.
func (b *Budget) Err() error {
	if b == nil {
		return nil
	}
	return b.err
}

// Left is how many units remain.
func (b *Budget) Left() int64 {
	if b == nil {
		return 0
	}
	return max(b.left, 0)
}

// Remaining is how much of the budget's time remains; a budget without a
// time has all the time in the world.
func (b *Budget) Remaining() time.Duration {
	if b == nil || b.deadline.IsZero() {
		return time.Duration(1<<63 - 1)
	}
	return max(time.Until(b.deadline), 0)
}

// BudgetError turns the error of a budget that ran out while evaluating s
// into what a client is told: ErrTooExpensive becomes a *job.FieldError on
// the rule's field (schedule.cron, schedule.rrule or schedule.every); a
// context's error passes through; nil stays nil.
func (s Spec) BudgetError(err error) error {
	if !errors.Is(err, ErrTooExpensive) {
		return err
	}
	field := "every"
	switch {
	case s.Cron != "":
		field = "cron"
	case s.RRule != "":
		field = "rrule"
	}
	return invalid(field, "is too expensive to evaluate: finding its occurrences needs more than the %s of work a schedule may use; simplify the rule", RequestTime)
}
