package store

import (
	"context"
	"fmt"
	"math/bits"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/schedule"
)

// Rates are an owner's limits on how often their scheduled recurring jobs
// may fire together: PerMinute in their busiest minute, PerSecond in their
// busiest second; 0 is no cap. Both count where the jobs' loads (job.Load)
// overlap, so a burst counts in full where it happens, however quiet the
// rest of the hour.
type Rates struct {
	PerMinute, PerSecond int
}

// capped reports whether either rate caps anything.
func (r Rates) capped() bool { return r.PerMinute > 0 || r.PerSecond > 0 }

// RateError refuses recurring jobs that would make their owner's busiest
// minute or second pass a limit of Rates.
type RateError struct {
	// Per is time.Minute or time.Second: the limit passed.
	Per time.Duration
	// At is where in the UTC day that minute or second starts.
	At time.Duration
	// Count is how often the owner's scheduled recurring jobs would fire in
	// it, those being created or changed included, and Max the limit.
	Count, Max int
	// Jobs is how many jobs were being created or changed.
	Jobs int
}

func (e *RateError) Error() string {
	return fmt.Sprintf("%d occurrences in the busiest %s (%s UTC) would pass the limit of %d", e.Count, e.Unit(), e.When(), e.Max)
}

// Unit is "minute" or "second".
func (e *RateError) Unit() string {
	if e.Per == time.Second {
		return "second"
	}
	return "minute"
}

// When is At as a time of day, hh:mm for a minute, hh:mm:ss for a second.
func (e *RateError) When() string {
	t := time.Time{}.Add(e.At)
	if e.Per == time.Second {
		return t.Format("15:04:05")
	}
	return t.Format("15:04")
}

// loadGroupsSQL counts an owner's scheduled recurring jobs by load, but for
// one job (being edited), through the index of active jobs; only the loads
// that share an hour and a minute with $3 and $4 (those of the jobs being
// added) can make the minutes and seconds they fire in busier.
const loadGroupsSQL = `SELECT load_hours, load_minutes, load_seconds, count(*) FROM jobs
WHERE owner_id = $1 AND status IN ('scheduled', 'paused') AND status = 'scheduled' AND load_seconds IS NOT NULL AND id <> $2
  AND load_hours & $3 <> 0 AND load_minutes & $4 <> 0
GROUP BY 1, 2, 3`

// checkRates fails with a *RateError when the owner's scheduled recurring
// jobs, but for except, and jobs of the adding loads would fire more often
// than rates allow in a minute or a second that one of the adding loads
// fires in. The minutes and seconds the new jobs stay out of are not looked
// at: a job that adds nothing to them cannot make them worse, even where an
// administrator lowered the limit below what the owner already has. The
// caller holds the owner's lock (lockOwnerSQL).
func checkRates(ctx context.Context, tx pgx.Tx, owner, except uuid.UUID, adding []job.Load, rates Rates) error {
	var hours uint32
	var minutes uint64
	for _, l := range adding {
		hours, minutes = hours|l.Hours, minutes|l.Minutes
	}
	rows, err := tx.Query(ctx, loadGroupsSQL, owner, except, int32(hours), int64(minutes))
	if err != nil {
		return fmt.Errorf("count loads: %w", translate(err))
	}
	groups, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (loadGroup, error) {
		var h int32
		var m, s int64
		var g loadGroup
		err := r.Scan(&h, &m, &s, &g.jobs)
		g.load = job.Load{Hours: uint32(h), Minutes: uint64(m), Seconds: uint64(s)}
		return g, err
	})
	if err != nil {
		return fmt.Errorf("count loads: %w", translate(err))
	}
	minute, second := busiest(groups, adding)
	switch {
	case rates.PerMinute > 0 && minute.n > rates.PerMinute:
		return &RateError{Per: time.Minute, At: minute.at, Count: minute.n, Max: rates.PerMinute, Jobs: len(adding)}
	case rates.PerSecond > 0 && second.n > rates.PerSecond:
		return &RateError{Per: time.Second, At: second.at, Count: second.n, Max: rates.PerSecond, Jobs: len(adding)}
	}
	return nil
}

