package api

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/tockhq/tock/services/dashboard/apierr"
)

// MinuteCount is a count in the minute that starts at Minute.
type MinuteCount struct {
	Minute Time  `json:"minute"`
	Count  int64 `json:"count"`
}

// MinuteRuns counts the attempts that started in one minute, by status.
type MinuteRuns struct {
	Minute Time             `json:"minute"`
	Counts map[string]int64 `json:"counts"`
}

// MinuteLateness is the median and 99th percentile lateness (start minus due
// time) of the attempts that started in one minute.
type MinuteLateness struct {
	Minute Time    `json:"minute"`
	P50MS  float64 `json:"p50_ms"`
	P99MS  float64 `json:"p99_ms"`
	Runs   int64   `json:"runs"`
}

// QueueStats are the sizes of the Redis structures between the scheduler and
// the workers.
type QueueStats struct {
	// Due is the due sorted set's size: occurrences waiting for their time.
	Due int64 `json:"due"`
	// Stream is the ready stream's length, pending entries included.
	Stream int64 `json:"stream"`
	// Pending is how many entries workers hold unacknowledged.
	Pending int64 `json:"pending"`
	// Held is how many due occurrences wait for their owner or their target
	// host to have fewer attempts in flight (fair dispatch).
	Held int64 `json:"held"`
}

// SchedulerStatus is what Redis tells of the schedulers: whether one holds
// the loader lock, and for how much longer unless it renews it.
type SchedulerStatus struct {
	LoaderLockHeld  bool  `json:"loader_lock_held"`
	LoaderLockTTLMS int64 `json:"loader_lock_ttl_ms"`
}

// Scheduler is one scheduler instance, as its heartbeats (every second) tell it.
type Scheduler struct {
	Name     string `json:"name"`
	LastSeen Time   `json:"last_seen"`
	// Leader says it holds the loader lock: it loads from Postgres.
	Leader bool `json:"leader"`
}

// Worker is one consumer of the ready stream's group.
type Worker struct {
	Name    string `json:"name"`
	Pending int64  `json:"pending"`
	IdleMS  int64  `json:"idle_ms"`
}

// System is the answer of GET /api/v1/system: the hour ahead, the hour
// behind, the queue and the instances, as of GeneratedAt.
type System struct {
	GeneratedAt Time             `json:"generated_at"`
	DueNextHour []MinuteCount    `json:"due_next_hour"`
	Queue       QueueStats       `json:"queue"`
	Runs        []MinuteRuns     `json:"runs"`
	Lateness    []MinuteLateness `json:"lateness"`
	Scheduler   SchedulerStatus  `json:"scheduler"`
	Schedulers  []Scheduler      `json:"schedulers"`
	Workers     []Worker         `json:"workers"`
}

// system answers the operators' figures. Minutes with nothing in them are
// left out; the page fills them in.
func (s *Server) system(c *echo.Context) error {
	ctx := c.Request().Context()
	now := s.clock().UTC()
	pg, err := s.store.System(ctx, now)
	if err != nil {
		return apierr.Dependency(err)
	}
	st, err := s.queue.Stats(ctx)
	if err != nil {
		return apierr.Dependency(err)
	}
	loaded, err := s.queue.DuePerMinute(ctx, now, 60)
	if err != nil {
		return apierr.Dependency(err)
	}
	held, ttl, err := s.queue.Home().LoaderLockTTL(ctx)
	if err != nil {
		return apierr.Dependency(err)
	}
	consumers, err := s.queue.Consumers(ctx)
	if err != nil {
		return apierr.Dependency(err)
	}
	schedulers, err := s.queue.Home().Schedulers(ctx)
	if err != nil {
		return apierr.Dependency(err)
	}
	out := System{
		GeneratedAt: Time{now},
		DueNextHour: []MinuteCount{},
		Queue:       QueueStats{Due: st.Due, Stream: st.Ready, Pending: st.Pending, Held: st.Held},
		Runs:        []MinuteRuns{},
		Lateness:    make([]MinuteLateness, 0, len(pg.Lateness)),
		Scheduler:   SchedulerStatus{LoaderLockHeld: held, LoaderLockTTLMS: ttl.Milliseconds()},
		Schedulers:  make([]Scheduler, 0, len(schedulers)),
		Workers:     make([]Worker, 0, len(consumers)),
	}
	for _, i := range schedulers {
		out.Schedulers = append(out.Schedulers, Scheduler{Name: i.Name, LastSeen: Time{i.LastSeen}, Leader: i.Leader})
	}
	// An occurrence is either loaded into the due set or still in Postgres
	// as a job's due_at, never both: the loader advances due_at as it loads.
	due := make(map[int64]int64, len(pg.DueNextHour))
	for _, m := range pg.DueNextHour {
		due[m.Minute.Unix()] = m.Count
	}
	start := now.Truncate(time.Minute)
	for i, n := range loaded {
		minute := start.Add(time.Duration(i) * time.Minute)
		if n += due[minute.Unix()]; n > 0 {
			out.DueNextHour = append(out.DueNextHour, MinuteCount{Minute: Time{minute}, Count: n})
		}
	}
	for _, m := range pg.Runs {
		// Rows come ordered by minute, so a minute's statuses are adjacent.
		if n := len(out.Runs); n == 0 || !out.Runs[n-1].Minute.Equal(m.Minute) {
			out.Runs = append(out.Runs, MinuteRuns{Minute: Time{m.Minute}, Counts: map[string]int64{}})
		}
		out.Runs[len(out.Runs)-1].Counts[m.Status] = m.Count
	}
	for _, m := range pg.Lateness {
		out.Lateness = append(out.Lateness, MinuteLateness{Minute: Time{m.Minute}, P50MS: m.P50MS, P99MS: m.P99MS, Runs: m.Runs})
	}
	for _, w := range consumers {
		out.Workers = append(out.Workers, Worker{Name: w.Name, Pending: w.Pending, IdleMS: w.Idle.Milliseconds()})
	}
	return writeJSON(c, http.StatusOK, out)
}
