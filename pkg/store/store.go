// Package store is tock's Postgres layer: the embedded schema and its migrations,
// and every query the services run. SQL sits in named constants beside the method
// that runs it; pgx errors are translated to the job package's sentinels here and
// nowhere else.
package store

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/tern/v2/migrate"
	pgxuuid "github.com/vgarvardt/pgx-google-uuid/v5"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/secretbox"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Store runs tock's queries on a connection pool.
type Store struct {
	pool *pgxpool.Pool
	// direct reaches Postgres itself, for the migrations; empty means the
	// pool's URL.
	direct string
	// secrets seals users' signing secrets at rest and opens them; nil
	// stores them as they are.
	secrets *secretbox.Box
	// encoders write a bulk create's rows (copyJobs).
	encoders jobEncoders
}

// Option adjusts what Open makes.
type Option func(*options)

type options struct {
	pool    *pgxpool.Config
	direct  string
	secrets *secretbox.Box
}

// DirectURL is where Migrate connects when the pool's URL goes through a
// pooler in transaction mode (PgBouncer): tern holds a session's advisory
// lock while it migrates, which such a pooler cannot carry. Empty keeps the
// pool's URL.
func DirectURL(url string) Option {
	return func(o *options) { o.direct = url }
}

// Secrets seals users' signing secrets under the operator key of box
// (TOCK_SECRET_KEY), and opens what earlier keys sealed.
func Secrets(box *secretbox.Box) Option {
	return func(o *options) { o.secrets = box }
}

// GenericPlans makes every connection plan its prepared statements once,
// with partition pruning at execution (plan_cache_mode=force_generic_plan),
// unless the URL sets plan_cache_mode itself. The worker's Fetch and
// FinishRuns run thousands of times a second over job_runs' day partitions:
// planning them for each call costs more than running them (measured with
// make bench: a 30,000-job burst ran in 3.6 s against 4.1 s). Queries with
// optional filters (the dashboard's listings) want custom plans, so this is
// for the hot paths only.
func GenericPlans() Option {
	return func(o *options) {
		c := o.pool
		// Only prepared statements have plans to keep; a URL that asks for
		// another mode (default_query_exec_mode=cache_describe, for PgBouncer in
		// transaction mode, which also refuses unknown start-up
		// parameters) gets none.
		if c.ConnConfig.DefaultQueryExecMode != pgx.QueryExecModeCacheStatement {
			return
		}
		if _, set := c.ConnConfig.RuntimeParams["plan_cache_mode"]; !set {
			c.ConnConfig.RuntimeParams["plan_cache_mode"] = "force_generic_plan"
		}
	}
}

// Open connects to Postgres. The URL may carry pool settings (pool_max_conns)
// and a search_path, which tests use to give each test its own schema.
func Open(ctx context.Context, url string, maxConns int32, opts ...Option) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("parse database url: %w", err)
	}
	if maxConns > 0 {
		cfg.MaxConns = maxConns
	}
	o := options{pool: cfg}
	for _, opt := range opts {
		opt(&o)
	}
	// pgx would pass a google/uuid UUID through its driver.Valuer, as text:
	// an allocation, an error value and a parse per id, which was nearly half
	// of the dashboard's CPU in a bulk insert (make bench -profile). The
	// registered codec writes and reads the 16 bytes directly.
	after := cfg.AfterConnect
	cfg.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
		pgxuuid.Register(conn.TypeMap())
		if after != nil {
			return after(ctx, conn)
		}
		return nil
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	return &Store{pool: pool, direct: o.direct, secrets: o.secrets}, nil
}

// Close releases every connection.
func (s *Store) Close() { s.pool.Close() }

// Ping reports whether Postgres answers; /readyz uses it.
func (s *Store) Ping(ctx context.Context) error { return s.pool.Ping(ctx) }

