package chaos

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/e2e/cluster"
)

// A failover to a replica that had not received the master's last writes,
// simulated: Redis is snapshotted (SAVE), the loader claims more rounds of
// every-second occurrences, and Redis is killed and started again from the
// snapshot, so it holds its marker but not the last claims. No occurrence
// may be lost: every second of every job in the window has its run, and is
// delivered.
func TestFailoverLosesNoOccurrence(t *testing.T) {
	fx := setup(t, fault{name: "Failover"})
	ctx := t.Context()
	user, _, err := fx.c.API().User(ctx, "crons", roomy)
	require.NoError(t, err)
	const jobs = 20
	ids := make([]string, 0, jobs)
	for i := range jobs {
		var j cluster.Job
		code, err := user.Do(ctx, "POST", "/api/v1/jobs", map[string]any{"name": fmt.Sprintf("every second %d", i), "type": "webhook",
			"schedule": map[string]any{"cron": "* * * * * *"}, "payload": map[string]any{"url": fx.target.URL + "/ok"}}, &j)
		require.NoError(t, err)
		require.Equal(t, http.StatusCreated, code)
		ids = append(ids, j.ID)
	}
	rdb := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", fx.redis.Port)})
	t.Cleanup(func() { _ = rdb.Close() })
	loadMark := func() int64 {
		var seq int64
		require.NoError(t, fx.db.QueryRow(ctx, `SELECT seq FROM tock_marks WHERE name = 'load'`).Scan(&seq))
		return seq
	}

	time.Sleep(3 * time.Second) // steady: every job runs every second
	require.NoError(t, rdb.Save(ctx).Err(), "snapshot")
	snapshot := time.Now()
	mark := loadMark()
	require.True(t, cluster.WaitUntil(10*time.Second, 50*time.Millisecond, func() bool { return loadMark() >= mark+2 }),
		"the loader claims again after the snapshot")
	require.NoError(t, fx.redis.Kill())
	require.NoError(t, fx.redis.Start(ctx), "Redis comes back from the snapshot, as a lagging replica promoted")
	failover := time.Now()
	lost, err := rdb.Get(ctx, fx.c.RedisPrefix+":{s0}:marker").Int64()
	require.NoError(t, err, "the snapshot kept the marker")
	t.Logf("snapshot at %s (load mark %d); failover at %s, %d claims later (load mark %d in the restored marker)",
		snapshot.Format("15:04:05.000"), mark, failover.Format("15:04:05.000"), loadMark()-mark, lost)
	require.Less(t, lost, loadMark(), "the restored Redis lacks claims Postgres committed")

	// Every second from just before the snapshot to well after the failover.
	from := snapshot.Truncate(time.Second).Add(-time.Second)
	until := failover.Truncate(time.Second).Add(6 * time.Second)
	cluster.SleepUntil(ctx, until.Add(8*time.Second))
	var missing []string
	for _, id := range ids {
		rows, err := fx.db.Query(ctx, `SELECT scheduled_for FROM job_runs WHERE job_id = $1 AND scheduled_for >= $2 AND scheduled_for < $3`,
			uuid.MustParse(id), from, until)
		require.NoError(t, err)
		ran := map[int64]bool{}
		for rows.Next() {
			var at time.Time
			require.NoError(t, rows.Scan(&at))
			ran[at.Unix()] = true
		}
		require.NoError(t, rows.Err())
		for s := from; s.Before(until); s = s.Add(time.Second) {
			if !ran[s.Unix()] {
				missing = append(missing, fmt.Sprintf("%s@%s", id[:8], s.Format("15:04:05")))
			}
		}
	}
	// The deliveries of the occurrences due after the failover: how late the
	// repair made them.
	var late []time.Duration
	first := map[string]time.Time{}
	for _, d := range fx.target.Deliveries() {
		k := d.JobID + d.ScheduledFor.String()
		if at, ok := first[k]; !ok || d.At.Before(at) {
			first[k] = d.At
		}
	}
	for _, d := range fx.target.Deliveries() {
		if d.ScheduledFor.After(failover.Add(-3*time.Second)) && d.ScheduledFor.Before(until) {
			late = append(late, first[d.JobID+d.ScheduledFor.String()].Sub(d.ScheduledFor))
		}
	}
	sort.Slice(late, func(i, j int) bool { return late[i] < late[j] })
	if len(late) > 0 {
		t.Logf("%d deliveries due around the failover: lateness p50 %s, max %s", len(late),
			late[len(late)/2].Round(time.Millisecond), late[len(late)-1].Round(time.Millisecond))
	}
	require.Empty(t, missing, "%d of %d occurrences from %s to %s have no run", len(missing),
		jobs*int(until.Sub(from)/time.Second), from.Format("15:04:05"), until.Format("15:04:05"))
	rebuilt := false
	for _, s := range []string{"scheduler-1", "scheduler-2"} {
		if _, ok := fx.event(s, "redis_rebuilt", failover); ok {
			rebuilt = true
		}
	}
	require.True(t, rebuilt, "a scheduler rebuilt what the failover lost")
}

