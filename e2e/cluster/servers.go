package cluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The fault suite kills and restarts Postgres and Redis, so it runs servers of
// its own, in temporary directories on free loopback ports, and never touches
// the machine's shared ones.

// ErrUnavailable says a private server cannot be started on this machine: its
// binaries are not installed, or nobody may run them. Tests skip on it locally
// and fail on it under CI=true.
var ErrUnavailable = errors.New("private server unavailable")

// Postgres is a private Postgres cluster: initdb'd into a temporary directory,
// listening on 127.0.0.1 only, with trust authentication for user postgres and
// the server's defaults otherwise (fsync stays on, so an immediate stop is the
// crash it claims to be). Postgres refuses to run as root; under root every
// initdb and pg_ctl runs as the OS user postgres, which owns the directory.
type Postgres struct {
	Port int
	bin  string
	dir  string
	cred *syscall.Credential
}

// PostgresBin returns the directory of the newest installed initdb and pg_ctl:
// /usr/lib/postgresql/<version>/bin (Debian), else wherever PATH finds them.
func PostgresBin() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return pgVersion(dirs[i]) > pgVersion(dirs[j]) })
	for _, d := range dirs {
		if isExecutable(filepath.Join(d, "initdb")) && isExecutable(filepath.Join(d, "pg_ctl")) {
			return d, nil
		}
	}
	initdb, err := exec.LookPath("initdb")
	if err != nil {
		return "", fmt.Errorf("%w: initdb is not installed (apt-get install postgresql)", ErrUnavailable)
	}
	d := filepath.Dir(initdb)
	if !isExecutable(filepath.Join(d, "pg_ctl")) {
		return "", fmt.Errorf("%w: no pg_ctl beside %s", ErrUnavailable, initdb)
	}
	return d, nil
}

func pgVersion(binDir string) float64 {
	v, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(binDir)), 64)
	return v
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// StartPostgres creates a cluster in a new temporary directory and starts it
// on a free port. Close stops it and removes the directory.
func StartPostgres(ctx context.Context) (*Postgres, error) {
	bin, err := PostgresBin()
	if err != nil {
		return nil, err
	}
	// Not t.TempDir: its parents are private to root, and under root the
	// server runs as postgres, which must reach its directory.
	dir, err := os.MkdirTemp("", "tock-pg-")
	if err != nil {
		return nil, err
	}
	p := &Postgres{bin: bin, dir: dir}
	if err := p.prepare(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	addr, err := FreeAddr()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	_, port, _ := net.SplitHostPort(addr)
	p.Port, _ = strconv.Atoi(port)
	if err := p.run(ctx, "initdb", "-D", p.dataDir(), "-A", "trust", "-U", "postgres", "-E", "UTF8",
		"--locale=C", "--no-sync"); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := p.Start(ctx); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// prepare makes the directory usable by the user the server runs as: under
// root that is postgres, given ownership of the directory.
func (p *Postgres) prepare() error {
	if err := os.Mkdir(p.sockDir(), 0o700); err != nil {
		return err
	}
	if os.Geteuid() != 0 {
		return nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return fmt.Errorf("%w: Postgres refuses to run as root and there is no OS user postgres to run it as: %v", ErrUnavailable, err)
	}
	uid, err1 := strconv.Atoi(u.Uid)
	gid, err2 := strconv.Atoi(u.Gid)
	if err := errors.Join(err1, err2); err != nil {
		return fmt.Errorf("user postgres: %w", err)
	}
	for _, d := range []string{p.dir, p.sockDir()} {
		if err := os.Chown(d, uid, gid); err != nil {
			return err
		}
	}
	p.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	return nil
}

func (p *Postgres) dataDir() string { return filepath.Join(p.dir, "data") }
func (p *Postgres) sockDir() string { return filepath.Join(p.dir, "sock") }
func (p *Postgres) logFile() string { return filepath.Join(p.dir, "postgres.log") }

// run runs one of the server's programs as the server's user, in its
// directory, without the caller's PG* variables.
func (p *Postgres) run(ctx context.Context, prog string, args ...string) error {
	cmd := exec.CommandContext(ctx, filepath.Join(p.bin, prog), args...)
	cmd.Dir = p.dir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PG") && !strings.HasPrefix(kv, "LC_") && !strings.HasPrefix(kv, "LANG") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "LC_ALL=C")
	if p.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred}
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s %s: %w\n%s", prog, strings.Join(args, " "), err, out)
	}
	return nil
}

