// Command bench is tock's benchmark (`make bench`): it starts the real
// services on the local Postgres and Redis, in a database and key prefix of
// their own, aims webhook jobs at a fast HTTP target inside this process, and
// measures ingest, a burst of jobs due at one instant, a steady stream of
// jobs each due at its own millisecond, storage per job and CPU per job.
//
// It prints a table and writes the figures as JSON (-out). It fails (exit 1)
// when a job is lost or starts before it is due, never on a speed figure.
// With -budget it also compares each process's CPU per job with the file's
// budget and fails (exit 3) when one is over: CI runs it with -quick and
// bench/budget.json so that the command keeps working and the hot path stays
// as cheap as it is, and people run the full version to read the figures.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// config is what to run, from the command line.
type config struct {
	quick      bool
	workers    int
	schedulers int
	burst      int
	// burstFlowKeys spreads the burst over flow keys, each with
	// burstFlowConcurrency (0: no keys).
	burstFlowKeys, burstFlowConcurrency int
	// burstSpread spreads the burst's due times evenly over this long; 0
	// makes them one instant.
	burstSpread time.Duration
	steadyRate  int
	steadyFor   time.Duration
	idleFor     time.Duration
	bulk        int
	bulkBatch   int
	bulkConc    int
	single      int
	clients     int
	out         string
	keep        bool
	binDir      string
	databaseURL string
	redisURL    string
	// profileDir, when set, receives CPU profiles of every service during
	// the burst and the steady phase.
	profileDir string
	// budget, when set, names the file of the most CPU per job each process
	// may spend in each phase.
	budget string
}

// errFailed says the run finished but found lost or early jobs; the figures
// were still written.
var errFailed = errors.New("benchmark found lost or early jobs")

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:])
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(exitCode(err))
	}
}

// exitCode is 3 when the only failure is CPU over budget, so that CI tells a
// dearer hot path from a lost or early job; 1 otherwise.
func exitCode(err error) int {
	if errors.Is(err, errOverBudget) && !errors.Is(err, errFailed) {
		return 3
	}
	return 1
}

func run(ctx context.Context, args []string) error {
	cfg, err := parseFlags(args)
	if err != nil {
		return err
	}
	// The budget is read before the run, so that a bad file fails at once.
	var bud *budget
	if cfg.budget != "" {
		if bud, err = loadBudget(cfg.budget); err != nil {
			return err
		}
		if bud.quick != cfg.quick {
			sizes := map[bool]string{true: "-quick's sizes", false: "the full sizes"}
			return fmt.Errorf("budget %s is for %s, this run has %s", cfg.budget, sizes[bud.quick], sizes[cfg.quick])
		}
	}
	b, err := newBench(ctx, cfg)
	if err != nil {
		return err
	}
	res, runErr := b.run(ctx)
	b.close(runErr != nil || len(res.Failures) > 0)
	var rows []budgetRow
	if res != nil {
		res.print(os.Stdout)
		if bud != nil && runErr == nil {
			rows = bud.check(res)
			bud.print(os.Stdout, rows)
		}
		if err := res.write(cfg.out); err != nil {
			return err
		}
		fmt.Printf("\nwrote %s\n", cfg.out)
	}
	if runErr != nil {
		return runErr
	}
	var failed error
	if len(res.Failures) > 0 {
		failed = fmt.Errorf("%w: %v", errFailed, res.Failures)
	}
	if bud != nil {
		return errors.Join(failed, bud.overBudget(rows))
	}
	return failed
}