// Pool exposes the pool to tests and tools that need raw SQL.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Migrate applies the embedded migrations. tern holds a Postgres advisory lock
// while it works, so every service can call this at start-up at once.
func (s *Store) Migrate(ctx context.Context) error {
	var conn *pgx.Conn
	if s.direct != "" {
		c, err := pgx.Connect(ctx, s.direct)
		if err != nil {
			return fmt.Errorf("migrate: connect to TOCK_DATABASE_DIRECT_URL: %w", err)
		}
		defer c.Close(context.WithoutCancel(ctx))
		conn = c
	} else {
		c, err := s.pool.Acquire(ctx)
		if err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		defer c.Release()
		conn = c.Conn()
	}
	return MigrateTo(ctx, conn, -1)
}

// MigrateTo applies the embedded migrations on conn up to version (-1: all
// of them). Services call it through Migrate; an upgrade test uses it to
// build a database as an older tock left it.
func MigrateTo(ctx context.Context, conn *pgx.Conn, version int32) error {
	m, err := migrate.NewMigrator(ctx, conn, "tock_schema_version")
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	sub, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if err := m.LoadMigrations(sub); err != nil {
		return fmt.Errorf("migrate: load: %w", err)
	}
	if version < 0 {
		err = m.Migrate(ctx)
	} else {
		err = m.MigrateTo(ctx, version)
	}
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

// translate maps driver errors onto the job package's sentinels.
func translate(err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return job.ErrNotFound
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" {
		return fmt.Errorf("%w: %s", job.ErrConflict, pgErr.ConstraintName)
	}
	return err
}

// Warm opens n connections and runs the hot statements once on each with empty
// input, so the first real batch after start-up pays neither a connection
// set-up nor the planning of queries over every partition. The pool keeps them.
func (s *Store) Warm(ctx context.Context, n int) error {
	conns := make([]*pgxpool.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Release()
		}
	}()
	for range n {
		c, err := s.pool.Acquire(ctx)
		if err != nil {
			return fmt.Errorf("warm pool: %w", err)
		}
		conns = append(conns, c)
		tx, err := c.Begin(ctx)
		if err != nil {
			return fmt.Errorf("warm pool: %w", err)
		}
		// Rolled back: the empty inputs change nothing either way.
		_, err = tx.Exec(ctx, fetchSQL, []string{}, []time.Time{}, []int16{}, time.Now())
		if err == nil {
			_, err = tx.Exec(ctx, finishRunsSQL, []string{}, []time.Time{}, []int16{}, []string{}, []time.Time{}, []string{}, []string{},
				[]string{}, []string{}, []time.Time{}, []time.Time{}, time.Now(), []int32{})
		}
		_ = tx.Rollback(ctx)
		if err != nil {
			return fmt.Errorf("warm pool: %w", err)
		}
	}
	return nil
}

// retryFor is how long retrySerialization keeps trying: well over the time
// one loader round holds its rows (bounded by its budgets), and well within
// the second a cancel, pause or disable must answer in.
const retryFor = 2 * time.Second

// retrySerialization runs f again when Postgres aborted it for a
// serialization failure or a deadlock: for example a row lock that met a row
// the loader had just moved to another partition. Such aborts are safe to
// retry, and the client must never see one as an outage: f is tried again,
// with a short growing pause, until it succeeds, fails otherwise, ctx ends,
// or retryFor has passed.
func retrySerialization(ctx context.Context, f func() error) error {
	deadline := time.Now().Add(retryFor)
	for attempt := 0; ; attempt++ {
		err := f()
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || (pgErr.Code != "40001" && pgErr.Code != "40P01") || time.Now().After(deadline) {
			return err
		}
		// At once the first time (the lock holder has just committed), then
		// a few milliseconds more each time, jittered.
		pause := time.Duration(min(attempt, 10)) * 5 * time.Millisecond
		pause = pause/2 + time.Duration(rand.Int64N(int64(pause)+int64(time.Millisecond)))
		select {
		case <-ctx.Done():
			return err
		case <-time.After(pause):
		}
	}
}
