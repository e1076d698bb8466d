package main

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestReclaimerLooksForEndedLeasesWhenTheEarliestEnds(t *testing.T) {
	r := &reclaimer{w: &Worker{LeaseMargin: 5 * time.Second}}
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	require.Equal(t, 2*time.Second, r.endedLook(now, time.Time{}, 0, nil), "no lease runs: the longest wait")
	require.Equal(t, 301*time.Millisecond, r.endedLook(now, now.Add(300*time.Millisecond), 0, nil), "just after the earliest lease ends")
	require.Equal(t, 2*time.Second, r.endedLook(now, now.Add(time.Minute), 0, nil), "a lease made after this look is seen at the next")
	require.Equal(t, endedPoll, r.endedLook(now, now.Add(-time.Second), 0, nil), "one has ended: soon, as it may not be claimable yet")
	require.Equal(t, endedPoll, r.endedLook(now, now, 3, nil), "claimed some: more may have ended")
	require.Equal(t, endedPoll, r.endedLook(now, time.Time{}, 0, errors.New("down")), "failed")
	small := &reclaimer{w: &Worker{LeaseMargin: 0}}
	require.Equal(t, endedPoll, small.endedLook(now, time.Time{}, 0, nil), "a lease may end 100 ms after it is made: as often as before")
}
