package e2e

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/e2e/cluster"
)

// schedSpec is a job as the scheduling tests create it: one-off (RunAt) or
// recurring (Schedule), a webhook to the recording target.
type schedSpec struct {
	Name     string         `json:"name"`
	Type     string         `json:"type"`
	RunAt    *time.Time     `json:"run_at,omitempty"`
	Schedule map[string]any `json:"schedule,omitempty"`
	Payload  map[string]any `json:"payload"`
	Priority int            `json:"priority,omitempty"`
}

func hookTo(url string) map[string]any { return map[string]any{"url": url} }

// ceilSecond rounds t up to a whole second, in UTC.
func ceilSecond(t time.Time) time.Time {
	s := t.UTC().Truncate(time.Second)
	if s.Before(t) {
		s = s.Add(time.Second)
	}
	return s
}

// byScheduledFor sorts deliveries by their occurrence.
func byScheduledFor(ds []cluster.Delivery) []cluster.Delivery {
	out := slices.Clone(ds)
	slices.SortStableFunc(out, func(a, b cluster.Delivery) int { return a.ScheduledFor.Compare(b.ScheduledFor) })
	return out
}

// waitStatus waits until GET /jobs/{id} shows status.
func waitStatus(t *testing.T, api *cluster.API, id, status string, timeout time.Duration) {
	t.Helper()
	last := ""
	ok := cluster.WaitUntil(timeout, 100*time.Millisecond, func() bool {
		j, err := api.GetJob(t.Context(), id)
		if err != nil {
			return false
		}
		last = j.Status
		return j.Status == status
	})
	require.True(t, ok, "job %s: status %q, want %q", id, last, status)
}

// finishedRuns waits until job id has want runs, none of them running, and
// returns them oldest first.
func finishedRuns(t *testing.T, api *cluster.API, id string, want int, timeout time.Duration) []cluster.Run {
	t.Helper()
	var runs []cluster.Run
	ok := cluster.WaitUntil(timeout, 100*time.Millisecond, func() bool {
		var err error
		if runs, err = api.Runs(t.Context(), id, 3); err != nil || len(runs) < want {
			return false
		}
		return !slices.ContainsFunc(runs, func(r cluster.Run) bool { return r.Status == "running" })
	})
	require.True(t, ok, "job %s: want %d finished runs, have %d", id, want, len(runs))
	slices.Reverse(runs)
	return runs
}

