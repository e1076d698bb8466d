package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/tockhq/tock/pkg/job"
)

// Modes: how jobs reach tock.
const (
	ModeAPI  = "api"
	ModeCopy = "copy"
)

// Defaults that match `make run` (scripts/dev/run.sh).
const (
	defaultAPI       = "http://127.0.0.1:8080"
	defaultDatabase  = "postgres://postgres@127.0.0.1:5432/tock?sslmode=disable"
	defaultTokenFile = ".run/admin-token"
	defaultURL       = "http://127.0.0.1:9999/hook"
)

// config is every flag, read and checked once.
type config struct {
	profile     Profile
	startText   string
	mix         Mix
	seed        uint64
	mode        string
	api         string
	token       string
	database    string
	batch       int
	concurrency int
	dryRun      bool
	quiet       bool
}

const usageHead = `generate-load creates N jobs over a range of minutes with a per-minute
profile, through the bulk API (POST /api/v1/jobs:batch) or straight into
Postgres with COPY, and prints what it created.

  go run ./scripts/generate-load [flags]

With ` + "`make run`" + ` going, the defaults reach its dashboard and database.

Flags:
`

// parseFlags reads the command line; every problem is reported together.
func parseFlags(args []string, getenv func(string) string, stderr io.Writer) (config, error) {
	var (
		c                                      config
		types, prios, heavy, tokenFlag, dbFlag string
	)
	fs := flag.NewFlagSet("generate-load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usageHead)
		fs.PrintDefaults()
	}
	fs.IntVar(&c.profile.Total, "n", 0, "total jobs; 0 derives it from the profile (uniform: 1,000 a minute; heavy: the drawn counts). With heavy, a total scales the drawn counts, keeping their shape")
	fs.StringVar(&c.startText, "start", "1m", "start of the range: an RFC 3339 time, or a delay from now (1m, 90s) rounded up to the next whole minute")
	fs.IntVar(&c.profile.Minutes, "minutes", 10, "length of the range in minutes")
	fs.StringVar(&c.profile.Name, "profile", ProfileUniform, "per-minute profile: uniform, or heavy (a random 1,000-5,000 a minute, and the -heavy-minutes at 10,000)")
	fs.StringVar(&heavy, "heavy-minutes", "3,7", "with -profile heavy, the minutes (offsets from -start, from 0) that get 10,000 jobs; empty for none")
	fs.Uint64Var(&c.seed, "seed", 0, "random seed, for a reproducible plan and mix; 0 picks one (the summary prints it)")
	fs.Float64Var(&c.mix.Recurring, "recurring", 0, "share of recurring jobs, 0..1: a daily cron, every=day or every=week schedule whose first run falls in the job's minute")
	fs.StringVar(&prios, "priorities", "0", "priorities to choose from uniformly, comma-separated, e.g. -10,0,10")
	fs.StringVar(&types, "types", "webhook", "job types to choose from uniformly, comma-separated: "+strings.Join(loadable(), ", "))
	fs.StringVar(&c.mix.URL, "url", defaultURL, "target URL of webhook and ping jobs (and the Slack webhook URL); a loopback target needs TOCK_ALLOW_PRIVATE_TARGETS=true, as make run sets")
	fs.StringVar(&c.mix.Name, "name", "", `job name prefix: jobs are named "<name>-<sequence>"; default "load-<UTC start of this run>", so that two runs' jobs never share a name`)
	fs.StringVar(&c.mode, "mode", ModeAPI, "api: POST /api/v1/jobs:batch; copy: build jobs as the API does and COPY them into Postgres, owned by the bootstrap admin")
	fs.StringVar(&c.api, "api", defaultAPI, "api mode: the dashboard's base URL")
	fs.StringVar(&tokenFlag, "token", "", "api mode: bearer token; default $TOCK_ADMIN_TOKEN, else the file "+defaultTokenFile+" that make run writes")
	fs.StringVar(&dbFlag, "database", "", "copy mode: Postgres URL; default $TOCK_DATABASE_URL, else "+defaultDatabase+" (make run's database)")
	fs.IntVar(&c.batch, "batch", MaxBatchJobs, "jobs per request (api mode: at most 10,000) or per COPY transaction")
	fs.IntVar(&c.concurrency, "concurrency", 2, "batches in flight at once")
	fs.BoolVar(&c.dryRun, "dry-run", false, "print the per-minute plan and create nothing")
	fs.BoolVar(&c.quiet, "quiet", false, "no progress bar (there is none either when stderr is not a terminal)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments %q; see -h", fs.Args())
	}

	var problems []error
	var err error
	if c.mix.Types, err = ParseTypes(types); err != nil {
		problems = append(problems, fmt.Errorf("-types: %w", err))
	}
	if c.mix.Priorities, err = ParseInts(prios); err != nil {
		problems = append(problems, fmt.Errorf("-priorities: %w", err))
	}
	for _, p := range c.mix.Priorities {
		if p < job.MinPriority || p > job.MaxPriority {
			problems = append(problems, fmt.Errorf("-priorities: %d is outside %d..%d", p, job.MinPriority, job.MaxPriority))
		}
	}
	if c.profile.Heavy, err = ParseInts(heavy); err != nil {
		problems = append(problems, fmt.Errorf("-heavy-minutes: %w", err))
	}
	if c.mix.Recurring < 0 || c.mix.Recurring > 1 {
		problems = append(problems, fmt.Errorf("-recurring: %v is not between 0 and 1", c.mix.Recurring))
	}
	named := false
	fs.Visit(func(f *flag.Flag) { named = named || f.Name == "name" })
	if !named {
		c.mix.Name = "load-" + time.Now().UTC().Format("20060102-150405")
	} else if strings.TrimSpace(c.mix.Name) == "" {
		problems = append(problems, errors.New("-name: must not be empty"))
	}
	switch c.mode {
	case ModeAPI:
		if c.batch > MaxBatchJobs {
			problems = append(problems, fmt.Errorf("-batch: the bulk API takes at most %d jobs a request", MaxBatchJobs))
		}
		c.token = tokenFlag
		if c.token == "" {
			c.token = getenv("TOCK_ADMIN_TOKEN")
		}
		if c.token == "" && !c.dryRun {
			raw, err := os.ReadFile(defaultTokenFile)
			if err != nil {
				problems = append(problems, fmt.Errorf("-token: not given, TOCK_ADMIN_TOKEN is unset, and %s is unreadable (run from the repository after make run): %w", defaultTokenFile, err))
			}
			c.token = strings.TrimSpace(string(raw))
		}
	case ModeCopy:
		c.database = dbFlag
		if c.database == "" {
			c.database = getenv("TOCK_DATABASE_URL")
		}
		if c.database == "" {
			c.database = defaultDatabase
		}
	default:
		problems = append(problems, fmt.Errorf("-mode: must be %s or %s, not %q", ModeAPI, ModeCopy, c.mode))
	}
	if c.batch < 1 {
		problems = append(problems, errors.New("-batch: must be at least 1"))
	}
	if c.concurrency < 1 {
		problems = append(problems, errors.New("-concurrency: must be at least 1"))
	}
	if _, err := ParseStart(c.startText, time.Now()); err != nil {
		problems = append(problems, fmt.Errorf("-start: %w", err))
	}
	return c, errors.Join(problems...)
}
