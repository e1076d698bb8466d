package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestAnalyse(t *testing.T) {
	t.Parallel()
	due := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(ms int) time.Time { return due.Add(time.Duration(ms) * time.Millisecond) }
	ds := []delivery{
		{jobID: "a", scheduled: due, at: at(10), attempt: 1},
		{jobID: "b", scheduled: due, at: at(30), attempt: 1},
		{jobID: "a", scheduled: due, at: at(50), attempt: 1},                       // redelivery
		{jobID: "c", scheduled: due, at: at(-1), attempt: 1},                       // early
		{jobID: "d", scheduled: due.Add(time.Hour), at: at(3_600_000), attempt: 1}, // another phase's
	}
	st := analyse(ds, due, due.Add(time.Millisecond))

	t.Run("CountsEachOccurrenceOnce", func(t *testing.T) {
		require.Len(t, st.lateness, 3)
		require.Equal(t, 1, st.duplicates)
		require.Equal(t, 1, st.stray)
	})
	t.Run("CountsEarlyDeliveries", func(t *testing.T) {
		require.Equal(t, 1, st.early)
		require.Equal(t, -1.0, st.lateness.quantile(0))
	})
	t.Run("LastStartIsTheLastFirstDelivery", func(t *testing.T) {
		require.Equal(t, at(30), st.lastAt)
	})
}

func TestQuantile(t *testing.T) {
	t.Parallel()
	l := make(latencies, 100)
	for i := range l {
		l[i] = time.Duration(i+1) * time.Millisecond
	}
	for _, tc := range []struct {
		q    float64
		want float64
	}{{0.5, 50}, {0.99, 99}, {1, 100}, {0, 1}} {
		require.Equal(t, tc.want, l.quantile(tc.q), "q=%v", tc.q)
	}
	require.Zero(t, latencies(nil).quantile(0.5))
}

func TestParseFlags(t *testing.T) {
	t.Parallel()
	t.Run("QuickShrinksTheSizes", func(t *testing.T) {
		c, err := parseFlags([]string{"-quick"})
		require.NoError(t, err)
		require.Equal(t, 10_000, c.burst)
		require.Equal(t, 10*time.Second, c.steadyFor)
		require.Equal(t, 10_000, c.steadyJobs())
	})
	t.Run("AnExplicitSizeWinsOverQuick", func(t *testing.T) {
		c, err := parseFlags([]string{"-quick", "-burst", "500"})
		require.NoError(t, err)
		require.Equal(t, 500, c.burst)
	})
	t.Run("ReportsEveryProblem", func(t *testing.T) {
		_, err := parseFlags([]string{"-workers", "0", "-ingest-batch", "20000"})
		require.ErrorContains(t, err, "-workers")
		require.ErrorContains(t, err, "-ingest-batch")
	})
}
