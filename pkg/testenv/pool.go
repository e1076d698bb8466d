package testenv

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tockhq/tock/pkg/store"
)

// schemas is this test binary's pool of migrated schemas.
var schemas pool

// pool hands out migrated schemas and takes them back reset. It grows to as
// many schemas as tests hold at once, which is about -parallel.
type pool struct {
	mu    sync.Mutex
	free  []*pooled
	made  int
	swept bool
}

// pooled is one migrated schema and what resets it: the tables it held when
// first handed out (others, such as partitions a test created, are dropped),
// the top-level tables whose rows are deleted, the identity columns to
// restart, and the tables migrations seeded, whose rows are put back from a
// copy kept beside them.
type pooled struct {
	name       string
	url        string
	tables     []string
	roots      []string
	identities [][2]string
	seeded     []string
}

// seedPrefix names the copies of seeded tables kept beside them.
const seedPrefix = "seed_copy_"

func (p *pool) take(t testing.TB) *pooled {
	t.Helper()
	p.mu.Lock()
	if n := len(p.free); n > 0 {
		s := p.free[n-1]
		p.free = p.free[:n-1]
		p.mu.Unlock()
		return s
	}
	p.made++
	name := fmt.Sprintf("tp%d_%d_%d", os.Getpid(), time.Now().Unix(), p.made)
	sweep := !p.swept
	p.swept = true
	p.mu.Unlock()

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn := connect(ctx, t)
	defer conn.Close(ctx)
	if sweep {
		sweepStale(ctx, conn)
	}
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+name); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	s := &pooled{name: name, url: withSearchPath(t, name)}
	st, err := store.Open(ctx, s.url, 2)
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	err = st.Migrate(ctx)
	if err == nil {
		now := time.Now()
		_, err = st.EnsureRunPartitions(ctx, now.Add(-48*time.Hour), now.Add(72*time.Hour))
	}
	st.Close()
	if err != nil {
		t.Fatalf("migrate: %v", err)
	}
	if err := s.snapshot(ctx, conn); err != nil {
		t.Fatalf("snapshot schema: %v", err)
	}
	return s
}

// give takes a schema back, reset; one that cannot be reset is dropped.
func (p *pool) give(s *pooled) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, DatabaseURL())
	if err != nil {
		return
	}
	defer conn.Close(ctx)
	if err := s.reset(ctx, conn); err != nil {
		_, _ = conn.Exec(ctx, "DROP SCHEMA "+s.name+" CASCADE")
		return
	}
	p.mu.Lock()
	p.free = append(p.free, s)
	p.mu.Unlock()
}

// snapshot records the freshly migrated schema's tables and copies the rows
// of those migrations seeded (the bootstrap admin, the version table).
func (s *pooled) snapshot(ctx context.Context, conn *pgx.Conn) error {
	rows, err := conn.Query(ctx, `SELECT c.relname, c.relispartition FROM pg_class c
		WHERE c.relnamespace = $1::regnamespace AND c.relkind IN ('r', 'p') ORDER BY c.relname`, s.name)
	if err != nil {
		return err
	}
	var name string
	var partition bool
	_, err = pgx.ForEachRow(rows, []any{&name, &partition}, func() error {
		s.tables = append(s.tables, name)
		if !partition {
			s.roots = append(s.roots, name)
		}
		return nil
	})
	if err != nil {
		return err
	}
	rows, err = conn.Query(ctx, `SELECT c.relname, a.attname FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
		WHERE c.relnamespace = $1::regnamespace AND a.attidentity <> '' AND NOT c.relispartition`, s.name)
	if err != nil {
		return err
	}
	var col string
	if _, err = pgx.ForEachRow(rows, []any{&name, &col}, func() error {
		s.identities = append(s.identities, [2]string{name, col})
		return nil
	}); err != nil {
		return err
	}
	for _, tbl := range s.roots {
		var any bool
		if err := conn.QueryRow(ctx, fmt.Sprintf("SELECT EXISTS (SELECT FROM %s.%s)", s.name, tbl)).Scan(&any); err != nil {
			return err
		}
		if !any {
			continue
		}
		if _, err := conn.Exec(ctx, fmt.Sprintf("CREATE TABLE %s.%s%s AS SELECT * FROM %s.%s", s.name, seedPrefix, tbl, s.name, tbl)); err != nil {
			return err
		}
		s.seeded = append(s.seeded, tbl)
	}
	return nil
}

