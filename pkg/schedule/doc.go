// Package schedule is tock's recurrence engine: it validates the "schedule"
// object of a recurring job (cron, RFC 5545 RRULE, or the every/at/on
// shorthand), compiles it, and answers "when is the next occurrence after t".
//
// # Wall-clock evaluation
//
// Every rule is evaluated over local wall-clock times in the schedule's IANA
// time zone (default UTC), never over instants. The cron or RRULE library
// iterates in a naive frame (UTC used as a wall clock, with no transitions), so
// no library's own DST handling ever decides anything; each wall time w it
// yields is then converted to instants in the zone as follows:
//
//   - w exists once: that instant.
//   - w falls in a gap (clocks spring forward, e.g. 02:30 on 2026-03-29 in
//     Europe/Berlin): with dst.gap "shift" (the default) the occurrence moves
//     to the first instant after the gap, the transition itself (03:00 CEST,
//     01:00Z); with dst.gap "skip" that wall time has no occurrence.
//   - w occurs twice (clocks fall back, e.g. 02:30 on 2026-10-25 in
//     Europe/Berlin): with dst.overlap "first" (the default) only the earlier
//     instant (02:30 CEST, 00:30Z); with dst.overlap "both" both instants
//     (00:30Z and 01:30Z).
//
// The occurrences of a schedule are the set of all instants so produced, in
// increasing order: an instant produced by two wall times (an hourly rule's
// shifted 02:00 and its real 03:00 are both 01:00Z in Berlin on 2026-03-29)
// is one occurrence, and with overlap "both" the repeated hour's occurrences
// are interleaved in time order. So a change of offset never skips or doubles
// a run except where the policy says so: "skip" drops wall times that do not
// exist, "both" runs the repeated ones twice.
//
// # Fields taken from start_at
//
// start_at (default: creation time) bounds the schedule: no occurrence lies
// before it. An RRULE is anchored at start_at's wall clock in the zone, as its
// DTSTART: parts the rule leaves out (the time of day of FREQ=DAILY, the
// weekday of FREQ=WEEKLY, the phase of INTERVAL) come from there. One
// deliberate departure from RFC 5545: a rule that names a time of day means
// it exactly, so BYHOUR=9 is 09:00:00 and BYMINUTE=30 is hh:30:00; the finer
// parts it omits are zero, not start_at's minute or second. every=week
// and every=month without "on" run on start_at's weekday or day of month.
// The normalized spec (Schedule.Spec) records every such default, so storing
// it and compiling it again gives the same occurrences.
//
// # RRULE
//
// One RFC 5545 RRULE line (an "RRULE:" prefix is accepted; case and blanks do
// not matter), evaluated by rrule-go. DTSTART, COUNT and UNTIL are refused
// because start_at, count and end_at say those, and BYEASTER is not
// supported. BYDAY ordinals (1MO, -1FR) need FREQ=MONTHLY or FREQ=YEARLY.
//
// # Cron
//
// Cron has 5 fields (minute hour day-of-month month day-of-week) or 6 with a
// leading seconds field, plus the descriptors @yearly, @monthly, @weekly,
// @daily, @midnight and @hourly. Day-of-month and day-of-week combine as in
// crontab(5): when both are restricted, a day matching either one runs. The
// Quartz extensions L, L-n, nW and LW (day of month) and DAY#n, DAY#L (nth or
// last weekday of the month, e.g. "0 9 * * 1#1") are accepted. A time zone
// prefix (CRON_TZ=) and @every are refused: the zone is the timezone field, and
// fixed intervals are a 6-field cron or an RRULE with INTERVAL.
//
// # Bounds
//
// Every search is bounded: Next looks at most 50 years past its argument (and
// never past year 9999) and gives up after a fixed number of candidate wall
// times, so no input can hang a caller. An RRULE whose expansion within one
// FREQ period would exceed 10,000 occurrences is refused (use a finer FREQ).
package schedule

import (
	// Embed the IANA database so zones resolve in minimal container images.
	_ "time/tzdata"
)
