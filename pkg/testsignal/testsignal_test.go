package testsignal_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/testsignal"
)

func TestSignal(t *testing.T) {
	t.Parallel()
	var off *testsignal.Signal
	off.Signal() // a nil signal is off, not a panic

	s := testsignal.New()
	var n atomic.Int32
	go func() {
		for range 3 {
			n.Add(1)
			s.Signal()
		}
	}()
	require.True(t, s.WaitFor(10*time.Second, func() bool { return n.Load() == 3 }))
	require.False(t, s.WaitFor(10*time.Millisecond, func() bool { return false }), "no signal: the wait ends at its timeout")
}
