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
