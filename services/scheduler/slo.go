// SLOs: the leader checks the jobs that have one, sloPage a round in id
// order (a sweep of every such job takes their number over sloPage
// rounds), and records each breach's beginning and end once, with its
// alert, in one statement (store.ChangeSLO): the workers deliver the
// alerts from the outbox, at least once. A check reads the job, its state
// and its runs since the last check (one statement for the page) and the
// attempts running (one pipelined Redis round trip): it never walks a
// job's history.
//
//   - late: an occurrence started later than late_after after it was due,
//     or is still not started that long after (held behind a flow limit, a
//     paused key, busy or stopped workers); the breach ends when an
//     occurrence after it starts within late_after, none waiting longer.
//   - silent (recurring jobs): no occurrence completed for silent_after,
//     paused or not (a job paused and forgotten is silent too); the breach
//     ends with the next completion.
//
// A breach of a job that ends (completed, cancelled, failed, deleted) ends
// with it, without an alert.

package main

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/jobtype"
	"github.com/tockhq/tock/pkg/queue"
	"github.com/tockhq/tock/pkg/schedule"
	"github.com/tockhq/tock/pkg/store"
)

// The pace of the checks: a round every sloInterval, of at most sloPage
// jobs.
const (
	sloInterval = 500 * time.Millisecond
	sloPage     = 1000
	// sloIdle is the pace while no job has an SLO: a job given one is
	// first checked (its silence counted from then) this long after at
	// most.
	sloIdle = 2 * time.Second
	// sloUnits bounds the schedule walk of one job's check.
	sloUnits = schedule.RequestUnits / 4
)

// runSLOs checks the jobs with an SLO until ctx ends (the leadership):
// every sloInterval while there are some, every sloIdle while there are
// none.
func (l *Leader) runSLOs(ctx context.Context) {
	t := time.NewTimer(0)
	defer t.Stop()
	var after uuid.UUID
	// suspects are the jobs whose next occurrence the round before found
	// overdue, and its due time: only a second round that finds the same
	// one still unstarted breaches (an attempt that ended between the
	// read of the runs and that of the attempts running is seen by neither).
	suspects := map[uuid.UUID]time.Time{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		next, some, err := l.checkSLOs(ctx, after, suspects)
		t.Reset(sloInterval)
		if err != nil {
			if ctx.Err() == nil {
				l.log.Warn("slo_check_failed", zap.Error(err))
			}
			continue
		}
		if !some {
			t.Reset(sloIdle)
		}
		after = next
	}
}

// checkSLOs checks the page of jobs with an SLO after after, and returns
// where the next page starts (uuid.Nil: from the first again) and whether
// the page had any.
func (l *Leader) checkSLOs(ctx context.Context, after uuid.UUID, suspects map[uuid.UUID]time.Time) (uuid.UUID, bool, error) {
	now := l.clock()
	jobs, err := l.store.SLOJobs(ctx, after, sloPage, now)
	if err != nil {
		return after, true, err
	}
	if len(jobs) == 0 {
		return uuid.Nil, after != uuid.Nil, nil
	}
	var live []uuid.UUID
	for _, j := range jobs {
		if j.SLO.LateAfter > 0 && j.Status == job.StatusScheduled {
			live = append(live, j.ID)
		}
	}
	running, err := l.queue.RunningOf(ctx, live)
	if err != nil {
		return after, true, err
	}
	var seen []store.SLOSeen
	for i := range jobs {
		j := &jobs[i]
		c, seenTo, suspect := judgeSLO(j, running[j.ID], suspects[j.ID], now)
		if suspect.IsZero() {
			delete(suspects, j.ID)
		} else {
			suspects[j.ID] = suspect
		}
		if c != nil {
			// The breach is recorded before what it judged is marked seen:
			// one that fails is judged again next round.
			moved, err := l.store.ChangeSLO(ctx, *c, now)
			if err != nil {
				l.log.Warn("slo_change_failed", zap.Stringer("job_id", c.ID), zap.Error(err))
				continue
			}
			if moved {
				l.countSLO(*c)
			}
		}
		// Written only when it moves: a job whose occurrences are hours
		// apart costs a read a sweep, not a write.
		if j.WatchingSince.IsZero() || j.Generation != j.StateGeneration || seenTo.After(j.SeenTo) {
			seen = append(seen, store.SLOSeen{ID: j.ID, Owner: j.Owner, SeenTo: seenTo, Generation: j.Generation})
		}
	}
	if err := l.store.MarkSLOs(ctx, seen, now); err != nil {
		return after, true, err
	}
	if l.metrics != nil {
		l.metrics.SLOChecked.Add(float64(len(jobs)))
	}
	if len(jobs) < sloPage {
		// A sweep ends: the states of jobs whose SLO went are dropped.
		if _, err := l.store.ClearOrphanSLOs(ctx); err != nil && ctx.Err() == nil {
			l.log.Warn("slo_states_not_cleared", zap.Error(err))
		}
		return uuid.Nil, true, nil
	}
	return jobs[len(jobs)-1].ID, true, nil
}

