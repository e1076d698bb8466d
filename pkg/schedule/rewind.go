package schedule

import "time"

// Rewind moves a recurrence's cursor back to its first occurrence after from,
// for when occurrences already handed out must be planned again (a priority
// change, a resume, Redis losing what it held). cursor is the old cursor (the
// next occurrence not yet handed out; zero if the recurrence had ended, with
// lastAt its final occurrence) and used the occurrences counted so far. It
// returns the new cursor (zero when nothing is left) and the count with the
// handed-out-but-replanned occurrences given back.
func (s *Schedule) Rewind(from, cursor, lastAt time.Time, used int) (next time.Time, stillUsed int) {
	next, ok := s.Next(from)
	end := cursor
	if end.IsZero() && !lastAt.IsZero() {
		end = lastAt.Add(time.Millisecond)
	}
	replanned := 0
	for t, more := next, ok; more && t.Before(end) && replanned < 1_000_000; t, more = s.Next(t) {
		replanned++
	}
	used = max(0, used-replanned)
	if !ok || (s.Count() > 0 && used >= s.Count()) {
		return time.Time{}, used
	}
	return next, used
}
