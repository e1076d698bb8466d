package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/tockhq/tock/pkg/job"
)

// SLOs: the scheduler's leader checks the jobs that have one (migration
// 032), a page a round in id order, and keeps in slo_states what it found,
// so that each breach is alerted once, and its end once.

// SLOJob is what a check of a job's SLO reads: the job, its state, and
// what its runs say since the check before.
type SLOJob struct {
	ID, Owner    uuid.UUID
	Name         string
	Type         job.Type
	Status       job.Status
	Schedule     json.RawMessage
	RunAt        time.Time
	JitterOffset time.Duration
	SLO          job.SLO
	Notify       *job.Notify
	CreatedAt    time.Time
	// Generation is the job's; StateGeneration the one its state was
	// judged under (a pause, a resume or an edit moves it on: the
	// occurrences planned before are not waited for).
	Generation, StateGeneration int

	// The state: LateSince and SilentSince when a breach began (zero:
	// none), LateBy the lateness that began the late one, SeenTo the
	// newest occurrence whose start was judged, WatchingSince the first
	// check (zero: never checked).
	LateSince, SilentSince time.Time
	LateBy                 time.Duration
	SeenTo, WatchingSince  time.Time

	// From the runs recorded (first attempts) of occurrences after SeenTo
	// (or the lookback): the newest one (NewestRun, skipped ones too), the
	// lateness of the newest that started (NewestLate, with NewestStarted
	// its occurrence) and the worst (WorstLate).
	NewestRun, NewestStarted time.Time
	NewestLate, WorstLate    time.Duration
	// LastOK is when its newest completed run (in the silence window)
	// finished; zero when none did.
	LastOK time.Time
}

// SLOLookback bounds how far back a check reads runs: an occurrence not
// started for longer is found by a check within it (a sweep of every job
// with an SLO takes far less), and stays breached until an occurrence
// starts on time.
const SLOLookback = time.Hour

// sloJobsSQL reads a page of the jobs with an SLO after $1 (in id order),
// at $3: each with its state and, through the primary key of job_runs
// (pruned to the days at stake), what its runs say.
const sloJobsSQL = `SELECT j.id, j.owner_id, j.name, j.type, j.status::text, j.schedule, j.run_at, coalesce(j.jitter_offset_ms, 0),
       coalesce(j.slo_late_ms, 0), coalesce(j.slo_silent_ms, 0), j.notify, j.created_at, j.generation, coalesce(s.generation, 0),
       s.late_since, coalesce(s.late_ms, 0), s.silent_since, s.seen_to, s.watching_since,
       nr.newest, nr.newest_started, coalesce(nr.newest_ms, 0), coalesce(nr.worst_ms, 0), ok.finished_at
FROM jobs j
LEFT JOIN slo_states s ON s.job_id = j.id
LEFT JOIN LATERAL (
    SELECT max(r.scheduled_for) AS newest,
           max(r.scheduled_for) FILTER (WHERE r.status <> 'skipped') AS newest_started,
           (array_agg((extract(epoch FROM r.started_at - r.due_at) * 1000)::bigint ORDER BY r.scheduled_for DESC)
               FILTER (WHERE r.status <> 'skipped'))[1] AS newest_ms,
           max((extract(epoch FROM r.started_at - r.due_at) * 1000)::bigint) FILTER (WHERE r.status <> 'skipped') AS worst_ms
    FROM job_runs r
    WHERE j.slo_late_ms IS NOT NULL AND r.job_id = j.id AND r.attempt = 1
      AND r.scheduled_for > greatest(s.seen_to, $3::timestamptz - $4::interval)
) nr ON true
LEFT JOIN LATERAL (
    SELECT r.finished_at FROM job_runs r
    WHERE j.slo_silent_ms IS NOT NULL AND r.job_id = j.id AND r.status = 'completed'
      AND r.scheduled_for >= $3::timestamptz - make_interval(secs => j.slo_silent_ms / 1000.0) - $4::interval
    ORDER BY r.scheduled_for DESC, r.attempt DESC
    LIMIT 1
) ok ON true
WHERE (j.slo_late_ms IS NOT NULL OR j.slo_silent_ms IS NOT NULL) AND j.id > $1
ORDER BY j.id
LIMIT $2`