// A dashboard killed between committing a batch of claimed jobs and adding
// them to the due set: its ZADD is held by a proxy in front of Redis, and the
// dashboard killed once the batch is committed. Every job runs within 5 s of
// the restart or of its due time, whichever is later.
func TestDashboardKilledMidBatch(t *testing.T) {
	fx := setup(t, fault{name: "DashboardKill"})
	ctx := t.Context()
	proxy := newZaddHold(t, fmt.Sprintf("127.0.0.1:%d", fx.redis.Port))
	_, err := fx.c.StartProc(ctx, "dashboard", "dashboard-2", "TOCK_REDIS_URL=redis://"+proxy.addr()+"/0")
	require.NoError(t, err)
	_, key, err := userKey(ctx, fx.c.API(), "batch")
	require.NoError(t, err)
	victim := &cluster.API{Base: "http://" + fx.c.Proc("dashboard-2").Addr, Token: key, HTTP: &http.Client{Timeout: time.Minute}}

	const n = 2000
	due := time.Now().Add(1500 * time.Millisecond).UTC().Truncate(time.Millisecond)
	batch := make([]any, n)
	for i := range batch {
		batch[i] = map[string]any{"name": fmt.Sprintf("batch %d", i), "type": "webhook", "run_at": due,
			"payload": map[string]any{"url": fx.target.URL + "/ok"}}
	}
	proxy.arm()
	go func() {
		// Never answered: the dashboard dies first.
		if _, err := victim.CreateBatch(ctx, batch); err != nil && ctx.Err() == nil {
			t.Logf("the batch's request: %v", err)
		}
	}()
	select {
	case <-proxy.held:
	case <-time.After(20 * time.Second):
		t.Fatal("the dashboard never sent its ZADD")
	}
	t.Logf("held: %q", proxy.chunk)
	var committed int
	var qerr error
	require.True(t, cluster.WaitUntil(10*time.Second, 20*time.Millisecond, func() bool {
		qerr = fx.db.QueryRow(ctx, `SELECT count(*) FROM jobs WHERE claimed_by IS NOT NULL AND due_at IS NULL`).Scan(&committed)
		return qerr == nil && committed == n
	}), "the batch is committed claimed (%d of %d; %v)", committed, n, qerr)
	require.NoError(t, fx.c.Signal("dashboard-2", syscall.SIGKILL))
	killed := time.Now()
	require.NoError(t, fx.c.Wait("dashboard-2", 5*time.Second))
	proxy.release()
	_, err = fx.c.StartProc(ctx, "dashboard", "dashboard-2", "TOCK_REDIS_URL="+fx.redis.URL())
	require.NoError(t, err)
	restarted := time.Now()
	t.Logf("batch of %d due at %s; committed and its ZADD held; killed at %s, restarted at %s",
		n, due.Format("15:04:05.000"), killed.Format("15:04:05.000"), restarted.Format("15:04:05.000"))

	bound := restarted
	if due.After(bound) {
		bound = due
	}
	delivered := fx.target.WaitFor(30*time.Second, func(ds []cluster.Delivery) bool { return len(firstDeliveries(ds)) >= n })
	first := firstDeliveries(fx.target.Deliveries())
	var last time.Time
	for _, at := range first {
		if at.After(last) {
			last = at
		}
	}
	t.Logf("%d of %d jobs delivered; the last %s after the later of the restart and the due time (the bound is 5 s)",
		len(first), n, last.Sub(bound).Round(time.Millisecond))
	require.True(t, delivered, "only %d of %d jobs delivered", len(first), n)
	require.LessOrEqual(t, last.Sub(bound), 5*time.Second, "every job runs within 5 s of the restart or its due time")
	_, adopted := fx.event(fx.leaderNow(t), "dead_dashboards_adopted", killed)
	require.True(t, adopted, "the leader adopted the dead dashboard's claims")
}