// TestCronEverySecond: a cron with seconds runs once per second inside its
// window: exactly the occurrences in [start_at, end_at), or exactly count of
// them, each delivered once, never early, before the next one is due; the job
// then ends completed with one completed run per occurrence.
func TestCronEverySecond(t *testing.T) {
	c := start(t, cluster.Options{Schedulers: 1, Workers: 1})
	target := cluster.NewTarget()
	defer target.Close()
	api := c.API()
	ctx := t.Context()

	const n, count = 8, 5
	t0 := ceilSecond(time.Now().Add(2 * time.Second))
	end := t0.Add(n * time.Second)
	window, err := api.CreateJob(ctx, schedSpec{Name: "every-second-window", Type: "webhook",
		Schedule: map[string]any{"cron": "* * * * * *", "start_at": t0, "end_at": end},
		Payload:  hookTo(target.URL + "/window")})
	require.NoError(t, err)
	counted, err := api.CreateJob(ctx, schedSpec{Name: "every-second-count", Type: "webhook",
		Schedule: map[string]any{"cron": "* * * * * *", "start_at": t0, "count": count},
		Payload:  hookTo(target.URL + "/count")})
	require.NoError(t, err)

	ok := target.WaitFor(time.Until(end)+10*time.Second, func(ds []cluster.Delivery) bool {
		return len(cluster.ForJob(ds, window.ID)) >= n && len(cluster.ForJob(ds, counted.ID)) >= count
	})
	require.True(t, ok, "not every occurrence was delivered in time")
	// Let the instants after the window go by: nothing more may arrive.
	cluster.SleepUntil(ctx, end.Add(1500*time.Millisecond))
	ds := target.Deliveries()

	for _, tc := range []struct {
		name string
		job  cluster.Job
		want int
	}{{"end_at", window, n}, {"count", counted, count}} {
		got := byScheduledFor(cluster.ForJob(ds, tc.job.ID))
		require.Len(t, got, tc.want, "%s: deliveries", tc.name)
		var worst time.Duration
		for i, d := range got {
			due := t0.Add(time.Duration(i) * time.Second)
			require.True(t, d.ScheduledFor.Equal(due), "%s: delivery %d scheduled for %s, want %s", tc.name, i, d.ScheduledFor, due)
			require.Equal(t, fmt.Sprintf("%s:%d", tc.job.ID, due.UnixMilli()), d.IdempotencyKey, "%s: one key per occurrence", tc.name)
			require.Equal(t, 1, d.Attempt)
			late := d.At.Sub(d.ScheduledFor)
			require.GreaterOrEqual(t, late, time.Duration(0), "%s: occurrence %s delivered early", tc.name, due)
			require.Less(t, late, time.Second, "%s: occurrence %s delivered after the next one was due", tc.name, due)
			worst = max(worst, late)
		}
		t.Logf("%s: %d deliveries, one per second from %s, worst lateness %s", tc.name, len(got), t0.Format(time.TimeOnly), worst.Round(time.Millisecond))

		waitStatus(t, api, tc.job.ID, "completed", 10*time.Second)
		runs := finishedRuns(t, api, tc.job.ID, tc.want, 10*time.Second)
		require.Len(t, runs, tc.want, "%s: one run per occurrence", tc.name)
		for i, r := range runs {
			require.Equal(t, "completed", r.Status, "%s: run %d", tc.name, i)
			require.Equal(t, 1, r.Attempt)
			require.True(t, r.ScheduledFor.Equal(t0.Add(time.Duration(i)*time.Second)), "%s: run %d scheduled for %s", tc.name, i, r.ScheduledFor)
			require.GreaterOrEqual(t, r.LatenessMS, int64(0))
		}
	}
}

