package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestGather: a gather takes what waits at once, what comes within its
// window after, and stops at most; with no window it takes only what waits.
func TestGather(t *testing.T) {
	t.Parallel()
	add := func(got *[]int) func(int) int {
		return func(v int) int { *got = append(*got, v); return 1 }
	}

	t.Run("TakesWhatComesWithinTheWindow", func(t *testing.T) {
		t.Parallel()
		ch := make(chan int, 8)
		ch <- 1
		go func() {
			time.Sleep(20 * time.Millisecond)
			ch <- 2
		}()
		var got []int
		gather(&window{d: 200 * time.Millisecond}, ch, 0, 10, add(&got))
		require.Equal(t, []int{1, 2}, got)
	})

	t.Run("StopsAtMostWithoutWaiting", func(t *testing.T) {
		t.Parallel()
		ch := make(chan int, 8)
		for i := range 5 {
			ch <- i
		}
		var got []int
		start := time.Now()
		gather(&window{d: time.Hour}, ch, 0, 3, add(&got))
		require.Equal(t, []int{0, 1, 2}, got)
		require.Less(t, time.Since(start), time.Minute, "a full batch does not wait out the window")
	})

	t.Run("NoWindowTakesOnlyWhatWaits", func(t *testing.T) {
		t.Parallel()
		ch := make(chan int, 8)
		ch <- 7
		var got []int
		gather(&window{}, ch, 0, 10, add(&got))
		require.Equal(t, []int{7}, got)
	})

	t.Run("AClosedChannelEndsIt", func(t *testing.T) {
		t.Parallel()
		ch := make(chan int, 8)
		ch <- 1
		close(ch)
		var got []int
		gather(&window{d: time.Hour}, ch, 0, 10, add(&got))
		require.Equal(t, []int{1}, got)
	})
}
