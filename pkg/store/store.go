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
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/tern/v2/migrate"
	pgxuuid "github.com/vgarvardt/pgx-google-uuid/v5"

	"github.com/tockhq/tock/pkg/job"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Store runs tock's queries on a connection pool.
type Store struct {
	pool *pgxpool.Pool
}

// Option adjusts the connections Open makes.
type Option func(*pgxpool.Config)

// GenericPlans makes every connection plan its prepared statements once,
// with partition pruning at execution (plan_cache_mode=force_generic_plan),
// unless the URL sets plan_cache_mode itself. The worker's StartRuns and
// FinishRuns run thousands of times a second over job_runs' day partitions:
// planning them for each call costs more than running them (measured with
// make bench: a 30,000-job burst ran in 3.6 s against 4.1 s). Queries with
// optional filters (the dashboard's listings) want custom plans, so this is
// for the hot paths only.
func GenericPlans() Option {
	return func(c *pgxpool.Config) {
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
	for _, o := range opts {
		o(cfg)
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
	return &Store{pool: pool}, nil
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
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer conn.Release()
	m, err := migrate.NewMigrator(ctx, conn.Conn(), "tock_schema_version")
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
	if err := m.Migrate(ctx); err != nil {
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
		_, err = tx.Exec(ctx, startRunsSQL, []string{}, []string{}, []time.Time{}, []int16{}, []time.Time{}, time.Now(), 0, []int32{})
		if err == nil {
			_, err = tx.Exec(ctx, finishRunsSQL, []string{}, []time.Time{}, []int16{}, []string{}, []time.Time{}, []string{}, []string{}, time.Now())
		}
		_ = tx.Rollback(ctx)
		if err != nil {
			return fmt.Errorf("warm pool: %w", err)
		}
	}
	return nil
}

// retrySerialization runs f again, a few times, when Postgres aborted it for a
// serialization failure or a deadlock: for example a row lock that met a row the
// loader had just moved to another partition. Such aborts are safe to retry.
func retrySerialization(ctx context.Context, f func() error) error {
	var err error
	for attempt := range 5 {
		err = f()
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || (pgErr.Code != "40001" && pgErr.Code != "40P01") {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Duration(attempt+1) * 5 * time.Millisecond):
		}
	}
	return err
}
