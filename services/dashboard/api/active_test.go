package api

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// TestActiveCounts: a single create skips the exact cap check only while
// the owner's count, at most a second old, plus what this dashboard has
// created and is creating since, stays within nine tenths of the cap.
func TestActiveCounts(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)
	counted, counts := 0, 0
	var countErr error
	a := newActiveCounts(func(context.Context, uuid.UUID) (int, error) {
		counts++
		return counted, countErr
	}, func() time.Time { return now })
	owner := uuid.New()
	ctx := t.Context()

	counted = 898
	first, ok := a.reserve(ctx, owner, 1, 1000)
	require.True(t, ok, "899 of 1,000 is within nine tenths")
	_, ok = a.reserve(ctx, owner, 1, 1000)
	require.True(t, ok, "900: the one being created counts")
	_, ok = a.reserve(ctx, owner, 1, 1000)
	require.False(t, ok, "901 is past nine tenths: the exact check")
	require.Equal(t, 1, counts, "one count a second")

	first(false) // that create failed: its room is given back
	_, ok = a.reserve(ctx, owner, 1, 1000)
	require.True(t, ok)

	now = now.Add(1500 * time.Millisecond)
	counted = 100
	done, ok := a.reserve(ctx, owner, 1, 1000)
	require.True(t, ok)
	require.Equal(t, 2, counts, "counted again after a second")
	done(true)

	_, ok = a.reserve(ctx, owner, 2, 1000)
	require.False(t, ok, "a bulk create is always checked exactly")
	_, ok = a.reserve(ctx, uuid.New(), 1, 99)
	require.False(t, ok, "a small cap is always checked exactly")

	now = now.Add(2 * time.Second)
	countErr = errors.New("postgres is down")
	_, ok = a.reserve(ctx, owner, 1, 1000)
	require.False(t, ok, "without a count, the exact check")
}
