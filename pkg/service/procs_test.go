package service

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestProcsGoesToOnePOnlyAfterCalmAndBackAtOnce(t *testing.T) {
	p := &Procs{High: 0.6, Low: 0.35, Calm: 3}
	var st procsState
	type look struct {
		load  float64
		busy  bool
		n     int
		moved bool
	}
	for i, l := range []look{
		{load: 0.1}, {load: 0.1},
		{load: 0.5}, // over Low: the calm starts again
		{load: 0.1}, {load: 0.1},
		{load: 0.1, busy: true}, // busy: so does it
		{load: 0.1}, {load: 0.1},
		{load: 0.1, n: 1, moved: true}, // three calm looks in a row
		{load: 0.5},                    // under High on one P: stays
		{load: 0.1},
		{load: 0.1, busy: true, n: 0, moved: true}, // busy: every core at once
		{load: 0.1}, {load: 0.1},
		{load: 0.1, n: 1, moved: true},
		{load: 0.7, n: 0, moved: true}, // over High
	} {
		n, moved := p.next(&st, l.load, l.busy)
		require.Equal(t, l.moved, moved, "look %d", i)
		if moved {
			require.Equal(t, l.n, n, "look %d", i)
		}
	}
}

func TestProcsRunsTheProcessOnOnePWhileIdle(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("one core: nothing to govern")
	}
	t.Setenv("GOMAXPROCS", "")
	before := runtime.GOMAXPROCS(0)
	woken := make(chan struct{})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		(&Procs{Tick: 5 * time.Millisecond, High: 0.6, Low: 0.35, Calm: 2, Woken: woken}).Run(ctx)
	}()
	require.Eventually(t, func() bool { return runtime.GOMAXPROCS(0) == 1 }, 5*time.Second, time.Millisecond, "idle, it goes down to one P")
	woken <- struct{}{}
	require.Eventually(t, func() bool { return runtime.GOMAXPROCS(0) == before }, 5*time.Second, time.Millisecond, "woken, it gives every core back")
	require.Eventually(t, func() bool { return runtime.GOMAXPROCS(0) == 1 }, 5*time.Second, time.Millisecond)
	cancel()
	<-done
	require.Equal(t, before, runtime.GOMAXPROCS(0), "stopped, it leaves the runtime's default")
}

func TestProcsLeavesAnOperatorsGOMAXPROCS(t *testing.T) {
	t.Setenv("GOMAXPROCS", "2")
	before := runtime.GOMAXPROCS(0)
	// Run returns at once, without a context that ends.
	(&Procs{Tick: time.Millisecond, Low: 1, Calm: 1}).Run(context.Background())
	require.Equal(t, before, runtime.GOMAXPROCS(0))
}
