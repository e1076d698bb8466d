package e2e

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/e2e/cluster"
	tock "github.com/tockhq/tock/sdk/go"
)

// lossyProxy stands between the SDK and the real dashboard. It forwards
// every request, and for the first one that lose picks it answers 503 in
// place of the dashboard's answer, as a load balancer does when the
// connection to the dashboard breaks after the work was done. It records
// the Idempotency-Key of every request it forwards.
type lossyProxy struct {
	*httptest.Server
	mu   sync.Mutex
	lose func(*http.Request) bool
	lost bool
	keys map[string][]string // "METHOD path" → Idempotency-Key of each try
}

func newLossyProxy(t *testing.T, target string, lose func(*http.Request) bool) *lossyProxy {
	u, err := url.Parse(target)
	require.NoError(t, err)
	p := &lossyProxy{lose: lose, keys: map[string][]string{}}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ModifyResponse = func(resp *http.Response) error {
		p.mu.Lock()
		defer p.mu.Unlock()
		if !p.lost && p.lose(resp.Request) {
			p.lost = true
			resp.Body.Close()
			resp.StatusCode, resp.Status = http.StatusServiceUnavailable, "503 Service Unavailable"
			resp.Body = http.NoBody
			resp.ContentLength = 0
			resp.Header.Del("Content-Length")
		}
		return nil
	}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		k := r.Method + " " + r.URL.Path
		p.keys[k] = append(p.keys[k], r.Header.Get("Idempotency-Key"))
		p.mu.Unlock()
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(p.Close)
	return p
}

func (p *lossyProxy) tries(route string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.keys[route]...)
}

