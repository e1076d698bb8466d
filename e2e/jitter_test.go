package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/e2e/cluster"
)

// TestJitterSpreadsOneInstant: jobs due at the same cron second with a
// jitter start spread over it, each at its nominal time plus an offset of
// its own that stays the same from one occurrence to the next, as its
// preview said; deliveries carry both times, and lateness is measured from
// the jittered one. A 2 s cron with a 1 s jitter stands for a daily one
// with a minute's.
func TestJitterSpreadsOneInstant(t *testing.T) {
	c := start(t, cluster.Options{Schedulers: 1, Workers: 1,
		Env: []string{"TOCK_LIMIT_OCCURRENCES_PER_MINUTE=0", "TOCK_LIMIT_OCCURRENCES_PER_SECOND=0"}})
	target := cluster.NewTarget()
	defer target.Close()
	api := c.API()
	ctx := t.Context()

	const jobs, occurrences = 300, 3
	t0 := ceilSecond(time.Now().Add(3 * time.Second))
	if t0.Unix()%2 != 0 {
		t0 = t0.Add(time.Second)
	}
	end := t0.Add(occurrences * 2 * time.Second)
	specs := make([]any, jobs)
	for i := range specs {
		specs[i] = map[string]any{"name": fmt.Sprintf("jittered-%d", i), "type": "webhook",
			"schedule": map[string]any{"cron": "*/2 * * * * *", "start_at": t0, "end_at": end},
			"jitter":   "1s", "payload": hookTo(target.URL + "/jitter")}
	}
	ids, err := api.CreateBatch(ctx, specs)
	require.NoError(t, err)
	require.Len(t, ids, jobs)

	// What the previews say, before anything ran.
	previews := map[string][]time.Time{}
	for _, id := range ids[:10] {
		var out struct {
			Next []struct {
				UTC time.Time `json:"utc"`
			} `json:"next"`
		}
		code, err := api.Do(ctx, "GET", "/api/v1/jobs/"+id+"/next?n=10", nil, &out)
		require.NoError(t, err)
		require.Equal(t, 200, code)
		for _, n := range out.Next {
			previews[id] = append(previews[id], n.UTC)
		}
	}

	ok := target.WaitFor(time.Until(end)+15*time.Second, func(ds []cluster.Delivery) bool { return len(ds) >= jobs*occurrences })
	require.True(t, ok, "not every occurrence was delivered in time")
	cluster.SleepUntil(ctx, end.Add(1500*time.Millisecond))
	ds := target.Deliveries()
	require.Len(t, ds, jobs*occurrences, "one delivery per occurrence")

	perTenth := make([]int, 10) // offsets, by tenth of the jitter
	var worst time.Duration
	for _, id := range ids {
		got := byScheduledFor(cluster.ForJob(ds, id))
		require.Len(t, got, occurrences, "job %s", id)
		offset := got[0].ScheduledFor.Sub(got[0].Nominal)
		require.GreaterOrEqual(t, offset, time.Duration(0), "job %s", id)
		require.Less(t, offset, time.Second, "job %s: offset beyond the jitter", id)
		perTenth[offset/(100*time.Millisecond)]++
		for i, d := range got {
			nominal := t0.Add(time.Duration(2*i) * time.Second)
			require.True(t, d.Nominal.Equal(nominal), "job %s: X-Tock-Nominal-Time %s, want %s", id, d.Nominal, nominal)
			require.Equal(t, offset, d.ScheduledFor.Sub(d.Nominal), "job %s: the offset changed between occurrences", id)
			require.Equal(t, fmt.Sprintf("%s:%d", id, d.ScheduledFor.UnixMilli()), d.IdempotencyKey)
			late := d.At.Sub(d.ScheduledFor)
			require.GreaterOrEqual(t, late, -5*time.Millisecond, "job %s: started before its jittered time", id)
			worst = max(worst, late)
		}
		if p, ok := previews[id]; ok {
			require.Len(t, p, occurrences, "job %s: preview", id)
			for i, d := range got {
				require.True(t, p[i].Equal(d.ScheduledFor), "job %s: previewed %s, ran at %s", id, p[i], d.ScheduledFor)
			}
		}
	}
	for i, n := range perTenth {
		// Evenly spread is 30 a tenth; independent random offsets would
		// put over 45 in some tenth now and then.
		require.LessOrEqual(t, n, jobs*13/100, "offsets in [%d00 ms, %d00 ms): %v", i, i+1, perTenth)
	}
	t.Logf("%d jobs × %d occurrences; offsets per 100 ms of the jitter %v; worst lateness from the jittered time %s",
		jobs, occurrences, perTenth, worst.Round(time.Millisecond))

	// A one-off job moves by its offset too, and a triggered run, due when
	// triggered, has no nominal time.
	runAt := ceilSecond(time.Now().Add(2 * time.Second))
	oneOff, err := api.CreateJob(ctx, map[string]any{"name": "jittered-once", "type": "webhook", "run_at": runAt,
		"jitter": "1s", "payload": hookTo(target.URL + "/once")})
	require.NoError(t, err)
	code, err := api.Do(ctx, "POST", "/api/v1/jobs/"+oneOff.ID+"/trigger", nil, nil)
	require.NoError(t, err)
	require.Equal(t, 202, code)
	ok = target.WaitFor(10*time.Second, func(ds []cluster.Delivery) bool { return len(cluster.ForJob(ds, oneOff.ID)) >= 2 })
	require.True(t, ok, "the one-off job and its trigger were not both delivered")
	once := byScheduledFor(cluster.ForJob(target.Deliveries(), oneOff.ID))
	require.True(t, once[0].Nominal.IsZero(), "the triggered run carries a nominal time: %s", once[0].Nominal)
	require.True(t, once[1].Nominal.Equal(runAt), "X-Tock-Nominal-Time %s, want run_at %s", once[1].Nominal, runAt)
	require.GreaterOrEqual(t, once[1].ScheduledFor.Sub(runAt), time.Duration(0))
	require.Less(t, once[1].ScheduledFor.Sub(runAt), time.Second)

	// The runs record the jittered time, and lateness from it.
	runs := finishedRuns(t, api, ids[0], occurrences, 10*time.Second)
	for _, r := range runs {
		require.Equal(t, "completed", r.Status)
		require.Less(t, r.LatenessMS, int64(1000))
	}
}