// parseFlags reads the command line. -quick changes the defaults of the sizes
// it governs; a size given explicitly wins over it.
func parseFlags(args []string) (config, error) {
	var c config
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.BoolVar(&c.quick, "quick", false, "small sizes for CI: 10,000 burst jobs, 10 s of steady load")
	fs.IntVar(&c.workers, "workers", 2, "worker processes")
	fs.IntVar(&c.schedulers, "schedulers", 1, "scheduler processes")
	fs.IntVar(&c.burst, "burst", 100_000, "webhook jobs due at one instant")
	fs.IntVar(&c.burstFlowKeys, "burst-flow-keys", 0, "spread the burst's jobs over this many flow keys (0: none)")
	fs.IntVar(&c.burstFlowConcurrency, "burst-flow-concurrency", 5, "each burst flow key's concurrency")
	fs.DurationVar(&c.burstSpread, "burst-spread", 0, "spread the burst's due times evenly over this long (the 1M test: 1,000,000 due within 60s); 0 is one instant")
	fs.IntVar(&c.steadyRate, "steady-rate", 1000, "steady jobs due per second")
	fs.DurationVar(&c.steadyFor, "steady-for", 60*time.Second, "how long the steady load lasts")
	fs.DurationVar(&c.idleFor, "idle-for", 20*time.Second, "how long the idle phase measures the CPU of the whole stack with nothing due (0 skips it)")
	fs.IntVar(&c.bulk, "ingest-bulk", 100_000, "jobs created through the bulk API")
	fs.IntVar(&c.bulkBatch, "ingest-batch", 10_000, "jobs per bulk request")
	fs.IntVar(&c.bulkConc, "ingest-bulk-concurrency", 4, "concurrent bulk requests")
	fs.IntVar(&c.single, "ingest-single", 20_000, "jobs created one POST at a time")
	fs.IntVar(&c.clients, "ingest-clients", 32, "concurrent clients of the single POSTs")
	fs.StringVar(&c.out, "out", "bench/results/latest.json", "where the JSON figures go")
	fs.BoolVar(&c.keep, "keep", false, "keep the database, the Redis keys and the service logs")
	fs.StringVar(&c.profileDir, "profile", "", "directory for CPU profiles (pprof) of each service during the ingest, the burst, the steady load and the idle phase; read them with go tool pprof")
	fs.StringVar(&c.budget, "budget", "", "JSON file of the most CPU per job (µs) each process may spend in each phase (bench/budget.json); the run fails, exit 3, when one is over")
	fs.StringVar(&c.binDir, "bin", "bin", "directory holding the dashboard, scheduler and worker binaries; built into a temporary one when they are missing")
	fs.StringVar(&c.databaseURL, "database-url", envOr("TOCK_BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"),
		"Postgres URL with rights to CREATE DATABASE (TOCK_BENCH_DATABASE_URL)")
	fs.StringVar(&c.redisURL, "redis-url", envOr("TOCK_BENCH_REDIS_URL", "redis://127.0.0.1:6379/0"), "Redis URL (TOCK_BENCH_REDIS_URL)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments %v", fs.Args())
	}
	if c.quick {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		quick := map[string]func(){
			"burst":                   func() { c.burst = 10_000 },
			"steady-for":              func() { c.steadyFor = 10 * time.Second },
			"idle-for":                func() { c.idleFor = 5 * time.Second },
			"ingest-bulk":             func() { c.bulk = 20_000 },
			"ingest-bulk-concurrency": func() { c.bulkConc = 2 },
			"ingest-single":           func() { c.single = 2_000 },
		}
		for name, apply := range quick {
			if !set[name] {
				apply()
			}
		}
	}
	var problems []error
	check := func(ok bool, msg string) {
		if !ok {
			problems = append(problems, errors.New(msg))
		}
	}
	check(c.workers >= 1, "-workers must be at least 1")
	check(c.schedulers >= 1, "-schedulers must be at least 1")
	check(c.burst >= 1, "-burst must be at least 1")
	check(c.burstSpread >= 0, "-burst-spread must not be negative")
	check(c.steadyRate >= 1 && c.steadyRate <= 1_000_000, "-steady-rate must be 1..1000000")
	check(c.steadyFor >= time.Second, "-steady-for must be at least 1s")
	check(c.idleFor >= 0, "-idle-for must not be negative")
	check(c.bulk >= 1, "-ingest-bulk must be at least 1")
	check(c.bulkBatch >= 1 && c.bulkBatch <= 10_000, "-ingest-batch must be 1..10000")
	check(c.bulkConc >= 1, "-ingest-bulk-concurrency must be at least 1")
	check(c.single >= 1, "-ingest-single must be at least 1")
	check(c.clients >= 1, "-ingest-clients must be at least 1")
	check(c.out != "", "-out must name a file")
	return c, errors.Join(problems...)
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
