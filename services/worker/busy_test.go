package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestBusyCountsTheMostAttemptsCallingAtOnceSinceTheLastLook(t *testing.T) {
	w := &Worker{busyNow: make(chan struct{}, 1)}
	require.False(t, w.Busy())
	var dones []func()
	for range busyCalls {
		dones = append(dones, w.call())
	}
	require.Empty(t, w.busyNow, "not yet more than busyCalls")
	dones = append(dones, w.call())
	require.Len(t, w.busyNow, 1, "told as it passes busyCalls")
	for _, done := range dones {
		done()
	}
	require.True(t, w.Busy(), "the peak since the last look counts, not what calls now")
	require.False(t, w.Busy(), "a look starts the next peak from what calls now")
	done := w.call()
	defer done()
	require.False(t, w.Busy())
}