// TestEditMovesTheJob: PATCH keeps the id and moves the job: a one-off job
// moved earlier runs once, at its new time, and never at its old one; a
// recurring job moved from every second to every other second stops running
// on odd seconds.
func TestEditMovesTheJob(t *testing.T) {
	c := start(t, cluster.Options{Schedulers: 1, Workers: 1})
	target := cluster.NewTarget()
	defer target.Close()
	api := c.API()
	ctx := t.Context()

	// A one-off job due in 4 s, moved to 2 s from now.
	oldAt := time.Now().Add(4 * time.Second).UTC().Truncate(time.Millisecond)
	once, err := api.CreateJob(ctx, schedSpec{Name: "moved", Type: "webhook", RunAt: &oldAt, Payload: hookTo(target.URL + "/moved")})
	require.NoError(t, err)
	newAt := time.Now().Add(2 * time.Second).UTC().Truncate(time.Millisecond)
	var moved cluster.Job
	code, err := api.Do(ctx, "PATCH", "/api/v1/jobs/"+once.ID, map[string]any{"run_at": newAt}, &moved)
	require.NoError(t, err)
	require.Equal(t, 200, code)
	require.Equal(t, once.ID, moved.ID, "an edit keeps the id")
	require.NotNil(t, moved.RunAt)
	require.True(t, moved.RunAt.Equal(newAt), "run_at %s, want %s", moved.RunAt, newAt)

	// A recurring job every second, to be moved to every other second.
	every, err := api.CreateJob(ctx, schedSpec{Name: "every-second", Type: "webhook",
		Schedule: map[string]any{"cron": "* * * * * *"}, Payload: hookTo(target.URL + "/every")})
	require.NoError(t, err)

	ok := target.WaitFor(10*time.Second, func(ds []cluster.Delivery) bool {
		return len(cluster.ForJob(ds, once.ID)) >= 1 && len(cluster.ForJob(ds, every.ID)) >= 2
	})
	require.True(t, ok, "the moved job or the recurring job was not delivered in time")

	code, err = api.Do(ctx, "PATCH", "/api/v1/jobs/"+every.ID, map[string]any{"schedule": map[string]any{"cron": "*/2 * * * * *"}}, nil)
	require.NoError(t, err)
	require.Equal(t, 200, code)
	patched := time.Now()

	// The moved job: once, at its new time.
	got := cluster.ForJob(target.Deliveries(), once.ID)
	require.Len(t, got, 1)
	require.True(t, got[0].ScheduledFor.Equal(newAt), "delivered for %s, want the new time %s", got[0].ScheduledFor, newAt)
	require.Equal(t, fmt.Sprintf("%s:%d", once.ID, newAt.UnixMilli()), got[0].IdempotencyKey)
	require.False(t, got[0].At.Before(newAt), "delivered before its new time")
	require.True(t, got[0].At.Before(oldAt), "delivered at %s, not before the old time %s", got[0].At, oldAt)

	// Let the old time (plus 2 s) and six seconds of the new cadence go by.
	ok = target.WaitFor(8*time.Second, func(ds []cluster.Delivery) bool {
		n := 0
		for _, d := range cluster.ForJob(ds, every.ID) {
			if d.ScheduledFor.After(patched) {
				n++
			}
		}
		return n >= 2
	})
	cluster.SleepUntil(ctx, laterOf(oldAt.Add(2*time.Second), patched.Add(6*time.Second)))
	ds := target.Deliveries()
	require.Len(t, cluster.ForJob(ds, once.ID), 1, "the moved job ran again (at its old time?)")
	waitStatus(t, api, once.ID, "completed", 5*time.Second)

	var odd, even []time.Time
	keys := map[string]bool{}
	for _, d := range cluster.ForJob(ds, every.ID) {
		require.False(t, keys[d.IdempotencyKey], "occurrence %s delivered twice", d.ScheduledFor)
		keys[d.IdempotencyKey] = true
		if !d.ScheduledFor.After(patched.Add(time.Second)) {
			continue
		}
		if d.ScheduledFor.Second()%2 == 1 {
			odd = append(odd, d.ScheduledFor)
		} else {
			even = append(even, d.ScheduledFor)
		}
	}
	t.Logf("after the edit at %s: %d even-second deliveries %v, %d odd-second ones", patched.UTC().Format("15:04:05.000"), len(even), even, len(odd))
	require.Empty(t, odd, "the edited job still ran on odd seconds")
	// The new schedule's occurrences share their instants with stale ones of
	// the old schedule still in the due set; they must run all the same.
	require.True(t, ok, "the edited job did not run twice after the edit")
	require.GreaterOrEqual(t, len(even), 2, "the edited job runs on even seconds")
}