// loadGroup is a number of jobs of one load.
type loadGroup struct {
	load job.Load
	jobs int
}

// peak is a busiest minute or second: where in the UTC day it starts, and
// how many occurrences it holds.
type peak struct {
	at time.Duration
	n  int
}

// busiest returns the busiest minute and second of the jobs of groups and of
// adding together, among the minutes and seconds the adding loads fire in
// (the earliest of equals). A job fires in a minute (h, m) as often as its
// seconds mask has bits, if its load has h and m, and in a second (h, m, s)
// once, if its load has all three.
//
// The work is bounded per (hour, minute) a group shares with the adding
// loads, not per second: a group whose seconds mask is full (a job that
// fires every second of its minutes) adds to its minutes as a whole, and
// the others only in the seconds the adding loads fire in. Since a group of
// n jobs adds at least n to each minute it is counted in, the work is at
// most the owner's occurrences in those minutes, which the limit keeps to
// 1,440 times occurrences_per_minute.
func busiest(groups []loadGroup, adding []job.Load) (minute, second peak) {
	const cells = 24 * 60 // (hour, minute) of the UTC day: hour*60 + minute
	var (
		// touched are the seconds the adding loads fire in, per cell.
		touched [cells]uint64
		// perMinute counts occurrences per cell, whole counts the jobs
		// that fire in every second of a cell, and perSecond the others, in
		// the touched seconds of a cell (allocated as needed).
		perMinute, whole [cells]int
		perSecond        [cells]*[60]int
		hours            uint32
		minutes          uint64
	)
	same := map[job.Load]int{}
	for _, l := range adding {
		if l.Empty() {
			continue
		}
		if same[l]++; same[l] > 1 {
			continue
		}
		hours, minutes = hours|l.Hours, minutes|l.Minutes
		forCells(l.Hours, l.Minutes, func(c int) { touched[c] |= l.Seconds })
	}
	count := func(l job.Load, n int) {
		h, m := l.Hours&hours, l.Minutes&minutes
		if h == 0 || m == 0 || l.Empty() {
			return
		}
		per := n * l.PerMinute()
		forCells(h, m, func(c int) {
			t := touched[c]
			if t == 0 {
				return
			}
			perMinute[c] += per
			if l.Seconds&job.AllSeconds == job.AllSeconds {
				whole[c] += n
				return
			}
			for hit := l.Seconds & t; hit != 0; hit &= hit - 1 {
				if perSecond[c] == nil {
					perSecond[c] = new([60]int)
				}
				perSecond[c][bits.TrailingZeros64(hit)] += n
			}
		})
	}
	for _, g := range groups {
		count(g.load, g.jobs)
	}
	for l, n := range same {
		count(l, n)
	}
	for c, t := range touched {
		if t == 0 {
			continue
		}
		if perMinute[c] > minute.n {
			minute = peak{at: time.Duration(c) * time.Minute, n: perMinute[c]}
		}
		for ; t != 0; t &= t - 1 {
			s := bits.TrailingZeros64(t)
			n := whole[c]
			if perSecond[c] != nil {
				n += perSecond[c][s]
			}
			if n > second.n {
				second = peak{at: time.Duration(c)*time.Minute + time.Duration(s)*time.Second, n: n}
			}
		}
	}
	return minute, second
}

// forCells calls f with every (hour, minute) cell of hours × minutes.
func forCells(hours uint32, minutes uint64, f func(c int)) {
	for h := hours & job.AllHours; h != 0; h &= h - 1 {
		base := bits.TrailingZeros32(h) * 60
		for m := minutes & job.AllMinutes; m != 0; m &= m - 1 {
			f(base + bits.TrailingZeros64(m))
		}
	}
}

