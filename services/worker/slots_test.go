package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSlotPool(t *testing.T) {
	t.Parallel()
	p := newSlotPool(4)
	require.Equal(t, 3, p.take(t.Context(), 3), "as many as asked while free")
	require.Equal(t, 1, p.take(t.Context(), 3), "then what is left")

	// All taken: take waits for a slot given back, then takes what is free.
	got := make(chan int)
	go func() { got <- p.take(t.Context(), 4) }()
	select {
	case n := <-got:
		t.Fatalf("took %d slots while none was free", n)
	case <-time.After(20 * time.Millisecond):
	}
	p.give(2)
	select {
	case n := <-got:
		require.Positive(t, n)
		require.LessOrEqual(t, n, 2)
		p.give(n)
	case <-time.After(10 * time.Second):
		t.Fatal("take did not return when slots were given back")
	}

	// A take that waits ends with its context, taking nothing.
	full := newSlotPool(1)
	require.Equal(t, 1, full.take(t.Context(), 1))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	require.Zero(t, full.take(ctx, 1))
	full.give(1)
	require.Equal(t, 1, full.take(t.Context(), 5), "the slot given back is free again")
}
