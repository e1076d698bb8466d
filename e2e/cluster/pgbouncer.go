package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// PgBouncer is a PgBouncer process in transaction pooling mode, in front of
// a Postgres server, on a loopback port of its own.
type PgBouncer struct {
	Addr string
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  strings.Builder
	done chan struct{}
}

// StartPgBouncer starts Debian's pgbouncer in front of the Postgres that
// adminURL names, with every database passed through, trust
// authentication, transaction pooling and at most poolSize server
// connections per database and user. Run as root, it runs as the postgres
// user, as PgBouncer refuses root.
func StartPgBouncer(ctx context.Context, adminURL string, poolSize int) (*PgBouncer, error) {
	bin, err := exec.LookPath("pgbouncer")
	if err != nil {
		return nil, fmt.Errorf("pgbouncer: %w", err)
	}
	pg, err := pgx.ParseConfig(adminURL)
	if err != nil {
		return nil, err
	}
	addr, err := FreeAddr()
	if err != nil {
		return nil, err
	}
	host, port, _ := net.SplitHostPort(addr)
	dir, err := os.MkdirTemp("", "tock-pgbouncer-")
	if err != nil {
		return nil, err
	}
	ini := fmt.Sprintf(`[databases]
* = host=%s port=%d

[pgbouncer]
listen_addr = %s
listen_port = %s
unix_socket_dir =
auth_type = trust
auth_file = %s
pool_mode = transaction
default_pool_size = %d
max_client_conn = 1000
ignore_startup_parameters = extra_float_digits
`, pg.Host, pg.Port, host, port, filepath.Join(dir, "users.txt"), poolSize)
	if err := os.WriteFile(filepath.Join(dir, "pgbouncer.ini"), []byte(ini), 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "users.txt"), []byte(fmt.Sprintf("%q \"\"\n", pg.User)), 0o644); err != nil {
		return nil, err
	}
	args := []string{filepath.Join(dir, "pgbouncer.ini")}
	if u, err := user.Current(); err == nil && u.Uid == "0" {
		args = append([]string{"-u", "postgres"}, args...)
	}
	b := &PgBouncer{Addr: addr, done: make(chan struct{})}
	b.cmd = exec.Command(bin, args...)
	b.cmd.Stdout, b.cmd.Stderr = &lockedWriter{b}, &lockedWriter{b}
	if err := b.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start pgbouncer: %w", err)
	}
	go func() { _ = b.cmd.Wait(); _ = os.RemoveAll(dir); close(b.done) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return b, nil
		}
		select {
		case <-b.done:
			return nil, fmt.Errorf("pgbouncer exited: %s", b.Log())
		case <-ctx.Done():
			b.Close()
			return nil, ctx.Err()
		default:
		}
		if time.Now().After(deadline) {
			b.Close()
			return nil, errors.New("pgbouncer did not listen in time: " + b.Log())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Log is what PgBouncer printed.
func (b *PgBouncer) Log() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.out.String()
}

// Close stops PgBouncer.
func (b *PgBouncer) Close() {
	_ = b.cmd.Process.Kill()
	<-b.done
}

type lockedWriter struct{ b *PgBouncer }

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.b.mu.Lock()
	defer w.b.mu.Unlock()
	if w.b.out.Len() < 1<<20 {
		w.b.out.Write(p)
	}
	return len(p), nil
}
