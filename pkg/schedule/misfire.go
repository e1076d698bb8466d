package schedule

import (
	"fmt"
	"time"
)

// Misfired decides whether the occurrence due at `at`, starting now (late by
// now-at), runs or is skipped under the schedule's misfire policy. An
// occurrence counts as missed only when it is more than threshold late:
//
//   - not missed (now-at <= threshold): it runs.
//   - "skip": it is skipped.
//   - "run_once": it runs only if it is the latest missed occurrence, that is
//     Next(at) is after now; otherwise a later occurrence supersedes it.
//   - "catch_up": it runs if fewer than misfire_max occurrences lie in
//     (at, now]; the oldest beyond that bound are skipped.
//
// reason says why an occurrence is skipped: "misfire skip", "superseded by
// <RFC 3339 time>" or "beyond catch_up bound of N". The work done is bounded
// by misfire_max calls to Next.
func (s *Schedule) Misfired(at, now time.Time, threshold time.Duration) (run bool, reason string) {
	if now.Sub(at) <= threshold {
		return true, ""
	}
	switch s.spec.Misfire {
	case MisfireSkip:
		return false, "misfire skip"
	case MisfireCatchUp:
		bound := s.spec.MisfireMax
		later, t := 0, at
		for later < bound {
			next, ok := s.Next(t)
			if !ok || next.After(now) {
				return true, ""
			}
			later++
			t = next
		}
		return false, fmt.Sprintf("beyond catch_up bound of %d", bound)
	default: // run_once
		if next, ok := s.Next(at); ok && !next.After(now) {
			return false, "superseded by " + next.Format(time.RFC3339)
		}
		return true, ""
	}
}

// LastBefore returns the last k occurrences in [from, t], oldest first: k of
// them, or fewer when fewer exist. It searches backwards from t in windows
// that grow with what each one finds, so its cost follows the occurrences
// it finds rather than the distance back to from. It returns nil when the
// budget runs out (see Err).
func (s *Schedule) LastBefore(from, t time.Time, k int) []time.Time {
	if k <= 0 || t.Before(from) {
		return nil
	}
	window := time.Second
	for {
		lo := t.Add(-window)
		if lo.Before(from) {
			lo = from
		}
		// The last k occurrences in [lo, t], in a ring.
		ring := make([]time.Time, 0, min(k, 1024))
		n := 0
		at, ok := s.Next(lo.Add(-time.Millisecond))
		for ok && !at.After(t) {
			if len(ring) < k {
				ring = append(ring, at)
			} else {
				ring[n%k] = at
			}
			n++
			at, ok = s.Next(at)
		}
		if s.Err() != nil {
			return nil
		}
		if n >= k || lo.Equal(from) {
			if n > k {
				// Rotate the ring so that the oldest comes first.
				ring = append(ring[n%k:], ring[:n%k]...)
			}
			return ring
		}
		// Grow to where k occurrences should lie at the density seen so
		// far, twice over; with none seen, much further.
		grow := time.Duration(16)
		if n > 0 {
			grow = time.Duration(min(max(2*k/n, 2), 1024))
		}
		if window > time.Duration(1<<62)/grow {
			window = t.Sub(from) + time.Millisecond
		} else {
			window *= grow
		}
	}
}
