// Package testenv gives integration tests their own slice of the real Postgres
// and Redis: a fresh schema per test, a unique key prefix per test. Locally a
// test skips when a service is unreachable; under CI=true that is a failure.
package testenv

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/store"
)

// DatabaseURL is the Postgres tests use: TOCK_TEST_DATABASE_URL or the local one.
func DatabaseURL() string {
	if u := os.Getenv("TOCK_TEST_DATABASE_URL"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
}

// RedisURL is the Redis tests use: TOCK_TEST_REDIS_URL or the local one.
func RedisURL() string {
	if u := os.Getenv("TOCK_TEST_REDIS_URL"); u != "" {
		return u
	}
	return "redis://127.0.0.1:6379/0"
}

func unavailable(t testing.TB, what string, err error) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is required under CI=true: %v", what, err)
	}
	t.Skipf("%s unavailable: %v", what, err)
}

// Name returns a short unique name for t, usable as a schema or key prefix.
func Name(t testing.TB) string {
	id := job.NewID().String()
	return "t" + strings.ReplaceAll(id[len(id)-12:], "-", "")
}

// connect opens a connection to the test database, or skips t (fails it
// under CI=true) when Postgres does not answer.
func connect(ctx context.Context, t testing.TB) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(ctx, DatabaseURL())
	if err != nil {
		unavailable(t, "Postgres", err)
	}
	return conn
}

// SchemaURL creates an empty schema of its own for t and returns a database URL
// whose search_path points at it. The schema is dropped when t ends.
func SchemaURL(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn := connect(ctx, t)
	defer conn.Close(ctx)
	schema := Name(t)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, DatabaseURL())
		if err != nil {
			return
		}
		defer c.Close(ctx)
		_, _ = c.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE")
	})
	return withSearchPath(t, schema)
}

// storeURLs is the schema URL of each store Store handed out.
var storeURLs sync.Map

// URLOf is the Postgres URL (its schema included) of a store Store made,
// for a test that opens a second store on the same data.
func URLOf(t testing.TB, st *store.Store) string {
	t.Helper()
	u, ok := storeURLs.Load(st)
	if !ok {
		t.Fatal("URLOf: not a store of testenv.Store")
	}
	return u.(string)
}

// Store returns a migrated store in a schema of t's own. The schema comes
// from a pool of this test binary's migrated schemas and goes back to it, reset
// to its freshly migrated state, when t ends: migrating a new schema costs
// hundreds of milliseconds under a lock every migrator in the database shares,
// so every package's tests would otherwise queue behind each other's. opts
// adjust the store (store.Secrets).
func Store(t testing.TB, opts ...store.Option) *store.Store {
	t.Helper()
	ctx := context.Background()
	s := schemas.take(t)
	st, err := store.Open(ctx, s.url, 8, opts...)
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	storeURLs.Store(st, s.url)
	t.Cleanup(func() {
		storeURLs.Delete(st)
		st.Close()
		schemas.give(s)
	})
	now := time.Now()
	if _, err := st.EnsureRunPartitions(ctx, now.Add(-48*time.Hour), now.Add(72*time.Hour)); err != nil {
		t.Fatalf("ensure partitions: %v", err)
	}
	return st
}

// Redis returns a client on the real Redis and a key prefix unique to t. Keys
// under the prefix are deleted when t ends.
func Redis(t testing.TB) (redis.UniversalClient, string) {
	t.Helper()
	opt, err := redis.ParseURL(RedisURL())
	if err != nil {
		t.Fatalf("parse redis url: %v", err)
	}
	rdb := redis.NewClient(opt)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		unavailable(t, "Redis", err)
	}
	prefix := fmt.Sprintf("tocktest-%s", Name(t))
	t.Cleanup(func() {
		ctx := context.Background()
		iter := rdb.Scan(ctx, 0, prefix+":*", 1000).Iterator()
		for iter.Next(ctx) {
			rdb.Del(ctx, iter.Val())
		}
		_ = rdb.Close()
	})
	return rdb, prefix
}