// BackfillBatch is how many jobs BackfillLoads reads and fills in per
// statement.
const BackfillBatch = 300

// unknownLoadsSQL finds the next recurring jobs that can still run and have
// no load yet, through jobs_load_unknown.
const unknownLoadsSQL = `SELECT id, generation, occurrences, schedule, coalesce(jitter_offset_ms, 0) FROM jobs
WHERE load_seconds IS NULL AND schedule IS NOT NULL AND status IN ('scheduled', 'paused') AND id > $1
ORDER BY id
LIMIT $2`

// fillLoadsSQL writes the loads of jobs that still have none and whose
// schedule did not change since it was read (a dashboard of the previous
// release may have edited it meanwhile, and would have left it NULL).
const fillLoadsSQL = `UPDATE jobs j SET load_hours = u.hours, load_minutes = u.minutes, load_seconds = u.seconds
FROM unnest($1::uuid[], $2::integer[], $3::integer[], $4::bigint[], $5::bigint[]) AS u(id, generation, hours, minutes, seconds)
WHERE j.id = u.id AND j.generation = u.generation AND j.load_seconds IS NULL`

// BackfillLoads fills in the load of every recurring job that can still run
// and has none: those stored before loads were kept (migration 023), or by
// a dashboard of the previous release during a rolling upgrade. Until then
// such a job is not counted by the owner's rates. It goes in batches of
// BackfillBatch, each job's load computed from now (see
// schedule.Schedule.Load) within a request's schedule units, each row
// written only if it still has none. It returns how many it filled in, and
// how many it could not (a schedule that no longer compiles, or needs more
// than the budget): those stay uncounted, and the next start tries again.
func (s *Store) BackfillLoads(ctx context.Context, now time.Time) (filled, skipped int, err error) {
	type row struct {
		id          uuid.UUID
		generation  int32
		occurrences int
		schedule    []byte
		jitterMs    int64
	}
	after := uuid.Nil
	for {
		rows, err := s.pool.Query(ctx, unknownLoadsSQL, after, BackfillBatch)
		if err != nil {
			return filled, skipped, fmt.Errorf("backfill loads: %w", translate(err))
		}
		batch, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
			var x row
			err := r.Scan(&x.id, &x.generation, &x.occurrences, &x.schedule, &x.jitterMs)
			return x, err
		})
		if err != nil {
			return filled, skipped, fmt.Errorf("backfill loads: %w", translate(err))
		}
		if len(batch) == 0 {
			return filled, skipped, nil
		}
		var (
			ids              []uuid.UUID
			gens, hours      []int32
			minutes, seconds []int64
		)
		for _, x := range batch {
			// A request's units without its time: on a dashboard busy
			// starting up, a deadline would skip jobs at random, and the
			// units bound the work of each as well.
			b := schedule.NewBudget(ctx, schedule.RequestUnits, 0)
			sched, err := jitteredSchedule(b, x.schedule, x.jitterMs)
			if err != nil {
				skipped++
				continue
			}
			l := sched.Load(now.Add(-time.Millisecond), x.occurrences)
			if b.Err() != nil {
				skipped++
				continue
			}
			ids, gens = append(ids, x.id), append(gens, x.generation)
			hours, minutes, seconds = append(hours, int32(l.Hours)), append(minutes, int64(l.Minutes)), append(seconds, int64(l.Seconds))
		}
		if err := ctx.Err(); err != nil {
			return filled, skipped, fmt.Errorf("backfill loads: %w", err)
		}
		if len(ids) > 0 {
			tag, err := s.pool.Exec(ctx, fillLoadsSQL, ids, gens, hours, minutes, seconds)
			if err != nil {
				return filled, skipped, fmt.Errorf("backfill loads: %w", translate(err))
			}
			filled += int(tag.RowsAffected())
		}
		after = batch[len(batch)-1].id
	}
}
