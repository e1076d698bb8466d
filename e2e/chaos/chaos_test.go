// Package chaos is tock's fault suite (`make chaos`). Each fault gets a fresh
// private Postgres and Redis, a fresh cluster (1 dashboard, 2 schedulers, 2
// workers) and a steady load of webhook jobs; the fault strikes in the middle
// of the load. The recording target's ledger and job_runs then show whether
// every due occurrence was delivered at least once, whether duplicates came
// only from attempts in flight at the fault and kept their Idempotency-Key,
// whether every run ended, and how long tock took to be on time again.
package chaos

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/e2e/cluster"
)

var binDir string

func TestMain(m *testing.M) { os.Exit(cluster.Main(m, &binDir)) }

// fault is one thing that goes wrong. strike makes it happen; heal, after
// hold, undoes what can be undone (a restart); both may be nil. extra adds
// jobs of its own to the load (a target that misbehaves).
type fault struct {
	name      string
	workerEnv []string // worker knobs beyond the common ones
	extra     func(l *load)
	strike    func(ctx context.Context, f *fixture) error
	hold      time.Duration
	heal      func(ctx context.Context, f *fixture) error
	// outage marks a fault of a dependency (Postgres, Redis) that tock can
	// only wait out: its recovery counts from the heal. Recovery from a
	// process fault counts from the strike, since the other instances must
	// repair it without waiting for a restart.
	outage bool
	// check adds fault-specific findings, such as who led when.
	check func(f *fixture, o outcome) []string

	// shape makes the load; nil is the common steady load (newLoad).
	shape func(target string, now time.Time) *load
	// defaults runs the services with tock's default settings instead of
	// the suite's quick knobs: recovery as a user deploying tock sees it.
	defaults bool
	// bound is how soon after the strike (the heal, for an outage) every
	// late job must have started; 0 is recoveryBound.
	bound time.Duration
	// during starts work of the fault's own beside the load, such as
	// creates through the API, and returns a wait for its end, called after
	// the heal: it adds what it created to the load.
	during func(ctx context.Context, f *fixture, l *load) (wait func())
	// known names a bug this fault still finds: it runs only with
	// TOCK_CHAOS_KNOWN=1, so that make chaos stays a gate, and says why
	// when it is skipped.
	known string
}

// TestChaos runs every fault in turn and prints one row per fault.
func TestChaos(t *testing.T) {
	var (
		mu   sync.Mutex
		rows []row
	)
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		table := formatTable(rows)
		t.Logf("fault suite results:\n%s", table)
		if path := os.Getenv("TOCK_CHAOS_REPORT"); path != "" {
			if err := os.WriteFile(path, []byte(table), 0o644); err != nil {
				t.Errorf("write TOCK_CHAOS_REPORT: %v", err)
			}
		}
	})
	for _, f := range append(faults(), storeOutages()...) {
		t.Run(f.name, func(t *testing.T) {
			if f.known != "" && os.Getenv("TOCK_CHAOS_KNOWN") != "1" {
				t.Skipf("known bug, run with TOCK_CHAOS_KNOWN=1: %s", f.known)
			}
			r := runFault(t, f)
			mu.Lock()
			rows = append(rows, r)
			mu.Unlock()
			require.Zero(t, len(r.problems), "fault %s broke %d promises:\n- %s", f.name, len(r.problems), strings.Join(r.problems, "\n- "))
		})
	}
}