// URL is a superuser URL of the cluster's postgres database.
func (p *Postgres) URL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", p.Port)
}

// Start starts the server and waits until it accepts connections; after an
// immediate stop that includes crash recovery.
func (p *Postgres) Start(ctx context.Context) error {
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c max_connections=200", p.Port, p.sockDir())
	return p.run(ctx, "pg_ctl", "-D", p.dataDir(), "-l", p.logFile(), "-w", "-t", "60", "-o", opts, "start")
}

// StopImmediate is a crash: every server process quits at once, without a
// checkpoint, and the next start replays the WAL.
func (p *Postgres) StopImmediate(ctx context.Context) error {
	return p.run(ctx, "pg_ctl", "-D", p.dataDir(), "-m", "immediate", "-w", "stop")
}

// LogTail returns the last n lines of the server's log.
func (p *Postgres) LogTail(n int) string { return tail(p.logFile(), n) }

// Close stops the server if it runs and removes its directory.
func (p *Postgres) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := os.Stat(filepath.Join(p.dataDir(), "postmaster.pid")); err == nil {
		_ = p.run(ctx, "pg_ctl", "-D", p.dataDir(), "-m", "fast", "-w", "stop")
	}
	os.RemoveAll(p.dir)
}

// Redis is a private redis-server without persistence (no RDB snapshots, no
// AOF): a restart is Redis losing all its data.
type Redis struct {
	Port int
	bin  string
	dir  string
	args []string // more server arguments, such as cluster mode's

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// StartRedis starts redis-server on a free port with a temporary directory.
func StartRedis(ctx context.Context) (*Redis, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("%w: redis-server is not installed (apt-get install redis-server)", ErrUnavailable)
	}
	dir, err := os.MkdirTemp("", "tock-redis-")
	if err != nil {
		return nil, err
	}
	addr, err := FreeAddr()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	_, port, _ := net.SplitHostPort(addr)
	r := &Redis{bin: bin, dir: dir}
	r.Port, _ = strconv.Atoi(port)
	if err := r.Start(ctx); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// URL is the server's redis:// URL.
func (r *Redis) URL() string { return fmt.Sprintf("redis://127.0.0.1:%d/0", r.Port) }

// Start starts the server, empty, on its port and waits until it answers PING.
func (r *Redis) Start(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd != nil {
		return errors.New("redis-server is already running")
	}
	cmd := exec.Command(r.bin, "--port", strconv.Itoa(r.Port), "--bind", "127.0.0.1", "--save", "",
		"--appendonly", "no", "--dir", r.dir, "--logfile", filepath.Join(r.dir, "redis.log"), "--daemonize", "no")
	cmd.Args = append(cmd.Args, r.args...)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start redis-server: %w", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	r.cmd, r.done = cmd, done
	deadline := time.Now().Add(10 * time.Second)
	for {
		if err := ping(r.Port); err == nil {
			return nil
		} else if time.Now().After(deadline) {
			return fmt.Errorf("redis-server on port %d not ready: %w\n%s", r.Port, err, tail(filepath.Join(r.dir, "redis.log"), 20))
		}
		select {
		case <-done:
			return fmt.Errorf("redis-server exited during start-up\n%s", tail(filepath.Join(r.dir, "redis.log"), 20))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Kill sends SIGKILL and waits for the server to exit: everything it held is
// gone.
func (r *Redis) Kill() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil {
		return nil
	}
	if err := r.cmd.Process.Kill(); err != nil {
		return err
	}
	<-r.done
	r.cmd = nil
	return nil
}

// Pause stops the server with SIGSTOP: it holds its data and its
// connections but answers nothing, as a server stalled by its host would.
func (r *Redis) Pause() error { return r.signal(syscall.SIGSTOP) }

// Resume continues a paused server with SIGCONT.
func (r *Redis) Resume() error { return r.signal(syscall.SIGCONT) }

func (r *Redis) signal(sig syscall.Signal) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil {
		return errors.New("redis-server is not running")
	}
	return r.cmd.Process.Signal(sig)
}

// Close kills the server and removes its directory.
func (r *Redis) Close() {
	_ = r.Kill()
	os.RemoveAll(r.dir)
}

// ping sends one PING in the Redis protocol and wants +PONG.
func ping(port int) error {
	conn, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(time.Second))
	if _, err := conn.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	if strings.TrimSpace(line) != "+PONG" {
		return fmt.Errorf("PING answered %q", strings.TrimSpace(line))
	}
	return nil
}

func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
