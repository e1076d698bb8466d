package chaos

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/e2e/cluster"
	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/jobtype"
	"github.com/tockhq/tock/pkg/queue"
	"github.com/tockhq/tock/pkg/store"
)

// The load and the knobs. Every repair path is a few seconds long with these
// knobs, so a fault's whole story fits in one load of rate*window jobs.
const (
	rate       = 150              // jobs due per second
	window     = 15 * time.Second // the load's due times span this
	lead       = 3 * time.Second  // from insert to the first due time
	strikeAt   = 6 * time.Second  // from the first due time to the fault
	jobTimeout = 2 * time.Second
	slowEvery  = 5 // every fifth job's target answers after slowDelay
	slowDelay  = 300 * time.Millisecond
	lockTTL    = 3 * time.Second

	// A first delivery later than this after its scheduled_for is late. The
	// load alone stays well within it: tens of ms, about 500 ms when other
	// test packages share the 2 cores (go test ./e2e/...).
	lateAfter = time.Second
	// recoveryBound is "recovery in seconds". The slowest repairs: a lease
	// expiring (timeout 2 s + margin 1 s) and then a reconcile or reclaim
	// tick (1 s), about 4 s after the fault; and a worker whose Postgres
	// calls failed through an outage, which waits up to 5 s between retries
	// (services/worker backoffStep). The bound leaves room for a busy 2-core
	// machine.
	recoveryBound = 10 * time.Second
	// settleWait is how long after the last due time the suite waits for
	// every expected delivery and every run to end.
	settleWait = 45 * time.Second

	hangConcurrency = 32 // per worker, in TargetHangs
	hangJobs        = 80 // more than 2 workers x hangConcurrency slots
	failJobs        = 100
)

// knobs are the service settings every fault runs with.
var knobs = []string{
	"TOCK_LOCK_TTL=" + lockTTL.String(),
	// The loader claims only 2 s ahead, every 500 ms, so it is at work when a
	// scheduler fault strikes, and a leader's absence shows within seconds.
	"TOCK_LOAD_HORIZON=2s",
	"TOCK_LOAD_INTERVAL=500ms",
	"TOCK_RECONCILE_INTERVAL=1s",
	"TOCK_LOST_AFTER=5s",
	"TOCK_VISIBILITY_TIMEOUT=3s",
	"TOCK_LEASE_MARGIN=1s",
	"TOCK_RETRY_BACKOFF=200ms",
	"TOCK_RETRY_BACKOFF_MAX=1s",
}

// fixture is one fault's world: private servers, a cluster, a target.
type fixture struct {
	pg     *cluster.Postgres
	redis  *cluster.Redis
	rdb    *redis.Client
	queue  *queue.Queue // the cluster's, to read what runs
	c      *cluster.Cluster
	target *cluster.Target
	db     *pgxpool.Pool
	logDir string
	leader string // the scheduler that led just before the fault
}

// setup starts the private servers and the cluster, and stops everything when
// t ends, printing the service logs if t failed. A missing server binary skips
// t locally and fails it under CI=true.
func setup(t *testing.T, f fault) *fixture {
	t.Helper()
	ctx := t.Context()
	fx := &fixture{logDir: t.TempDir()}
	if dir := os.Getenv("TOCK_CHAOS_LOG_DIR"); dir != "" {
		fx.logDir = filepath.Join(dir, t.Name())
		require.NoError(t, os.MkdirAll(fx.logDir, 0o755))
	}
	var err error
	fx.pg, err = cluster.StartPostgres(ctx)
	unavailable(t, err)
	t.Cleanup(fx.pg.Close)
	fx.redis, err = cluster.StartRedis(ctx)
	unavailable(t, err)
	t.Cleanup(fx.redis.Close)

	fx.target = cluster.NewSlowTarget(slowDelay)
	t.Cleanup(fx.target.Close)

	env := knobs
	if f.defaults {
		env = nil
	}
	fx.c, err = cluster.Start(ctx, cluster.Options{
		BinDir: binDir, AdminURL: fx.pg.URL(), RedisURL: fx.redis.URL(),
		Schedulers: 2, Workers: 2, LogDir: fx.logDir, Logf: t.Logf,
		Env: env, WorkerEnv: f.workerEnv,
	})
	require.NoError(t, err, "start cluster")
	opt, err := redis.ParseURL(fx.redis.URL())
	require.NoError(t, err)
	fx.rdb = redis.NewClient(opt)
	t.Cleanup(func() { _ = fx.rdb.Close() })
	fx.queue = queue.New(fx.rdb, fx.c.RedisPrefix, 1)
	t.Cleanup(func() {
		fx.c.Stop()
		if t.Failed() {
			for _, name := range fx.c.Names() {
				t.Logf("--- %s log tail ---\n%s", name, fx.c.LogTail(name, 40))
			}
			t.Logf("--- postgres log tail ---\n%s", fx.pg.LogTail(20))
		}
		// Kept beside the services' logs (TOCK_CHAOS_LOG_DIR), for evidence.
		_ = os.WriteFile(filepath.Join(fx.logDir, "postgres.log"), []byte(fx.pg.LogTail(1_000_000)), 0o644)
	})
	fx.db, err = pgxpool.New(ctx, fx.c.DatabaseURL)
	require.NoError(t, err)
	t.Cleanup(fx.db.Close)
	return fx
}