// countSLO updates the metrics for a change applied.
func (l *Leader) countSLO(c store.SLOChange) {
	if l.metrics == nil {
		return
	}
	id := c.ID.String()
	for kind, pair := range map[string][2]time.Time{"late": {c.FromLateSince, c.LateSince}, "silent": {c.FromSilentSince, c.SilentSince}} {
		switch from, to := pair[0], pair[1]; {
		case from.IsZero() && !to.IsZero():
			l.metrics.SLOBreaches.WithLabelValues(kind).Inc()
			l.metrics.SLOBreached.WithLabelValues(id, kind).Set(1)
		case !from.IsZero() && to.IsZero():
			l.metrics.SLOBreached.DeleteLabelValues(id, kind)
		}
	}
}

// judgeSLO checks one job at now, its attempts running given, and the due
// time of the occurrence the round before found overdue (suspect): the
// change of its state (nil for none), the newest occurrence judged, and the
// due time of the occurrence found overdue now (zero: none).
//
// A job's first check, and its first after a change of its plan (a pause,
// a resume, an edit: a new generation), judge from now on: the runs before
// are not held against an SLO that was not there, and the occurrences
// planned under the old generation are not waited for.
func judgeSLO(j *store.SLOJob, running []queue.Lease, suspect, now time.Time) (*store.SLOChange, time.Time, time.Time) {
	restart := j.WatchingSince.IsZero() || j.Generation != j.StateGeneration
	// What started since the last check: the runs recorded, and the
	// attempts running (first attempts: a retry is due when its backoff
	// says, and is not late for it).
	newest, started, newestLate, worst := j.NewestRun, j.NewestStarted, j.NewestLate, j.WorstLate
	for _, ls := range running {
		sf := ls.Occurrence.ScheduledFor
		if ls.Occurrence.Attempt != 1 || !sf.After(j.SeenTo) || ls.DueAt.IsZero() {
			continue
		}
		late := ls.StartedAt.Sub(ls.DueAt)
		worst = max(worst, late)
		if sf.After(newest) {
			newest = sf
		}
		if sf.After(started) {
			started, newestLate = sf, late
		}
	}
	seenTo := j.SeenTo
	if newest.After(seenTo) {
		seenTo = newest
	}
	if restart {
		seenTo, started, worst = now, time.Time{}, 0
	}
	ended := j.Status != job.StatusScheduled && j.Status != job.StatusPaused
	c := store.SLOChange{ID: j.ID, Owner: j.Owner, FromLateSince: j.LateSince, FromSilentSince: j.SilentSince,
		LateSince: j.LateSince, SilentSince: j.SilentSince, LateBy: j.LateBy}
	var alerts []jobtype.Alert
	var kinds []int
	var ats []time.Time
	alert := func(e job.NotifyEvent, at time.Time, s jobtype.AlertSLO) {
		s.LateAfter, s.SilentAfter = durationText(j.SLO.LateAfter), durationText(j.SLO.SilentAfter)
		alerts = append(alerts, jobtype.Alert{Event: e, At: now,
			Job: jobtype.AlertJob{ID: j.ID, Name: j.Name, Type: j.Type}, SLO: &s})
		kind := 0
		if s.Kind == "silent" {
			kind = 1
		}
		kinds, ats = append(kinds, kind), append(ats, at)
	}

	var suspectNow time.Time
	if j.SLO.LateAfter == 0 {
		c.LateSince, c.LateBy = time.Time{}, 0
	} else {
		overdue, confirmed, dueAt := time.Duration(0), time.Duration(0), now
		if j.Status == job.StatusScheduled {
			if due, ok := nextDue(j, seenTo, now); ok && now.Sub(due) > j.SLO.LateAfter {
				overdue, dueAt, suspectNow = now.Sub(due), due, due
				if due.Equal(suspect) {
					confirmed = overdue
				}
			}
		}
		lateBy := max(worst, confirmed)
		switch {
		case j.LateSince.IsZero() && lateBy > j.SLO.LateAfter:
			// A late start is judged even when its job has ended since:
			// the breach is recorded, and ends with the job next round.
			c.LateSince, c.LateBy = now, lateBy
			alert(job.NotifySLOBreach, dueAt, jobtype.AlertSLO{Kind: "late", LateByMs: lateBy.Milliseconds(), Since: now})
		case ended:
			c.LateSince, c.LateBy = time.Time{}, 0
		case !j.LateSince.IsZero() && overdue == 0 && !started.IsZero() && newestLate <= j.SLO.LateAfter:
			c.LateSince, c.LateBy = time.Time{}, 0
			alert(job.NotifySLORecovered, now, jobtype.AlertSLO{Kind: "late", LateByMs: newestLate.Milliseconds(), Since: j.LateSince})
		}
	}

	switch {
	case ended || j.SLO.SilentAfter == 0 || len(j.Schedule) == 0:
		c.SilentSince = time.Time{}
	case j.SilentSince.IsZero():
		// Silence counts from the job's first check at the earliest (its
		// creation, give or take a sweep, or the SLO's), and from its
		// last completion.
		from := now
		if !j.WatchingSince.IsZero() {
			from = j.WatchingSince
		}
		if j.LastOK.After(from) {
			from = j.LastOK
		}
		if now.Sub(from) > j.SLO.SilentAfter {
			c.SilentSince = now
			alert(job.NotifySLOBreach, now, jobtype.AlertSLO{Kind: "silent", Since: now, LastCompletedAt: j.LastOK})
		}
	case j.LastOK.After(j.SilentSince):
		c.SilentSince = time.Time{}
		alert(job.NotifySLORecovered, now, jobtype.AlertSLO{Kind: "silent", Since: j.SilentSince, LastCompletedAt: j.LastOK})
	}

	if c.LateSince.Equal(j.LateSince) && c.SilentSince.Equal(j.SilentSince) {
		return nil, seenTo, suspectNow
	}
	for i, a := range alerts {
		if !j.Notify.Wants(a.Event) {
			continue
		}
		body, err := json.Marshal(a)
		if err != nil {
			continue
		}
		c.Alerts = append(c.Alerts, store.SLOAlert{Event: a.Event, At: ats[i], Kind: kinds[i], Body: body})
	}
	return &c, seenTo, suspectNow
}

// nextDue is the due time of j's first occurrence after seenTo (the newest
// judged), looking back SLOLookback at most: a one-off job's run_at until
// it starts.
func nextDue(j *store.SLOJob, seenTo, now time.Time) (time.Time, bool) {
	if len(j.Schedule) == 0 {
		return j.RunAt, seenTo.IsZero() && !j.RunAt.IsZero()
	}
	sched, err := schedule.FromJSONWithin(schedule.NewBudget(context.Background(), sloUnits, 0), j.Schedule)
	if err != nil {
		return time.Time{}, false
	}
	from := now.Add(-store.SLOLookback)
	if seenTo.After(from) {
		from = seenTo
	}
	if j.CreatedAt.After(from) {
		from = j.CreatedAt
	}
	return sched.Jittered(j.JitterOffset).Next(from)
}

// durationText is d as the API shows it, "" for none.
func durationText(d time.Duration) string {
	if d <= 0 {
		return ""
	}
	return d.String()
}