// SLOJobs reads up to limit jobs with an SLO after id after, at now.
func (s *Store) SLOJobs(ctx context.Context, after uuid.UUID, limit int, now time.Time) ([]SLOJob, error) {
	rows, err := s.pool.Query(ctx, sloJobsSQL, after, limit, now, SLOLookback)
	if err != nil {
		return nil, fmt.Errorf("slo jobs: %w", translate(err))
	}
	defer rows.Close()
	var out []SLOJob
	for rows.Next() {
		var (
			j                                  SLOJob
			typ, status                        string
			runAt, lateSince, silentSince      *time.Time
			seenTo, watching, newest, started  *time.Time
			lastOK                             *time.Time
			jitterMs, lateMs, silentMs, lateBy int64
			newestMs, worstMs                  int64
			gen, stateGen                      int32
			notify                             []byte
		)
		if err := rows.Scan(&j.ID, &j.Owner, &j.Name, &typ, &status, &j.Schedule, &runAt, &jitterMs, &lateMs, &silentMs, &notify, &j.CreatedAt, &gen, &stateGen,
			&lateSince, &lateBy, &silentSince, &seenTo, &watching, &newest, &started, &newestMs, &worstMs, &lastOK); err != nil {
			return nil, fmt.Errorf("slo jobs: %w", err)
		}
		j.Type, j.Status = job.Type(typ), job.Status(status)
		j.Generation, j.StateGeneration = int(gen), int(stateGen)
		j.JitterOffset = time.Duration(jitterMs) * time.Millisecond
		j.SLO = job.SLO{LateAfter: time.Duration(lateMs) * time.Millisecond, SilentAfter: time.Duration(silentMs) * time.Millisecond}
		j.LateBy = time.Duration(lateBy) * time.Millisecond
		j.NewestLate, j.WorstLate = time.Duration(newestMs)*time.Millisecond, time.Duration(worstMs)*time.Millisecond
		for _, p := range []struct {
			src *time.Time
			dst *time.Time
		}{{runAt, &j.RunAt}, {lateSince, &j.LateSince}, {silentSince, &j.SilentSince}, {seenTo, &j.SeenTo},
			{watching, &j.WatchingSince}, {newest, &j.NewestRun}, {started, &j.NewestStarted}, {lastOK, &j.LastOK}} {
			if p.src != nil {
				*p.dst = p.src.UTC()
			}
		}
		j.CreatedAt = j.CreatedAt.UTC()
		if len(notify) > 0 {
			if err := json.Unmarshal(notify, &j.Notify); err != nil {
				return nil, fmt.Errorf("notify of job %s: %w", j.ID, err)
			}
		}
		out = append(out, j)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("slo jobs: %w", translate(err))
	}
	return out, nil
}

// SLOSeen is what a check records of one job: when it was checked and the
// newest occurrence whose start it judged.
type SLOSeen struct {
	ID, Owner  uuid.UUID
	SeenTo     time.Time
	Generation int
}

// markSLOsSQL records a round's checks: each job's state row, created at
// its first check, and the newest occurrence judged, which only moves
// forward.
const markSLOsSQL = `INSERT INTO slo_states AS s (job_id, owner_id, seen_to, generation, watching_since, checked_at)
SELECT id, owner_id, seen_to, generation, $4, $4
FROM unnest($1::uuid[], $2::uuid[], $3::timestamptz[], $5::integer[]) AS t(id, owner_id, seen_to, generation)
ON CONFLICT (job_id) DO UPDATE SET checked_at = EXCLUDED.checked_at, generation = EXCLUDED.generation,
    seen_to = CASE WHEN s.generation = EXCLUDED.generation THEN greatest(s.seen_to, EXCLUDED.seen_to) ELSE EXCLUDED.seen_to END,
    owner_id = EXCLUDED.owner_id`

// MarkSLOs records the checks of a round at now.
func (s *Store) MarkSLOs(ctx context.Context, seen []SLOSeen, now time.Time) error {
	if len(seen) == 0 {
		return nil
	}
	ids, owners, to, gens := make([]uuid.UUID, len(seen)), make([]uuid.UUID, len(seen)), make([]*time.Time, len(seen)), make([]int32, len(seen))
	for i, x := range seen {
		ids[i], owners[i], to[i], gens[i] = x.ID, x.Owner, nullTime(x.SeenTo), int32(x.Generation)
	}
	if _, err := s.pool.Exec(ctx, markSLOsSQL, ids, owners, to, now, gens); err != nil {
		return fmt.Errorf("mark slos: %w", translate(err))
	}
	return nil
}

// SLOChange is a breach that begins or ends: the state it moves from
// (checked so that only one check moves it) and to, and the alerts it
// sends (event and body each), written to the callbacks outbox with it.
type SLOChange struct {
	ID, Owner                      uuid.UUID
	FromLateSince, FromSilentSince time.Time
	LateSince, SilentSince         time.Time
	LateBy                         time.Duration
	Alerts                         []SLOAlert
}