func unavailable(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if errors.Is(err, cluster.ErrUnavailable) && os.Getenv("CI") != "true" {
		t.Skipf("skipping the fault suite: %v", err)
	}
	t.Fatalf("start private server: %v", err)
}

// kind is what a job's target does.
type kind string

const (
	kindOK   kind = "/ok"
	kindSlow kind = "/slow"
	kindHang kind = "/hang"
	kindFail kind = "/fail"
)

// planned is one job of the load, and what must become of it.
type planned struct {
	id       uuid.UUID
	at       time.Time
	kind     kind
	attempts int  // attempts the target must see: max_retries+1 for a failing job, else 1
	created  bool // through the API during the load, at its own pace
}

// load is every job a fault runs under.
type load struct {
	target  string
	first   time.Time // first due time
	strike  time.Time // when the fault strikes
	last    time.Time // last due time
	jobs    []*job.Job
	planned map[uuid.UUID]*planned
	created int      // jobs created through the API during the load
	failed  []string // what went wrong with the load itself
	notes   []string // figures of the load itself, for the log
}

// newLoad is the common load: rate jobs a second over window, the fault
// striking strikeAt into it.
func newLoad(target string, now time.Time) *load {
	return steadyLoad(rate, window, strikeAt)(target, now)
}

// steadyLoad is perSecond jobs due a second, over span, every fifth slow,
// the fault striking at into it.
func steadyLoad(perSecond int, span, at time.Duration) func(string, time.Time) *load {
	return func(target string, now time.Time) *load {
		l := startLoad(target, now, lead)
		l.strike = l.first.Add(at)
		n := int(span.Seconds() * float64(perSecond))
		for i := range n {
			due := l.first.Add(time.Duration(i) * time.Second / time.Duration(perSecond))
			k := kindOK
			if i%slowEvery == 0 {
				k = kindSlow
			}
			l.add(due, k, job.DefaultMaxRetries)
		}
		return l
	}
}

// burstLoad is n jobs due at one instant, start after the insert, the fault
// striking at after it.
func burstLoad(n int, start, at time.Duration) func(string, time.Time) *load {
	return func(target string, now time.Time) *load {
		l := startLoad(target, now, start)
		l.strike = l.first.Add(at)
		for range n {
			l.add(l.first, kindOK, job.DefaultMaxRetries)
		}
		return l
	}
}

func startLoad(target string, now time.Time, start time.Duration) *load {
	l := &load{target: target, planned: map[uuid.UUID]*planned{}}
	l.first = now.Add(start).Truncate(time.Millisecond)
	return l
}

// addBurst adds n jobs aimed at path, all due when the fault strikes, each
// allowed maxRetries retries; the target must see every attempt.
func (l *load) addBurst(path kind, n, maxRetries int) {
	for range n {
		l.add(l.strike, path, maxRetries)
	}
}

func (l *load) add(at time.Time, k kind, maxRetries int) {
	at = at.UTC().Truncate(time.Millisecond)
	payload, _ := json.Marshal(jobtype.WebhookPayload{URL: l.target + string(k)})
	now := time.Now().UTC()
	j := &job.Job{ID: job.NewID(), Owner: uuid.UUID{15: 1}, Name: "chaos" + string(k), Type: jobtype.TypeWebhook,
		Status: job.StatusScheduled, MaxRetries: maxRetries, Timeout: jobTimeout, RunAt: at, DueAt: at,
		Payload: payload, CreatedAt: now, UpdatedAt: now, Timezone: "UTC"}
	l.jobs = append(l.jobs, j)
	attempts := 1
	if k == kindHang || k == kindFail {
		attempts = maxRetries + 1
	}
	l.planned[j.ID] = &planned{id: j.ID, at: at, kind: k, attempts: attempts}
	if at.After(l.last) {
		l.last = at
	}
}

