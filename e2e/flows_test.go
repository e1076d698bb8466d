package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/e2e/cluster"
	tock "github.com/tockhq/tock/sdk/go"
)

// flowTarget counts, per path, the calls in flight at once (at the target),
// and keeps every call's arrival and the lateness its X-Tock-Scheduled-For
// says. Each call takes hold before it answers.
type flowTarget struct {
	*httptest.Server
	hold     time.Duration
	mu       sync.Mutex
	inFlight map[string]int
	peak     map[string]int
	arrivals map[string][]time.Time
	late     map[string][]time.Duration
	jobs     map[string]map[string]int // path -> job id -> calls
}

func newFlowTarget(hold time.Duration) *flowTarget {
	f := &flowTarget{hold: hold, inFlight: map[string]int{}, peak: map[string]int{}, arrivals: map[string][]time.Time{},
		late: map[string][]time.Duration{}, jobs: map[string]map[string]int{}}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		at := time.Now()
		sched, _ := time.Parse(time.RFC3339Nano, r.Header.Get("X-Tock-Scheduled-For"))
		p := r.URL.Path
		f.mu.Lock()
		f.inFlight[p]++
		f.peak[p] = max(f.peak[p], f.inFlight[p])
		f.arrivals[p] = append(f.arrivals[p], at)
		f.late[p] = append(f.late[p], at.Sub(sched))
		if f.jobs[p] == nil {
			f.jobs[p] = map[string]int{}
		}
		f.jobs[p][r.Header.Get("X-Tock-Job-Id")]++
		f.mu.Unlock()
		select {
		case <-time.After(f.hold):
		case <-r.Context().Done():
		}
		f.mu.Lock()
		f.inFlight[p]--
		f.mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	return f
}

func (f *flowTarget) calls(path string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.arrivals[path])
}

func (f *flowTarget) stats(path string) (peak int, arrivals []time.Time, late []time.Duration, jobs map[string]int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.peak[path], slices.Clone(f.arrivals[path]), slices.Clone(f.late[path]), f.jobs[path]
}

// flowJobs are n one-off webhook jobs due at at, calling url, through flow.
func flowJobs(n int, name, url string, at time.Time, flow map[string]any) []any {
	jobs := make([]any, n)
	for i := range jobs {
		jobs[i] = map[string]any{"name": fmt.Sprintf("%s-%d", name, i), "type": "webhook", "run_at": at.Format(time.RFC3339Nano),
			"payload": hookTo(url), "flow": flow, "max_retries": 0}
	}
	return jobs
}

func p99(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[(len(s)*99+99)/100-1]
}