func faults() []fault {
	return []fault{
		{
			name: "WorkerKill",
			strike: func(ctx context.Context, f *fixture) error {
				return f.c.Signal("worker-1", syscall.SIGKILL)
			},
		},
		{
			name: "LeaderKill",
			strike: func(ctx context.Context, f *fixture) error {
				return f.c.Signal(f.leader, syscall.SIGKILL)
			},
			hold: 5 * time.Second,
			heal: func(ctx context.Context, f *fixture) error {
				if err := f.c.Wait(f.leader, 5*time.Second); err != nil {
					return err
				}
				_, err := f.c.StartProc(ctx, "scheduler", f.leader)
				return err
			},
			check: func(f *fixture, o outcome) []string {
				if _, ok := f.gainedBy(otherScheduler(f.leader), o.struck); !ok {
					return []string{fmt.Sprintf("no other scheduler took leadership after %s was killed", f.leader)}
				}
				return nil
			},
		},
		{
			// Stopped for twice the lock's TTL: the lock expires, the other
			// scheduler takes over, and the stalled one, continued, must stop
			// leading at its first failed refresh.
			name: "LeaderStop",
			strike: func(ctx context.Context, f *fixture) error {
				return f.c.Signal(f.leader, syscall.SIGSTOP)
			},
			hold: 2 * lockTTL,
			heal: func(ctx context.Context, f *fixture) error {
				return f.c.Signal(f.leader, syscall.SIGCONT)
			},
			check: func(f *fixture, o outcome) []string {
				var out []string
				other := otherScheduler(f.leader)
				if at, ok := f.gainedBy(other, o.struck); !ok || at.After(o.healed) {
					out = append(out, fmt.Sprintf("%s did not take leadership while %s was stopped", other, f.leader))
				}
				if _, ok := f.event(f.leader, "leadership_lost", o.healed); !ok {
					out = append(out, fmt.Sprintf("%s, continued, never logged leadership_lost", f.leader))
				}
				return out
			},
		},
		{
			name:   "RedisRestart",
			outage: true,
			strike: func(ctx context.Context, f *fixture) error {
				return f.redis.Kill()
			},
			hold: time.Second,
			heal: func(ctx context.Context, f *fixture) error {
				return f.redis.Start(ctx)
			},
			check: func(f *fixture, o outcome) []string {
				for _, s := range []string{"scheduler-1", "scheduler-2"} {
					if _, ok := f.event(s, "redis_rebuilt", o.struck); ok {
						return nil
					}
				}
				return []string{"no scheduler logged redis_rebuilt after Redis lost its data"}
			},
		},
		{
			// Down longer than a lease (timeout 2 s + margin 1 s) and the
			// visibility timeout (3 s), as a busy database's crash recovery
			// can be: leases and pending entries age through the outage.
			name:   "PostgresRestart",
			outage: true,
			strike: func(ctx context.Context, f *fixture) error {
				return f.pg.StopImmediate(ctx)
			},
			hold: 4 * time.Second,
			heal: func(ctx context.Context, f *fixture) error {
				return f.pg.Start(ctx)
			},
		},
		{
			// More hanging attempts than the workers have slots: if the job
			// timeout did not free them, every other job would wait behind.
			name:      "TargetHangs",
			workerEnv: []string{fmt.Sprintf("TOCK_WORKER_CONCURRENCY=%d", hangConcurrency)},
			extra: func(l *load) {
				l.addBurst("/hang", hangJobs, 1)
			},
		},
		{
			name: "TargetFails",
			extra: func(l *load) {
				l.addBurst("/fail", failJobs, 2)
			},
		},
	}
}

func otherScheduler(name string) string {
	if name == "scheduler-1" {
		return "scheduler-2"
	}
	return "scheduler-1"
}

// formatTable renders the rows as a fixed-width table.
func formatTable(rows []row) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-16s %6s %10s %5s %5s %9s %8s %9s %9s %9s  %s\n",
		"fault", "jobs", "delivered", "lost", "dups", "in-flight", "outage", "recovery", "max-late", "pre-late", "result")
	for _, r := range rows {
		res := "pass"
		if len(r.problems) > 0 {
			res = fmt.Sprintf("FAIL (%d problems)", len(r.problems))
		}
		fmt.Fprintf(&b, "%-16s %6d %10d %5d %5d %9d %8s %9s %9s %9s  %s\n",
			r.fault, r.jobs, r.delivered, r.lost, r.dups, r.inFlight, r.outage.Round(10*time.Millisecond),
			r.recovery.Round(10*time.Millisecond), r.maxLate.Round(10*time.Millisecond), r.preLate.Round(10*time.Millisecond), res)
	}
	fmt.Fprintf(&b, "jobs: occurrences due; delivered: jobs the target saw at least once; lost: jobs missing an\n"+
		"expected attempt; dups: deliveries of an attempt after its first; in-flight: attempts running at the\n"+
		"fault (bound on dups); outage: strike to heal (a restart, a SIGCONT); recovery: from the strike,\n"+
		"or from the heal for Postgres and Redis, to the last first delivery more than %s late (0 if\n"+
		"none); max-late: latest first delivery after scheduled_for over the whole load; pre-late: the same\n"+
		"before the fault, the load's own lateness.\n", lateAfter)
	for _, r := range rows {
		for _, p := range r.problems {
			first, _, _ := strings.Cut(p, "\n")
			fmt.Fprintf(&b, "%s: %s\n", r.fault, first)
		}
	}
	return b.String()
}