// insert stores the jobs unclaimed (due_at set), so the loader claims them
// round by round as it would jobs created ahead of time.
func (l *load) insert(ctx context.Context, databaseURL string) error {
	st, err := store.Open(ctx, databaseURL, 2)
	if err != nil {
		return err
	}
	defer st.Close()
	for start := 0; start < len(l.jobs); start += 5000 {
		if err := st.CreateJobs(ctx, l.jobs[start:min(start+5000, len(l.jobs))], store.Create{}); err != nil {
			return err
		}
	}
	return nil
}

// attemptKey names one attempt of one occurrence.
func attemptKey(id string, scheduledFor time.Time, attempt int) string {
	return fmt.Sprintf("%s:%d/%d", id, scheduledFor.UnixMilli(), attempt)
}

// running returns the attempts running now: their leases, which Redis
// holds (one shard, as the cluster runs), and any running row an older
// release left in job_runs.
func (fx *fixture) running(ctx context.Context) (map[string]bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	out := map[string]bool{}
	leases, err := fx.queue.Leased(ctx, time.Time{}, 1_000_000)
	if err != nil {
		return nil, err
	}
	for _, l := range leases {
		o := l.Occurrence
		out[attemptKey(o.JobID.String(), o.ScheduledFor, o.Attempt)] = true
	}
	rows, err := fx.db.Query(ctx, `SELECT job_id, scheduled_for, attempt FROM job_runs WHERE status = 'running'`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id uuid.UUID
		var at time.Time
		var attempt int16
		if err := rows.Scan(&id, &at, &attempt); err != nil {
			return nil, err
		}
		out[attemptKey(id.String(), at, int(attempt))] = true
	}
	return out, rows.Err()
}

// logEvent is one line of a service's JSON log.
type logEvent struct {
	TS  time.Time `json:"ts"`
	Msg string    `json:"msg"`
}

func (fx *fixture) events(name string) []logEvent {
	f, err := os.Open(filepath.Join(fx.logDir, name+".log"))
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []logEvent
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var e logEvent
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.Msg != "" {
			out = append(out, e)
		}
	}
	return out
}

// event returns the first time name logged msg after since.
func (fx *fixture) event(name, msg string, since time.Time) (time.Time, bool) {
	for _, e := range fx.events(name) {
		if e.Msg == msg && e.TS.After(since) {
			return e.TS, true
		}
	}
	return time.Time{}, false
}

// gainedBy returns when name took leadership after since.
func (fx *fixture) gainedBy(name string, since time.Time) (time.Time, bool) {
	return fx.event(name, "leadership_gained", since)
}

// currentLeader is the one scheduler whose last leadership event is
// leadership_gained, or "" while that is not exactly one.
func (fx *fixture) currentLeader() string {
	var leaders []string
	for _, name := range []string{"scheduler-1", "scheduler-2"} {
		last := ""
		for _, e := range fx.events(name) {
			if strings.HasPrefix(e.Msg, "leadership_") {
				last = e.Msg
			}
		}
		if last == "leadership_gained" {
			leaders = append(leaders, name)
		}
	}
	if len(leaders) != 1 {
		return ""
	}
	return leaders[0]
}

// outcome is what happened around the fault, for the verdict.
type outcome struct {
	sampled  time.Time       // the running attempts were read just before the strike
	struck   time.Time       // strike returned: the fault is in effect
	healed   time.Time       // heal returned (struck when there is none)
	repair   time.Time       // recovery counts from here: healed for an outage, else struck
	bound    time.Duration   // recovery must take at most this
	inFlight map[string]bool // attempts running at the fault
}

