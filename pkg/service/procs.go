package service

import (
	"context"
	"os"
	"runtime"
	"syscall"
	"time"
)

// Procs runs a process on one P (runtime.GOMAXPROCS(1)) while it is lightly
// loaded, and on the runtime's default (every core it may use) as soon as
// it is not.
//
// A worker at a steady load of short attempts (1,000 jobs/s between two
// workers) hands each attempt between a few goroutines (reader, runner, the
// HTTP client's write and read loops, completer), and with an idle second P
// the runtime wakes a second thread for nearly every handoff, which finds
// nothing to do and sleeps again. On one P those handoffs stay on one
// thread: the workers' CPU per steady job fell by a sixth (515 to 428 µs in
// ab.sh), lateness unchanged. One P caps the process at one core, and
// makes a burst slower and dearer even when the process gets less than half
// a core (the box shared with its stores): it goes back to every core as
// soon as the caller says it is busy (a worker: more than 16 attempts calling
// their targets at once, or a read that finds a backlog), or it uses more
// than High of a core.
//
// An operator's GOMAXPROCS environment variable always wins: Run then does
// nothing.
type Procs struct {
	// Tick is how often the load is looked at.
	Tick time.Duration
	// High is the share of one core, used over one tick, that brings back
	// every core.
	High float64
	// Low is the share of one core under which, for Calm ticks in a row,
	// the process goes down to one P.
	Low  float64
	Calm int
	// Busy says whether the process has had more work at once since the
	// last tick than one P serves well (nil: never).
	Busy func() bool
	// Woken, when set, says the process just became busy: on one P, it
	// looks at once rather than at the next tick.
	Woken <-chan struct{}
}

// NewProcs returns a governor that looks every 100 ms (every second on one
// P) and when woken, brings every core back when busy says so or at 60 % of
// a core, and goes down to one P after two seconds neither busy nor over
// 35 % of a core.
func NewProcs(busy func() bool, woken <-chan struct{}) *Procs {
	return &Procs{Tick: 100 * time.Millisecond, High: 0.6, Low: 0.35, Calm: 20, Busy: busy, Woken: woken}
}

// Run governs the Ps until ctx ends, when it gives the runtime's default
// back.
func (p *Procs) Run(ctx context.Context) {
	if os.Getenv("GOMAXPROCS") != "" || runtime.GOMAXPROCS(0) <= 1 {
		return
	}
	t := time.NewTicker(p.Tick)
	defer t.Stop()
	var st procsState
	defer func() {
		if st.one {
			setProcs(0)
		}
	}()
	last, lastAt := processCPU(), time.Now()
	for {
		var load float64
		busy := true
		select {
		case <-ctx.Done():
			return
		case <-p.Woken:
		case now := <-t.C:
			used := processCPU()
			load = float64(used-last) / float64(now.Sub(lastAt))
			last, lastAt = used, now
			busy = p.Busy != nil && p.Busy()
		}
		if n, ok := p.next(&st, load, busy); ok {
			setProcs(n)
			// On one P it looks a tenth as often: an idle process wakes
			// less, and the caller's Woken says at once when it is busy.
			if n == 1 {
				t.Reset(p.Tick * onePLookEvery)
			} else {
				t.Reset(p.Tick)
			}
		}
	}
}

// onePLookEvery is how many ticks apart the governor looks at the load while
// on one P: it comes back from one P at once when Woken, and looking ten
// times a second cost an idle worker more than it saved (14 against 8 ms of
// CPU a second for two idle workers in make bench).
const onePLookEvery = 10

// procsState is where the governor stands: on one P or not, and for how
// many looks in a row the process was calm.
type procsState struct {
	one  bool
	calm int
}

// next takes one look, at the share of a core used since the last and at
// whether the process was busy, and says what to set GOMAXPROCS to (0 the
// runtime's default), if anything.
func (p *Procs) next(st *procsState, load float64, busy bool) (n int, change bool) {
	switch {
	case st.one && (busy || load >= p.High):
		st.one, st.calm = false, 0
		return 0, true
	case st.one:
		return 0, false
	case busy || load >= p.Low:
		st.calm = 0
		return 0, false
	}
	if st.calm++; st.calm < p.Calm {
		return 0, false
	}
	st.one = true
	return 1, true
}

func setProcs(n int) {
	if n == 0 {
		runtime.SetDefaultGOMAXPROCS()
		return
	}
	runtime.GOMAXPROCS(n)
}

// processCPU is the CPU time the process has used, in user and system mode,
// over all its threads.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