// TestSDK drives the Go SDK against the real services, the paths its users
// depend on: a create whose answer is lost is retried with the same
// Idempotency-Key and makes one job; refusals are *tock.Error with the
// field at fault; a missing job is a typed 404; the iterators follow the
// cursors over several pages; PUT by key creates then replaces in place;
// the runs of a job that ran are listed; a bulk dry run counts and changes
// nothing.
func TestSDK(t *testing.T) {
	c := start(t, cluster.Options{Schedulers: 1, Workers: 1})
	ctx := t.Context()
	target := cluster.NewTarget()
	defer target.Close()
	_, _, token := newUser(t, c.API(), "sdk-user")
	client := tock.New(c.APIURL, token)
	ping := func(name string) tock.JobSpec {
		return tock.JobSpec{Name: name, Type: "ping", Delay: "1h", Payload: tock.PingPayload{URL: target.URL + "/ok"},
			Labels: map[string]string{"suite": "sdk"}}
	}

	t.Run("CreateRetriedAfterLostAnswerMakesOneJob", func(t *testing.T) {
		proxy := newLossyProxy(t, c.APIURL, func(r *http.Request) bool {
			return r.Method == http.MethodPost && r.URL.Path == "/api/v1/jobs"
		})
		lossy := tock.New(proxy.URL, token, tock.WithRetries(3, 10*time.Millisecond, 100*time.Millisecond))
		spec := ping("lost answer")
		spec.Labels = map[string]string{"case": "lost-answer"}
		j, err := lossy.Jobs.Create(ctx, spec)
		require.NoError(t, err)
		keys := proxy.tries("POST /api/v1/jobs")
		require.Len(t, keys, 2, "the 503 was retried once")
		require.NotEmpty(t, keys[0])
		require.Equal(t, keys[0], keys[1], "the retry carries the same Idempotency-Key")
		list, err := client.Jobs.List(ctx, tock.JobFilter{Labels: map[string]string{"case": "lost-answer"}})
		require.NoError(t, err)
		require.Len(t, list.Jobs, 1, "one job, not two")
		require.Equal(t, j.ID, list.Jobs[0].ID)
	})

	t.Run("InvalidIsTypedWithField", func(t *testing.T) {
		spec := ping("bad cron")
		spec.Delay = ""
		spec.Schedule = &tock.Schedule{Cron: "61 * * * *"}
		_, err := client.Jobs.Create(ctx, spec)
		var e *tock.Error
		require.True(t, errors.As(err, &e), "%v", err)
		require.Equal(t, http.StatusBadRequest, e.Status)
		require.Equal(t, "invalid", e.Code)
		require.Equal(t, "schedule.cron", e.Field)
		require.NotEmpty(t, e.Message)
		require.True(t, tock.IsInvalid(err))

		_, err = client.Jobs.Batch(ctx, tock.BatchRequest{Jobs: []tock.JobSpec{ping("ok"), {Name: "no payload", Type: "ping", Delay: "1h"}}})
		require.True(t, errors.As(err, &e), "%v", err)
		require.Equal(t, http.StatusBadRequest, e.Status)
		require.NotEmpty(t, e.Items)
		require.Equal(t, 1, e.Items[0].Index)
	})

	t.Run("NotFoundIsTyped", func(t *testing.T) {
		_, err := client.Jobs.Get(ctx, "0190c0de-0000-7000-8000-000000000000")
		require.True(t, tock.IsNotFound(err), "%v", err)
		var e *tock.Error
		require.True(t, errors.As(err, &e))
		require.Equal(t, "not_found", e.Code)
		_, err = client.Jobs.GetByKey(ctx, "no-such-key", "")
		require.True(t, tock.IsNotFound(err), "%v", err)
	})

	t.Run("IteratorFollowsPages", func(t *testing.T) {
		specs := make([]tock.JobSpec, 7)
		for i := range specs {
			specs[i] = ping(fmt.Sprintf("paged %d", i))
			specs[i].Labels = map[string]string{"case": "paged"}
		}
		created, err := client.Jobs.Batch(ctx, tock.BatchRequest{Jobs: specs})
		require.NoError(t, err)
		require.Equal(t, 7, created.Created)
		seen := map[string]bool{}
		for j, err := range client.Jobs.All(ctx, tock.JobFilter{Labels: map[string]string{"case": "paged"}, Limit: 3}) {
			require.NoError(t, err)
			require.False(t, seen[j.ID], "job %s twice", j.ID)
			seen[j.ID] = true
		}
		require.Len(t, seen, 7, "three pages of at most 3")
		for _, id := range created.IDs {
			require.True(t, seen[id])
		}
		// Stopping early stops asking.
		n := 0
		for _, err := range client.Jobs.All(ctx, tock.JobFilter{Labels: map[string]string{"case": "paged"}, Limit: 3}) {
			require.NoError(t, err)
			if n++; n == 4 {
				break
			}
		}
		require.Equal(t, 4, n)
	})

	t.Run("PutByKeyUpserts", func(t *testing.T) {
		spec := ping("nightly")
		spec.Delay = ""
		spec.Schedule = &tock.Schedule{Cron: "0 3 * * *", Timezone: "Europe/Berlin"}
		first, created, err := client.Jobs.Put(ctx, "nightly", spec)
		require.NoError(t, err)
		require.True(t, created)
		spec.Schedule.Cron = "0 4 * * *"
		second, created, err := client.Jobs.Put(ctx, "nightly", spec)
		require.NoError(t, err)
		require.False(t, created)
		require.Equal(t, first.ID, second.ID)
		require.Equal(t, "0 4 * * *", second.Schedule.Cron)
		got, err := client.Jobs.GetByKey(ctx, "nightly", "")
		require.NoError(t, err)
		require.Equal(t, first.ID, got.ID)
		require.NoError(t, client.Jobs.CancelByKey(ctx, "nightly", ""))
		got, err = client.Jobs.GetByKey(ctx, "nightly", "")
		require.NoError(t, err, "GET by key finds the newest job that took it, finished or not")
		require.Equal(t, "cancelled", got.Status)
		third, created, err := client.Jobs.Put(ctx, "nightly", spec)
		require.NoError(t, err)
		require.True(t, created, "a cancelled job holds the key no more")
		require.NotEqual(t, first.ID, third.ID)
	})

	t.Run("RunsOfAJobThatRan", func(t *testing.T) {
		spec := ping("runs now")
		spec.Delay = "0s"
		j, err := client.Jobs.Create(ctx, spec)
		require.NoError(t, err)
		var runs []tock.Run
		require.True(t, cluster.WaitUntil(30*time.Second, 100*time.Millisecond, func() bool {
			page, err := client.Runs.List(ctx, tock.RunFilter{Job: j.ID, Status: "completed"})
			require.NoError(t, err)
			runs = page.Runs
			return len(runs) == 1
		}), "the job's run completes")
		require.Equal(t, j.ID, runs[0].JobID)
		require.Equal(t, "runs now", runs[0].JobName)
		require.Equal(t, "ping", runs[0].JobType)
		own, err := client.Jobs.Runs(ctx, j.ID, 0, "")
		require.NoError(t, err)
		require.Len(t, own.Runs, 1)
		require.Equal(t, runs[0].ID, own.Runs[0].ID)
		stats, err := client.Runs.Stats(ctx, tock.StatsFilter{GroupBy: "status"})
		require.NoError(t, err)
		require.NotEmpty(t, stats.Groups)
	})

	t.Run("BulkDryRunChangesNothing", func(t *testing.T) {
		res, err := client.Jobs.Bulk(ctx, tock.BulkRequest{Action: tock.BulkPause, DryRun: true,
			Filter: &tock.BulkFilter{Labels: []string{"case=paged"}}})
		require.NoError(t, err)
		require.True(t, res.DryRun)
		require.Equal(t, 7, res.Matched)
		require.Zero(t, res.Changed)
		require.Len(t, res.IDs, 7)
		for j, err := range client.Jobs.All(ctx, tock.JobFilter{Labels: map[string]string{"case": "paged"}}) {
			require.NoError(t, err)
			require.Equal(t, "scheduled", j.Status)
		}
		counts, err := client.Jobs.Counts(ctx, "")
		require.NoError(t, err)
		require.Zero(t, counts.Counts["paused"])
		require.Equal(t, counts.Total, counts.Counts["scheduled"]+counts.Counts["cancelled"]+counts.Counts["completed"])
	})

	t.Run("Me", func(t *testing.T) {
		me, err := client.Me(ctx)
		require.NoError(t, err)
		require.Equal(t, "sdk-user", me.Name)
		require.Equal(t, "user", me.Role)
		_, err = client.Users.List(ctx, 0, "")
		require.True(t, tock.IsForbidden(err), "%v", err)
		_, err = tock.New(c.APIURL, "not-a-key").Me(ctx)
		require.True(t, tock.IsUnauthorized(err), "%v", err)
	})

	t.Run("RotateSigningSecret", func(t *testing.T) {
		before, err := client.SigningSecret(ctx)
		require.NoError(t, err)
		after, err := client.RotateSigningSecret(ctx, 90*time.Minute)
		require.NoError(t, err)
		require.NotEqual(t, before.Secret, after.Secret)
		require.NotNil(t, after.PreviousValidUntil)
		require.WithinDuration(t, time.Now().Add(90*time.Minute), *after.PreviousValidUntil, time.Minute)
	})

	t.Run("ReadOnlyKey", func(t *testing.T) {
		me, err := client.Me(ctx)
		require.NoError(t, err)
		ro, err := client.Keys.CreateWith(ctx, me.ID, tock.KeyOptions{Name: "wall screen",
			Scopes: []string{tock.ScopeJobsRead, tock.ScopeRunsRead}})
		require.NoError(t, err)
		require.Equal(t, []string{tock.ScopeJobsRead, tock.ScopeRunsRead}, ro.Scopes)
		reader := tock.New(c.APIURL, ro.Secret)
		_, err = reader.Jobs.List(ctx, tock.JobFilter{})
		require.NoError(t, err)
		_, err = reader.Jobs.Create(ctx, ping("read-only"))
		require.True(t, tock.IsForbidden(err), "%v", err)
		require.Contains(t, err.Error(), "jobs:write")
	})
}