// runFault plays one fault: set up, load, strike in the middle, heal, wait
// for every delivery and every run to end, then judge the ledger and
// job_runs. It returns the fault's row, with every broken promise in it.
func runFault(t *testing.T, f fault) row {
	fx := setup(t, f)
	ctx := t.Context()

	shape := f.shape
	if shape == nil {
		shape = newLoad
	}
	l := shape(fx.target.URL, time.Now())
	if f.extra != nil {
		f.extra(l)
	}
	require.NoError(t, l.insert(ctx, fx.c.DatabaseURL))
	t.Logf("%s: %d jobs due from %s to %s; fault at %s", f.name, len(l.jobs),
		l.first.Format("15:04:05.000"), l.last.Format("15:04:05.000"), l.strike.Format("15:04:05.000"))
	wait := func() {}
	if f.during != nil {
		wait = f.during(ctx, fx, l)
	}

	cluster.SleepUntil(ctx, l.strike.Add(-300*time.Millisecond))
	require.True(t, cluster.WaitUntil(5*time.Second, 50*time.Millisecond, func() bool {
		fx.leader = fx.currentLeader()
		return fx.leader != ""
	}), "no single scheduler leads before the fault")

	// In flight at the fault: attempts running just before the strike, just
	// after it (when Postgres answers) and just after the heal; plus, for an
	// attempt that started between the first sample and the strike, every
	// attempt first delivered in that interval. A target's fault strikes when
	// its jobs fall due: the sample is taken just before, so that their own
	// attempts do not count as in flight and none of them may be duplicated.
	o := outcome{inFlight: map[string]bool{}, bound: cmp.Or(f.bound, recoveryBound)}
	if f.strike == nil {
		cluster.SleepUntil(ctx, l.strike.Add(-100*time.Millisecond))
	} else {
		cluster.SleepUntil(ctx, l.strike)
	}
	o.sampled = time.Now()
	before, err := fx.running(ctx)
	require.NoError(t, err, "read running attempts before the fault")
	addAll(o.inFlight, before)
	if f.strike != nil {
		require.NoError(t, f.strike(ctx, fx), "strike")
		o.struck = time.Now()
		if after, err := fx.running(ctx); err == nil {
			addAll(o.inFlight, after)
		}
	} else {
		o.struck = l.strike
	}
	o.healed = o.struck
	if f.heal != nil {
		cluster.SleepUntil(ctx, o.struck.Add(f.hold))
		require.NoError(t, f.heal(ctx, fx), "heal")
		o.healed = time.Now()
		// The pool's first queries after a Postgres restart may meet dead
		// connections.
		var healedRunning map[string]bool
		require.True(t, cluster.WaitUntil(5*time.Second, 100*time.Millisecond, func() bool {
			healedRunning, err = fx.running(ctx)
			return err == nil
		}), "read running attempts after the heal: %v", err)
		addAll(o.inFlight, healedRunning)
	}
	o.repair = o.struck
	if f.outage {
		o.repair = o.healed
	}
	t.Logf("%s: leader before %s; struck at %s, healed at %s; %d attempts seen running around the fault",
		f.name, fx.leader, o.struck.Format("15:04:05.000"), o.healed.Format("15:04:05.000"), len(o.inFlight))

	wait()

	// Wait until the ledger holds every expected attempt and every run ended.
	settled := cluster.WaitUntil(time.Until(l.last.Add(settleWait)), 250*time.Millisecond, func() bool {
		return complete(l, fx.target.Deliveries()) && fx.allEnded(ctx)
	})
	if !settled {
		t.Logf("%s: not settled %s after the last due time; judging what there is", f.name, settleWait)
	}
	for _, d := range fx.target.Deliveries() {
		if d.At.After(o.sampled) && !d.At.After(o.struck) {
			o.inFlight[attemptKey(d.JobID, d.ScheduledFor, d.Attempt)] = true
		}
	}
	for _, n := range l.notes {
		t.Logf("%s: %s", f.name, n)
	}
	r := judge(ctx, fx, l, o)
	r.fault = f.name
	if f.check != nil {
		r.problems = append(r.problems, f.check(fx, o)...)
	}
	t.Logf("%s: %d jobs (%d created through the API), %d delivered, %d lost, %d duplicate deliveries (%d attempts in flight at the fault), recovery %s (%s), max lateness %s (%s before the fault)",
		f.name, r.jobs, l.created, r.delivered, r.lost, r.dups, r.inFlight, r.recovery.Round(time.Millisecond), r.recoveredBy,
		r.maxLate.Round(time.Millisecond), r.preLate.Round(time.Millisecond))
	return r
}

func addAll(dst, src map[string]bool) {
	for k := range src {
		dst[k] = true
	}
}

// complete reports whether the ledger holds every attempt the load expects.
func complete(l *load, ds []cluster.Delivery) bool {
	seen := map[string]bool{}
	for _, d := range ds {
		seen[fmt.Sprintf("%s/%d", d.JobID, d.Attempt)] = true
	}
	for _, p := range l.planned {
		for a := 1; a <= p.attempts; a++ {
			if !seen[fmt.Sprintf("%s/%d", p.id, a)] {
				return false
			}
		}
	}
	return true
}

// allEnded reports whether no attempt runs and no job is still scheduled.
func (fx *fixture) allEnded(ctx context.Context) bool {
	running, err := fx.running(ctx)
	if err != nil || len(running) > 0 {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var open int
	err = fx.db.QueryRow(ctx, `SELECT count(*) FROM jobs WHERE status NOT IN ('completed', 'permanently_failed')`).Scan(&open)
	return err == nil && open == 0
}
