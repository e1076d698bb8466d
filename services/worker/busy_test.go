package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestBusyCountsTheMostAttemptsCallingAtOnceSinceTheLastLook(t *testing.T) {
	w := &Worker{busyNow: make(chan struct{}, 1)}
	require.False(t, w.Busy())
	for range busyCalls {
		w.startCall()
	}
	require.Empty(t, w.busyNow, "not yet more than busyCalls")
	w.startCall()
	require.Len(t, w.busyNow, 1, "told as it passes busyCalls")
	for range busyCalls + 1 {
		w.endCall()
	}
	require.True(t, w.Busy(), "the peak since the last look counts, not what calls now")
	require.False(t, w.Busy(), "a look starts the next peak from what calls now")
	w.startCall()
	defer w.endCall()
	require.False(t, w.Busy())
}

func TestBusyCountsAReadThatFillsEverySlotAsABacklog(t *testing.T) {
	w := &Worker{busyNow: make(chan struct{}, 1)}
	w.readFull(50, 256)
	require.Empty(t, w.busyNow, "a steady load's read leaves slots free")
	w.readFull(busyCalls, busyCalls)
	require.Empty(t, w.busyNow, "a full read of busyCalls slots is no backlog")
	require.False(t, w.Busy())
	w.readFull(256, 256)
	require.Len(t, w.busyNow, 1, "a full read tells at once")
	require.True(t, w.Busy())
	require.False(t, w.Busy())
}