// TestFlowKeys is the flow-control issue's acceptance on the real services,
// two schedulers and two workers: a key's concurrency and rate hold at the
// target across both workers, in due order and without losing a job, while
// another key of the same owner due at the same time is not held up; a
// key's limits set with PUT, paused and resumed; and a worker killed while a
// key is at its limit gives its slots back within the lease time.
func TestFlowKeys(t *testing.T) {
	c := start(t, cluster.Options{Schedulers: 2, Workers: 2})
	ctx := t.Context()
	api, _, err := c.API().User(ctx, "flows", map[string]any{"max_active_jobs": 100000})
	require.NoError(t, err)
	token := api.Token

	t.Run("ConcurrencyHoldsAtTheTargetAndAnotherKeyIsNotHeldUp", func(t *testing.T) {
		target := newFlowTarget(20 * time.Millisecond)
		defer target.Close()
		at := time.Now().Add(4 * time.Second)
		limited := flowJobs(1000, "c5", target.URL+"/c5", at, map[string]any{"key": "customer-42", "concurrency": 5})
		other := flowJobs(50, "other", target.URL+"/other", at, map[string]any{"key": "customer-7"})
		_, err := api.CreateBatch(ctx, limited)
		require.NoError(t, err)
		_, err = api.CreateBatch(ctx, other)
		require.NoError(t, err)
		require.True(t, cluster.WaitUntil(60*time.Second, 100*time.Millisecond, func() bool {
			return target.calls("/c5") >= 1000 && target.calls("/other") >= 50
		}), "every job runs: %d and %d", target.calls("/c5"), target.calls("/other"))
		time.Sleep(500 * time.Millisecond) // a second run would show by now
		peak, arrivals, _, jobs := target.stats("/c5")
		_, _, otherLate, _ := target.stats("/other")
		t.Logf("1,000 jobs on a key of concurrency 5: at most %d in flight at the target, the last started %s after due; the other key's 50: p99 lateness %s",
			peak, arrivals[len(arrivals)-1].Sub(at).Round(time.Millisecond), p99(otherLate).Round(time.Millisecond))
		require.LessOrEqual(t, peak, 5, "never more than the key's concurrency in flight")
		require.Len(t, jobs, 1000)
		for id, n := range jobs {
			require.Equal(t, 1, n, "job %s runs once", id)
		}
		require.LessOrEqual(t, p99(otherLate), 250*time.Millisecond, "another key is not held up")

		// The flow key is listed with its limits, nothing waiting now.
		var flow struct {
			Key         string `json:"key"`
			Concurrency int    `json:"concurrency"`
			InFlight    int    `json:"in_flight"`
			Waiting     int    `json:"waiting"`
		}
		code, err := api.Do(ctx, "GET", "/api/v1/flows/customer-42", nil, &flow)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, code)
		require.Equal(t, 5, flow.Concurrency)
		require.Zero(t, flow.Waiting)
	})

	t.Run("RateHoldsAtTheTargetAndAllRunWithin31s", func(t *testing.T) {
		target := newFlowTarget(0)
		defer target.Close()
		at := time.Now().Add(3 * time.Second)
		_, err := api.CreateBatch(ctx, flowJobs(300, "r10", target.URL+"/r10", at, map[string]any{"key": "sms-provider", "rate": "10/1s"}))
		require.NoError(t, err)
		require.True(t, cluster.WaitUntil(45*time.Second, 200*time.Millisecond, func() bool { return target.calls("/r10") >= 300 }),
			"all 300 run: %d", target.calls("/r10"))
		time.Sleep(time.Second)
		_, arrivals, _, jobs := target.stats("/r10")
		require.Len(t, jobs, 300, "none lost")
		require.Len(t, arrivals, 300, "none twice")
		slices.SortFunc(arrivals, func(a, b time.Time) int { return a.Compare(b) })
		// The publisher gives each start its slot, a second after the
		// start ten before it, and a worker waits for that slot; a worker
		// that reads the entry late (a loaded machine) starts it late, so at
		// the target the eleventh start after any start comes a second later,
		// less that jitter. minGap is the shortest such span; perSecond
		// counts starts per calendar second.
		minGap, perSecond := time.Hour, map[int64]int{}
		for i, a := range arrivals {
			if i+10 < len(arrivals) {
				minGap = min(minGap, arrivals[i+10].Sub(a))
			}
			perSecond[a.Unix()]++
		}
		worst := 0
		for _, n := range perSecond {
			worst = max(worst, n)
		}
		last := arrivals[len(arrivals)-1].Sub(at)
		t.Logf("300 jobs on a key of rate 10/1s: at most %d starts in a calendar second; the 11th start after any start came %s after it at the soonest; the last %s after due",
			worst, minGap.Round(time.Millisecond), last.Round(time.Millisecond))
		require.GreaterOrEqual(t, minGap, 800*time.Millisecond, "never an 11th start within a second, but for the workers' jitter")
		require.LessOrEqual(t, last, 31*time.Second)
	})

	t.Run("PutPauseResume", func(t *testing.T) {
		target := newFlowTarget(0)
		defer target.Close()
		code, err := api.Do(ctx, "PUT", "/api/v1/flows/reports", map[string]any{"concurrency": 2, "paused": true}, nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusCreated, code)
		due := time.Now().Add(time.Second)
		_, err = api.CreateBatch(ctx, flowJobs(10, "paused", target.URL+"/paused", due, map[string]any{"key": "reports"}))
		require.NoError(t, err)
		var flow struct {
			Paused  bool `json:"paused"`
			Waiting int  `json:"waiting"`
		}
		require.True(t, cluster.WaitUntil(10*time.Second, 100*time.Millisecond, func() bool {
			_, err := api.Do(ctx, "GET", "/api/v1/flows/reports", nil, &flow)
			return err == nil && flow.Waiting == 10
		}), "a paused key holds its due jobs: %+v", flow)
		cluster.SleepUntil(ctx, due.Add(300*time.Millisecond))
		require.Zero(t, target.calls("/paused"))
		// Resumed with the command line; the SDK sees it.
		resumed := cli(t, c, token, "flows", "resume", "reports", "-o", "json")
		require.Zero(t, resumed.code, resumed.err)
		require.Contains(t, resumed.out, `"paused": false`)
		sdk := tock.New(c.APIURL, token)
		got, err := sdk.Flows.Get(ctx, "reports")
		require.NoError(t, err)
		require.False(t, got.Paused)
		require.Equal(t, 2, got.Concurrency)
		require.True(t, cluster.WaitUntil(10*time.Second, 50*time.Millisecond, func() bool { return target.calls("/paused") >= 10 }),
			"a resume lets them out")
		id := firstJobOf(t, api, "paused-0")
		var runs []cluster.Run
		require.True(t, cluster.WaitUntil(10*time.Second, 50*time.Millisecond, func() bool {
			runs, err = api.Runs(ctx, id, 10)
			return err == nil && len(runs) > 0 && runs[0].Status == "completed"
		}), "its outcome is recorded")
		require.Positive(t, runs[0].ThrottledMS, "the wait is recorded as throttled")
		require.Less(t, runs[0].LatenessMS, runs[0].ThrottledMS, "and not as lateness")

		for _, bad := range []map[string]any{{"concurrency": 0}, {"concurrency": "3"}, {"rate": "fast"}, {"rate": "0/1s"}, {"colour": "red"}} {
			code, err := api.Do(ctx, "PUT", "/api/v1/flows/reports", bad, nil)
			require.NoError(t, err)
			require.Equal(t, http.StatusBadRequest, code, "%v", bad)
		}
		code, err = api.Do(ctx, "POST", "/api/v1/jobs", map[string]any{"name": "x", "type": "webhook", "delay": "1h",
			"payload": hookTo(target.URL), "flow": map[string]any{"key": "has space"}}, nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusBadRequest, code)
		code, err = api.Do(ctx, "GET", "/api/v1/flows/nope", nil, nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusNotFound, code)
		listed := cli(t, c, token, "flows", "list")
		require.Zero(t, listed.code, listed.err)
		require.Contains(t, listed.out, "reports")
		_, err = sdk.Flows.Put(ctx, "reports", tock.FlowRequest{Rate: "5/1s"})
		require.NoError(t, err)
		require.NoError(t, sdk.Flows.Delete(ctx, "reports"))
		_, err = sdk.Flows.Get(ctx, "reports")
		var apiErr *tock.Error
		require.ErrorAs(t, err, &apiErr)
		require.Equal(t, http.StatusNotFound, apiErr.Status)
	})

	t.Run("AWorkerKilledAtTheLimitGivesItsSlotsBack", func(t *testing.T) {
		target := newFlowTarget(1500 * time.Millisecond)
		defer target.Close()
		// One worker runs the key's attempts; a second one starts once the
		// key is at its limit, and takes over when the first is killed.
		require.NoError(t, c.Signal("worker-2", syscall.SIGTERM))
		require.NoError(t, c.Wait("worker-2", 30*time.Second))
		jobs := flowJobs(24, "kill", target.URL+"/kill", time.Now().Add(time.Second), map[string]any{"key": "fragile", "concurrency": 3})
		for _, j := range jobs {
			j.(map[string]any)["timeout"] = "5s" // a lease of 10 s with the margin
		}
		_, err := api.CreateBatch(ctx, jobs)
		require.NoError(t, err)
		require.True(t, cluster.WaitUntil(15*time.Second, 20*time.Millisecond, func() bool {
			target.mu.Lock()
			defer target.mu.Unlock()
			return target.inFlight["/kill"] == 3
		}), "the key reaches its limit")
		_, err = c.StartProc(ctx, "worker", "worker-3")
		require.NoError(t, err)
		killed := time.Now()
		require.NoError(t, c.Signal("worker-1", syscall.SIGKILL))
		require.True(t, cluster.WaitUntil(90*time.Second, 100*time.Millisecond, func() bool {
			_, _, _, jobs := target.stats("/kill")
			return len(jobs) >= 24
		}), "every job runs after the kill")
		peak, arrivals, _, _ := target.stats("/kill")
		// The killed worker's attempts keep their places until another
		// worker takes them over, which it does once their leases end (5 s
		// and the 5 s margin after they started, before the kill), not a
		// visibility timeout (15 s) after they were read. Then the key
		// runs 3 at once again.
		slices.SortFunc(arrivals, func(a, b time.Time) int { return a.Compare(b) })
		require.LessOrEqual(t, peak, 3)
		together, back := 0, time.Duration(0)
		for i := range arrivals {
			n := 0
			for j := i; j < len(arrivals) && arrivals[j].Sub(arrivals[i]) < 100*time.Millisecond; j++ {
				n++
			}
			if arrivals[i].After(killed) {
				together = max(together, n)
				if n == 3 && back == 0 {
					back = arrivals[i].Sub(killed)
				}
			}
		}
		t.Logf("worker killed with the key at its limit: three in flight again %s later (lease 10 s); the last of 24 started %s later; peak %d in flight",
			back.Round(time.Millisecond), arrivals[len(arrivals)-1].Sub(killed).Round(time.Millisecond), peak)
		require.Equal(t, 3, together, "the key is back at full capacity: three start together after the kill")
		require.LessOrEqual(t, back, 11*time.Second, "back within the lease time (and a second for the takeover and start)")
		require.Less(t, arrivals[len(arrivals)-1].Sub(killed), 60*time.Second, "the slots come back")
	})
}

// firstJobOf finds the id of the caller's job named name.
func firstJobOf(t *testing.T, api *cluster.API, name string) string {
	t.Helper()
	var list struct {
		Jobs []struct {
			ID   string `json:"id"`
			Name string `json:"name"`
		} `json:"jobs"`
	}
	code, err := api.Do(t.Context(), "GET", "/api/v1/jobs?q="+strings.ReplaceAll(name, " ", "+"), nil, &list)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code)
	for _, j := range list.Jobs {
		if j.Name == name {
			return j.ID
		}
	}
	t.Fatalf("no job named %q", name)
	return ""
}