// roomy are limits no test load here reaches.
var roomy = map[string]any{"jobs_per_minute": 10_000_000, "job_burst": 1_000_000, "max_active_jobs": 1_000_000,
	"requests_per_minute": 1_000_000, "request_burst": 100_000, "occurrences_per_minute": 1_000_000,
	"occurrences_per_second": 1_000_000}

// firstDeliveries maps each job to its first delivery.
func firstDeliveries(ds []cluster.Delivery) map[string]time.Time {
	out := map[string]time.Time{}
	for _, d := range ds {
		if at, ok := out[d.JobID]; !ok || d.At.Before(at) {
			out[d.JobID] = d.At
		}
	}
	return out
}

// leaderNow is the scheduler that leads now.
func (fx *fixture) leaderNow(t *testing.T) string {
	t.Helper()
	var leader string
	require.True(t, cluster.WaitUntil(5*time.Second, 50*time.Millisecond, func() bool {
		leader = fx.currentLeader()
		return leader != ""
	}), "no single scheduler leads")
	return leader
}

// userKey creates a user and returns its id and API key.
func userKey(ctx context.Context, admin *cluster.API, name string) (string, string, error) {
	u, id, err := admin.User(ctx, name, roomy)
	if err != nil {
		return "", "", err
	}
	return id, u.Token, nil
}

// zaddHold is a TCP proxy in front of Redis that, once armed, holds the
// first connection that sends a ZADD: the command never reaches Redis and
// no answer comes back, as from a process that died before sending it.
type zaddHold struct {
	ln     net.Listener
	target string
	held   chan struct{}

	mu      sync.Mutex
	armed   bool
	holding bool
	chunk   string // the start of what was held
	conns   []net.Conn
	free    chan struct{}
}

func newZaddHold(t *testing.T, target string) *zaddHold {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &zaddHold{ln: ln, target: target, held: make(chan struct{}), free: make(chan struct{})}
	t.Cleanup(func() {
		_ = ln.Close()
		p.release()
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, c := range p.conns {
			_ = c.Close()
		}
	})
	go p.serve()
	return p
}

func (p *zaddHold) addr() string { return p.ln.Addr().String() }

func (p *zaddHold) arm() { p.mu.Lock(); p.armed = true; p.mu.Unlock() }

// release lets the held connection die.
func (p *zaddHold) release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.free:
	default:
		close(p.free)
	}
}

func (p *zaddHold) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, up)
		p.mu.Unlock()
		go func() { _, _ = io.Copy(c, up); _ = c.Close() }()
		go func() {
			defer up.Close()
			buf := make([]byte, 64<<10)
			for {
				k, err := c.Read(buf)
				if k > 0 && p.hold(buf[:k]) {
					<-p.free
					return
				}
				if k > 0 {
					if _, werr := up.Write(buf[:k]); werr != nil {
						return
					}
				}
				if err != nil {
					return
				}
			}
		}()
	}
}

// hold reports whether chunk carries a ZADD that must be held: the first
// one after arm.
func (p *zaddHold) hold(chunk []byte) bool {
	if !bytes.Contains(bytes.ToLower(chunk), []byte("\r\nzadd\r\n")) {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.armed || p.holding {
		return false
	}
	p.holding = true
	p.chunk = string(chunk[:min(len(chunk), 120)])
	close(p.held)
	return true
}
