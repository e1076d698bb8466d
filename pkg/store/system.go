package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// MinuteCount is how many of something fall in the minute starting at Minute.
type MinuteCount struct {
	Minute time.Time
	Count  int64
}

// MinuteRuns is how many attempts in one status started in one minute.
type MinuteRuns struct {
	Minute time.Time
	Status string
	Count  int64
}

// MinuteLateness is the lateness (start minus due time) of the attempts that
// started in one minute: its median and 99th percentile in milliseconds.
type MinuteLateness struct {
	Minute time.Time
	P50MS  float64
	P99MS  float64
	Runs   int64
}

// System is what the operators' system page shows of Postgres: the hour
// ahead and the hour behind, minute by minute.
type System struct {
	DueNextHour []MinuteCount
	Runs        []MinuteRuns
	Lateness    []MinuteLateness
}

// systemRunsLookback bounds how long before its start an attempt's occurrence
// may have been scheduled to be counted, so the run queries read only the
// recent partitions of job_runs. An attempt that started in the last hour for
// an occurrence more than a day older (a long-retried one) is left out.
const systemRunsLookback = 24 * time.Hour

// dueNextHourSQL counts the scheduled jobs whose next unloaded occurrence
// (due_at) is in [$1, $1 + 1 hour), per minute; the hour partitions' due_at
// index serves it. Occurrences already loaded into Redis are counted there.
const dueNextHourSQL = `SELECT date_trunc('minute', due_at) AS minute, count(*)
FROM jobs
WHERE status = 'scheduled' AND due_at >= $1::timestamptz AND due_at < $1::timestamptz + interval '1 hour'
GROUP BY 1 ORDER BY 1`

// runsPerMinuteSQL counts the attempts started in [$1 - 1 hour, $1) per
// minute and status.
const runsPerMinuteSQL = `SELECT date_trunc('minute', started_at) AS minute, status::text, count(*)
FROM job_runs
WHERE started_at >= $1::timestamptz - interval '1 hour' AND started_at < $1 AND scheduled_for >= $2
GROUP BY 1, 2 ORDER BY 1, 2`

// latenessSQL is the median and 99th percentile lateness of the attempts
// started in [$1 - 1 hour, $1), per minute.
const latenessSQL = `SELECT date_trunc('minute', started_at) AS minute,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM started_at - due_at - coalesce(throttled_ms, 0) * interval '1 millisecond') * 1000),
       percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM started_at - due_at - coalesce(throttled_ms, 0) * interval '1 millisecond') * 1000),
       count(*)
FROM job_runs
WHERE started_at >= $1::timestamptz - interval '1 hour' AND started_at < $1 AND scheduled_for >= $2
GROUP BY 1 ORDER BY 1`

// System reads the figures of the hour around now, over every owner: the
// hour ahead starts at now's minute. Minutes with nothing in them are absent.
func (s *Store) System(ctx context.Context, now time.Time) (*System, error) {
	var out System
	since := now.Add(-time.Hour - systemRunsLookback)
	rows, err := s.pool.Query(ctx, dueNextHourSQL, now.Truncate(time.Minute))
	if err != nil {
		return nil, fmt.Errorf("system due: %w", translate(err))
	}
	out.DueNextHour, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (MinuteCount, error) {
		var m MinuteCount
		err := r.Scan(&m.Minute, &m.Count)
		return m, err
	})
	if err != nil {
		return nil, fmt.Errorf("system due: %w", translate(err))
	}
	rows, err = s.pool.Query(ctx, runsPerMinuteSQL, now, since)
	if err != nil {
		return nil, fmt.Errorf("system runs: %w", translate(err))
	}
	out.Runs, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (MinuteRuns, error) {
		var m MinuteRuns
		err := r.Scan(&m.Minute, &m.Status, &m.Count)
		return m, err
	})
	if err != nil {
		return nil, fmt.Errorf("system runs: %w", translate(err))
	}
	rows, err = s.pool.Query(ctx, latenessSQL, now, since)
	if err != nil {
		return nil, fmt.Errorf("system lateness: %w", translate(err))
	}
	out.Lateness, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (MinuteLateness, error) {
		var m MinuteLateness
		err := r.Scan(&m.Minute, &m.P50MS, &m.P99MS, &m.Runs)
		return m, err
	})
	if err != nil {
		return nil, fmt.Errorf("system lateness: %w", translate(err))
	}
	return &out, nil
}