// reset puts the schema back as snapshot found it, in one transaction: tables
// a test created are dropped, every row is deleted (foreign keys unchecked
// meanwhile: DELETE on a few rows costs far less than TRUNCATE's new files),
// identities restart and the seeded rows are put back. It needs a superuser,
// as the local test database gives; elsewhere the schema is dropped instead.
func (s *pooled) reset(ctx context.Context, conn *pgx.Conn) error {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, "SET LOCAL session_replication_role = replica"); err != nil {
		return err
	}
	rows, err := tx.Query(ctx, `SELECT c.relname FROM pg_class c
		WHERE c.relnamespace = $1::regnamespace AND c.relkind IN ('r', 'p') AND NOT c.relname = ANY($2)
		AND c.relname NOT LIKE $3`, s.name, s.tables, seedPrefix+"%")
	if err != nil {
		return err
	}
	extra, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	var b strings.Builder
	for _, tbl := range extra {
		fmt.Fprintf(&b, "DROP TABLE IF EXISTS %s.%s CASCADE;\n", s.name, tbl)
	}
	for _, tbl := range s.roots {
		fmt.Fprintf(&b, "DELETE FROM %s.%s;\n", s.name, tbl)
	}
	for _, ic := range s.identities {
		fmt.Fprintf(&b, "ALTER TABLE %s.%s ALTER COLUMN %s RESTART;\n", s.name, ic[0], ic[1])
	}
	for _, tbl := range s.seeded {
		fmt.Fprintf(&b, "INSERT INTO %s.%s OVERRIDING SYSTEM VALUE SELECT * FROM %s.%s%s;\n", s.name, tbl, s.name, seedPrefix, tbl)
	}
	// One simple-protocol round trip for the whole script.
	if _, err := tx.Exec(ctx, b.String(), pgx.QueryExecModeSimpleProtocol); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// sweepStale drops pooled schemas that earlier test binaries left behind (a
// binary has no hook at its end to drop its own): those of a process no
// longer alive on this host, when the database is local, and any older than a
// day, wherever it is.
func sweepStale(ctx context.Context, conn *pgx.Conn) {
	rows, err := conn.Query(ctx, `SELECT nspname FROM pg_namespace WHERE nspname ~ '^tp[0-9]+_[0-9]+_[0-9]+$'`)
	if err != nil {
		return
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return
	}
	local := isLocal(DatabaseURL())
	for _, n := range names {
		parts := strings.Split(strings.TrimPrefix(n, "tp"), "_")
		pid, _ := strconv.Atoi(parts[0])
		made, _ := strconv.ParseInt(parts[1], 10, 64)
		dead := local && pid != os.Getpid() && syscall.Kill(pid, 0) == syscall.ESRCH
		if dead || time.Since(time.Unix(made, 0)) > 24*time.Hour {
			_, _ = conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+n+" CASCADE")
		}
	}
}

func isLocal(dbURL string) bool {
	u, err := url.Parse(dbURL)
	if err != nil {
		return false
	}
	host := u.Hostname()
	if host == "" || host == "localhost" || strings.HasPrefix(host, "/") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// withSearchPath is the test database's URL with search_path set to schema.
func withSearchPath(t testing.TB, schema string) string {
	t.Helper()
	u, err := url.Parse(DatabaseURL())
	if err != nil {
		t.Fatalf("parse database url: %v", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}