// SLOAlert is one alert an SLOChange sends. At and Kind name it in its
// Idempotency-Key (alert/<event>/<job>:<At ms>/<kind>: 0 late, 1 silent).
type SLOAlert struct {
	Event job.NotifyEvent
	At    time.Time
	Kind  int
	Body  []byte
}

// changeSLOSQL moves a job's state from ($3, $4) to ($5, $6, $7), and
// writes its alerts ($9, $10) to the outbox when it moved.
const changeSLOSQL = `WITH moved AS (
    UPDATE slo_states SET late_since = $5, silent_since = $6, late_ms = nullif($7, 0)
    WHERE job_id = $1 AND late_since IS NOT DISTINCT FROM $3 AND silent_since IS NOT DISTINCT FROM $4
    RETURNING job_id
), sent AS (
    INSERT INTO callbacks (owner_id, job_id, scheduled_for, attempt, event, body, next_at, created_at)
    SELECT $2, m.job_id, a.at, a.kind, a.event, a.body, $11, $11
    FROM moved m, unnest($8::timestamptz[], $12::smallint[], $9::text[], $10::bytea[]) AS a(at, kind, event, body)
)
SELECT count(*) FROM moved`

// ChangeSLO applies a change; it says whether the state was as the change
// expected (another leader may have moved it first: then nothing is
// written).
func (s *Store) ChangeSLO(ctx context.Context, c SLOChange, now time.Time) (bool, error) {
	n := len(c.Alerts)
	at, kinds, events, bodies := make([]time.Time, n), make([]int16, n), make([]string, n), make([][]byte, n)
	for i, a := range c.Alerts {
		at[i], kinds[i], events[i], bodies[i] = a.At, int16(a.Kind), string(a.Event), a.Body
	}
	var moved int
	err := s.pool.QueryRow(ctx, changeSLOSQL, c.ID, c.Owner, nullTime(c.FromLateSince), nullTime(c.FromSilentSince),
		nullTime(c.LateSince), nullTime(c.SilentSince), c.LateBy.Milliseconds(), at, events, bodies, now, kinds).Scan(&moved)
	if err != nil {
		return false, fmt.Errorf("change slo of job %s: %w", c.ID, translate(err))
	}
	return moved > 0, nil
}

// clearOrphanSLOsSQL deletes the breached states of jobs that no longer
// have an SLO (or are gone), through slo_states_at_risk: a breach must not
// outlive its SLO, nor come back with it.
const clearOrphanSLOsSQL = `DELETE FROM slo_states s
WHERE (s.late_since IS NOT NULL OR s.silent_since IS NOT NULL)
  AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = s.job_id AND (j.slo_late_ms IS NOT NULL OR j.slo_silent_ms IS NOT NULL))`

// ClearOrphanSLOs deletes the states of jobs without an SLO; the leader
// calls it once a sweep.
func (s *Store) ClearOrphanSLOs(ctx context.Context) (int64, error) {
	tag, err := s.pool.Exec(ctx, clearOrphanSLOsSQL)
	if err != nil {
		return 0, fmt.Errorf("clear slo states: %w", translate(err))
	}
	return tag.RowsAffected(), nil
}

// ShowSLOStates reads the SLO state of each of jobs that has an SLO, in
// one statement, into its SLOState (a zero state when it has no breach or
// was never checked).
func (s *Store) ShowSLOStates(ctx context.Context, jobs ...*job.Job) error {
	var ids []uuid.UUID
	for _, j := range jobs {
		if j.SLO.Set() {
			ids = append(ids, j.ID)
			j.SLOState = &job.SLOState{}
		}
	}
	if len(ids) == 0 {
		return nil
	}
	rows, err := s.pool.Query(ctx, `SELECT job_id, late_since, coalesce(late_ms, 0), silent_since FROM slo_states WHERE job_id = ANY($1)`, ids)
	if err != nil {
		return fmt.Errorf("slo states: %w", translate(err))
	}
	defer rows.Close()
	states := map[uuid.UUID]job.SLOState{}
	for rows.Next() {
		var id uuid.UUID
		var late, silent *time.Time
		var lateMs int64
		if err := rows.Scan(&id, &late, &lateMs, &silent); err != nil {
			return fmt.Errorf("slo states: %w", err)
		}
		var st job.SLOState
		if late != nil {
			st.LateSince, st.LateBy = late.UTC(), time.Duration(lateMs)*time.Millisecond
		}
		if silent != nil {
			st.SilentSince = silent.UTC()
		}
		states[id] = st
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("slo states: %w", translate(err))
	}
	for _, j := range jobs {
		if st, ok := states[j.ID]; ok && j.SLOState != nil {
			*j.SLOState = st
		}
	}
	return nil
}