func laterOf(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// TestPauseResume: a paused recurring job does not run, and after resume
// continues with its next occurrence (the ones it missed while paused are not
// run, nor recorded: it was told not to run); a paused one-off job whose time
// passes while paused runs once after resume, for its original time.
func TestPauseResume(t *testing.T) {
	c := start(t, cluster.Options{Schedulers: 1, Workers: 1})
	target := cluster.NewTarget()
	defer target.Close()
	api := c.API()
	ctx := t.Context()

	// The one-off job, due in 3 s and paused at once.
	onceAt := time.Now().Add(3 * time.Second).UTC().Truncate(time.Millisecond)
	once, err := api.CreateJob(ctx, schedSpec{Name: "paused-once", Type: "webhook", RunAt: &onceAt, Payload: hookTo(target.URL + "/once")})
	require.NoError(t, err)
	code, err := api.Action(ctx, once.ID, "pause")
	require.NoError(t, err)
	require.Equal(t, 200, code)
	waitStatus(t, api, once.ID, "paused", time.Second)

	every, err := api.CreateJob(ctx, schedSpec{Name: "every-second", Type: "webhook",
		Schedule: map[string]any{"cron": "* * * * * *"}, Payload: hookTo(target.URL + "/every")})
	require.NoError(t, err)
	require.Equal(t, "scheduled", every.Status)
	ok := target.WaitFor(6*time.Second, func(ds []cluster.Delivery) bool { return len(cluster.ForJob(ds, every.ID)) >= 2 })
	require.True(t, ok, "the recurring job did not run twice")

	code, err = api.Action(ctx, every.ID, "pause")
	require.NoError(t, err)
	require.Equal(t, 200, code)
	pausedAt := time.Now()
	waitStatus(t, api, every.ID, "paused", time.Second)
	code, err = api.Action(ctx, every.ID, "pause")
	require.NoError(t, err)
	require.Equal(t, 409, code, "pausing a paused job")

	cluster.SleepUntil(ctx, pausedAt.Add(4*time.Second))
	var before, inFlight, whilePaused int
	for _, d := range cluster.ForJob(target.Deliveries(), every.ID) {
		switch {
		case !d.ScheduledFor.After(pausedAt):
			before++
		case !d.ScheduledFor.After(pausedAt.Add(time.Second)):
			inFlight++
		default:
			whilePaused++
		}
	}
	t.Logf("recurring job: %d deliveries before the pause, %d within 1 s of it, %d in the 4 s paused", before, inFlight, whilePaused)
	require.Zero(t, whilePaused, "the paused job ran")
	require.Empty(t, cluster.ForJob(target.Deliveries(), once.ID), "the paused one-off job ran")
	require.True(t, time.Now().After(onceAt.Add(time.Second)), "the one-off job's time must have passed while paused")

	resumedAt := time.Now()
	code, err = api.Action(ctx, every.ID, "resume")
	require.NoError(t, err)
	require.Equal(t, 200, code)
	waitStatus(t, api, every.ID, "scheduled", time.Second)
	ok = target.WaitFor(3*time.Second, func(ds []cluster.Delivery) bool {
		return slices.ContainsFunc(cluster.ForJob(ds, every.ID), func(d cluster.Delivery) bool { return !d.ScheduledFor.Before(resumedAt) })
	})
	// Each occurrence after resume shares its instant with a stale one loaded
	// before the pause; the current one must run all the same.
	require.True(t, ok, "the resumed job did not run again within 3 s")
	t.Logf("recurring job delivered again within %s of resume", time.Since(resumedAt).Round(time.Millisecond))
	keys := map[string]bool{}
	for _, d := range cluster.ForJob(target.Deliveries(), every.ID) {
		inGap := d.ScheduledFor.After(pausedAt.Add(time.Second)) && d.ScheduledFor.Before(resumedAt)
		require.False(t, inGap, "occurrence %s, missed while paused, ran after resume", d.ScheduledFor)
		require.False(t, keys[d.IdempotencyKey], "occurrence %s delivered twice", d.ScheduledFor)
		keys[d.IdempotencyKey] = true
	}
	runs, err := api.Runs(ctx, every.ID, 10)
	require.NoError(t, err)
	for _, r := range runs {
		inGap := r.ScheduledFor.After(pausedAt.Add(time.Second)) && r.ScheduledFor.Before(resumedAt)
		require.False(t, inGap, "occurrence %s, missed while paused, has a %s run", r.ScheduledFor, r.Status)
	}

	// The one-off job: resumed after its time, it runs at once, for that time.
	resumedAt = time.Now()
	code, err = api.Action(ctx, once.ID, "resume")
	require.NoError(t, err)
	require.Equal(t, 200, code)
	ok = target.WaitFor(3*time.Second, func(ds []cluster.Delivery) bool { return len(cluster.ForJob(ds, once.ID)) >= 1 })
	require.True(t, ok, "the resumed one-off job did not run")
	waitStatus(t, api, once.ID, "completed", 5*time.Second)
	got := cluster.ForJob(target.Deliveries(), once.ID)
	require.Len(t, got, 1)
	require.True(t, got[0].ScheduledFor.Equal(onceAt), "scheduled for %s, want %s", got[0].ScheduledFor, onceAt)
	require.False(t, got[0].At.Before(resumedAt))
	runs = finishedRuns(t, api, once.ID, 1, 5*time.Second)
	require.Len(t, runs, 1)
	require.Equal(t, "completed", runs[0].Status)
	t.Logf("one-off job: due %s, resumed %s later, delivered %s after resume, lateness_ms=%d",
		onceAt.Format("15:04:05.000"), resumedAt.Sub(onceAt).Round(time.Millisecond), got[0].At.Sub(resumedAt).Round(time.Millisecond), runs[0].LatenessMS)
}

// TestPriorityUnderSaturation: 200 jobs due at the same millisecond, on a
// worker that runs one at a time, run highest priority first, without a
// single inversion.
func TestPriorityUnderSaturation(t *testing.T) {
	c := start(t, cluster.Options{Schedulers: 1, Workers: 1,
		WorkerEnv: []string{"TOCK_WORKER_CONCURRENCY=1", "TOCK_WORKER_BATCH=1"}})
	target := cluster.NewTarget()
	defer target.Close()
	api := c.API()
	ctx := t.Context()

	const n = 200
	runAt := time.Now().Add(4 * time.Second).UTC().Truncate(time.Millisecond)
	prios := rand.Perm(201)[:n] // distinct, shuffled, -100..100 below
	created := time.Now()
	var wg sync.WaitGroup
	work := make(chan int)
	errs := make(chan error, n)
	for range 16 {
		wg.Go(func() {
			for p := range work {
				_, err := api.CreateJob(ctx, schedSpec{Name: fmt.Sprintf("prio-%d", p), Type: "webhook", RunAt: &runAt, Priority: p,
					Payload: hookTo(fmt.Sprintf("%s/p/%d", target.URL, p))})
				if err != nil {
					errs <- err
				}
			}
		})
	}
	for _, p := range prios {
		work <- p - 100
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	t.Logf("created %d jobs in %s; due in %s", n, time.Since(created).Round(time.Millisecond), time.Until(runAt).Round(time.Millisecond))
	require.True(t, time.Now().Before(runAt.Add(-time.Second)), "creating the jobs took too long for the test to mean anything")

	prioOf := func(d cluster.Delivery) (int, bool) {
		s, ok := strings.CutPrefix(d.Path, "/p/")
		if !ok {
			return 0, false
		}
		p, err := strconv.Atoi(s)
		return p, err == nil
	}
	ok := target.WaitFor(60*time.Second, func(ds []cluster.Delivery) bool { return len(ds) >= n })
	require.True(t, ok, "only %d of %d jobs delivered", len(target.Deliveries()), n)
	ds := target.Deliveries()
	require.Len(t, ds, n)
	order := make([]int, 0, n)
	jobs := map[string]bool{}
	for _, d := range ds {
		p, ok := prioOf(d)
		require.True(t, ok, "unexpected path %s", d.Path)
		require.True(t, d.ScheduledFor.Equal(runAt))
		require.False(t, d.At.Before(runAt), "delivered early")
		jobs[d.JobID] = true
		order = append(order, p)
	}
	require.Len(t, jobs, n, "each job delivered once")
	var inversions []string
	for i := 1; i < len(order); i++ {
		if order[i] > order[i-1] {
			inversions = append(inversions, fmt.Sprintf("#%d: %d after %d", i, order[i], order[i-1]))
		}
	}
	t.Logf("delivered in %s from due time; first 10 priorities %v, last 5 %v",
		ds[len(ds)-1].At.Sub(runAt).Round(time.Millisecond), order[:10], order[len(order)-5:])
	require.Empty(t, inversions, "deliveries out of priority order")
}
