// Package cluster starts tock as users run it: the real dashboard, scheduler
// and worker binaries as processes, on the real Postgres and Redis, each run in
// a database and key prefix of its own. The end-to-end tests, the fault suite
// and the benchmark all drive tock through it.
package cluster

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
)

// Options says what to start.
type Options struct {
	BinDir     string // holds dashboard, scheduler, worker; Build fills it
	AdminURL   string // a Postgres URL with rights to CREATE DATABASE
	RedisURL   string
	Schedulers int
	Workers    int
	Env        []string // extra KEY=VALUE for every service
	WorkerEnv  []string // extra KEY=VALUE for workers only
	LogDir     string   // service logs go here
	AdminToken string
	KeepDB     bool
	Logf       func(format string, args ...any)
	// StartupWait bounds each service's wait for /readyz (90 s by default:
	// a dashboard migrates a fresh database first, slow while make test
	// runs every package at once).
	StartupWait time.Duration
	// Pooler, host:port of a Postgres pooler in transaction mode
	// (PgBouncer), puts it between the services and Postgres: their
	// TOCK_DATABASE_URL goes through it, with pgx's cache_describe mode (no
	// named prepared statements), and TOCK_DATABASE_DIRECT_URL, for the
	// migrations, straight to Postgres.
	Pooler string
	// Prepare, if set, runs on the fresh database before any service
	// starts: an upgrade test fills it as an older tock left it.
	Prepare func(ctx context.Context, databaseURL string) error
}

// Cluster is a running set of services.
type Cluster struct {
	opts        Options
	DatabaseURL string
	dbName      string
	RedisPrefix string
	APIURL      string
	Token       string
	// SecretKey is the operator key the services seal signing secrets
	// under (TOCK_SECRET_KEY), as a production deployment sets one.
	SecretKey string

	mu    sync.Mutex
	procs map[string]*Proc
}

// Proc is one service process.
type Proc struct {
	Name    string
	Service string
	Addr    string // HTTP (dashboard) or metrics (others) address
	// MetricsAddr serves /metrics: the dashboard's own listener, the same
	// as Addr for the others.
	MetricsAddr string
	Env         []string
	cmd         *exec.Cmd
	log         *os.File
	done        chan struct{}
}

// Build compiles the three services into dir with the workspace's toolchain.
func Build(ctx context.Context, dir string) error {
	for _, svc := range []string{"dashboard", "scheduler", "worker"} {
		cmd := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(dir, svc), "github.com/tockhq/tock/services/"+svc)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("build %s: %w\n%s", svc, err, out)
		}
	}
	return nil
}

// FreeAddr returns a loopback address with a port nobody listens on now.
func FreeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// Start creates a fresh database and starts the services.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	if opts.AdminToken == "" {
		opts.AdminToken = "e2e-admin-token-0123456789"
	}
	if opts.StartupWait == 0 {
		opts.StartupWait = 90 * time.Second
	}
	suffix := fmt.Sprintf("%d_%d", time.Now().UnixNano()%1e9, os.Getpid())
	var key [32]byte
	_, _ = rand.Read(key[:])
	c := &Cluster{opts: opts, dbName: "tock_e2e_" + suffix, RedisPrefix: "tocke2e-" + suffix, Token: opts.AdminToken, procs: map[string]*Proc{},
		SecretKey: base64.StdEncoding.EncodeToString(key[:])}
	admin, err := pgx.Connect(ctx, opts.AdminURL)
	if err != nil {
		return nil, fmt.Errorf("connect to postgres: %w", err)
	}
	_, err = admin.Exec(ctx, "CREATE DATABASE "+c.dbName)
	admin.Close(ctx)
	if err != nil {
		return nil, fmt.Errorf("create database: %w", err)
	}
	cfg, err := pgx.ParseConfig(opts.AdminURL)
	if err != nil {
		return nil, err
	}
	c.DatabaseURL = fmt.Sprintf("postgres://%s@%s:%d/%s?sslmode=disable", cfg.User, cfg.Host, cfg.Port, c.dbName)
	if opts.Prepare != nil {
		if err := opts.Prepare(ctx, c.DatabaseURL); err != nil {
			c.Stop()
			return nil, fmt.Errorf("prepare the database: %w", err)
		}
	}

	// The dashboard migrates first, so the others start on a ready schema.
	d, err := c.StartProc(ctx, "dashboard", "dashboard")
	if err != nil {
		c.Stop()
		return nil, err
	}
	c.APIURL = "http://" + d.Addr
	for i := range opts.Schedulers {
		if _, err := c.StartProc(ctx, "scheduler", fmt.Sprintf("scheduler-%d", i+1)); err != nil {
			c.Stop()
			return nil, err
		}
	}
	for i := range opts.Workers {
		if _, err := c.StartProc(ctx, "worker", fmt.Sprintf("worker-%d", i+1)); err != nil {
			c.Stop()
			return nil, err
		}
	}
	return c, nil
}

// PoolerURL is the cluster's database through Options.Pooler, as the
// services reach it.
func (c *Cluster) PoolerURL() string {
	u, err := url.Parse(c.DatabaseURL)
	if err != nil {
		return c.DatabaseURL
	}
	u.Host = c.opts.Pooler
	q := u.Query()
	q.Set("default_query_exec_mode", "cache_describe")
	u.RawQuery = q.Encode()
	return u.String()
}

// StartProc starts one more service process named name and waits until it is
// ready. Restarting a stopped name reuses its address.
func (c *Cluster) StartProc(ctx context.Context, service, name string, extraEnv ...string) (*Proc, error) {
	c.mu.Lock()
	old := c.procs[name]
	c.mu.Unlock()
	addr, metricsAddr := "", ""
	if old != nil {
		addr, metricsAddr = old.Addr, old.MetricsAddr
	} else {
		var err error
		if addr, err = FreeAddr(); err != nil {
			return nil, err
		}
		metricsAddr = addr
		// The kernel may hand the same free port out twice in a row, and the
		// dashboard refuses a metrics address equal to its API address.
		for service == "dashboard" && metricsAddr == addr {
			if metricsAddr, err = FreeAddr(); err != nil {
				return nil, err
			}
		}
	}
	dbURL := c.DatabaseURL
	if c.opts.Pooler != "" {
		dbURL = c.PoolerURL()
	}
	env := append(os.Environ(),
		"TOCK_DATABASE_URL="+dbURL,
		"TOCK_DATABASE_DIRECT_URL="+c.DatabaseURL,
		"TOCK_REDIS_URL="+c.opts.RedisURL,
		"TOCK_REDIS_PREFIX="+c.RedisPrefix,
		"TOCK_ADMIN_TOKEN="+c.Token,
		"TOCK_SECRET_KEY="+c.SecretKey,
		"TOCK_ALLOW_PRIVATE_TARGETS=true",
		"TOCK_LOG_LEVEL=info",
	)
	if service == "dashboard" {
		env = append(env, "TOCK_HTTP_ADDR="+addr)
	}
	env = append(env, "TOCK_METRICS_ADDR="+metricsAddr)
	env = append(env, c.opts.Env...)
	if service == "worker" {
		env = append(env, "TOCK_WORKER_NAME="+name, "TOCK_SHUTDOWN_GRACE=5s")
		env = append(env, c.opts.WorkerEnv...)
	}
	env = append(env, extraEnv...)
	logf, err := os.OpenFile(filepath.Join(c.opts.LogDir, name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(filepath.Join(c.opts.BinDir, service))
	cmd.Env, cmd.Stdout, cmd.Stderr = env, logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Proc{Name: name, Service: service, Addr: addr, MetricsAddr: metricsAddr, Env: env, cmd: cmd, log: logf, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); logf.Close(); close(p.done) }()
	c.mu.Lock()
	c.procs[name] = p
	c.mu.Unlock()
	if err := p.waitReady(ctx, c.opts.StartupWait); err != nil {
		return nil, fmt.Errorf("%s: %w\n%s", name, err, c.LogTail(name, 30))
	}
	c.opts.Logf("started %s on %s (pid %d)", name, addr, cmd.Process.Pid)
	return p, nil
}

func (p *Proc) waitReady(ctx context.Context, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		select {
		case <-p.done:
			return errors.New("exited during start-up")
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		resp, err := http.Get("http://" + p.Addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return errors.New("not ready in time")
}

// Proc returns the process named name.
func (c *Cluster) Proc(name string) *Proc {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.procs[name]
}

// RSS is the process's resident memory now, from /proc (Linux only).
func (p *Proc) RSS() (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("no VmRSS in /proc status")
}

// Signal sends sig to the process named name.
func (c *Cluster) Signal(name string, sig syscall.Signal) error {
	p := c.Proc(name)
	if p == nil {
		return fmt.Errorf("no process %s", name)
	}
	return p.cmd.Process.Signal(sig)
}

// Wait waits for the process named name to exit.
func (c *Cluster) Wait(name string, timeout time.Duration) error {
	p := c.Proc(name)
	select {
	case <-p.done:
		return nil
	case <-time.After(timeout):
		return fmt.Errorf("%s did not exit within %s", name, timeout)
	}
}

// LogTail returns the last n lines of a process's log.
func (c *Cluster) LogTail(name string, n int) string {
	b, err := os.ReadFile(filepath.Join(c.opts.LogDir, name+".log"))
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Stop terminates every process (SIGTERM, then SIGKILL) and drops the database.
func (c *Cluster) Stop() {
	c.mu.Lock()
	procs := make([]*Proc, 0, len(c.procs))
	for _, p := range c.procs {
		procs = append(procs, p)
	}
	c.mu.Unlock()
	for _, p := range procs {
		_ = p.cmd.Process.Signal(syscall.SIGCONT)
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, p := range procs {
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	}
	if c.dbName != "" && !c.opts.KeepDB {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if admin, err := pgx.Connect(ctx, c.opts.AdminURL); err == nil {
			_, _ = admin.Exec(ctx, "DROP DATABASE IF EXISTS "+c.dbName+" WITH (FORCE)")
			admin.Close(ctx)
		}
		c.dropKeys(ctx)
	}
}

// dropKeys removes the cluster's Redis keys (its prefix), so that a test run
// leaves nothing behind in the Redis it shares with others. Best effort: on
// a Redis Cluster it reaches only the node the URL names.
func (c *Cluster) dropKeys(ctx context.Context) {
	opt, err := redis.ParseURL(c.opts.RedisURL)
	if err != nil || c.RedisPrefix == "" {
		return
	}
	// A Redis a fault test stopped costs one short dial, not retries.
	opt.MaxRetries, opt.DialTimeout = -1, 2*time.Second
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	it := rdb.Scan(ctx, 0, c.RedisPrefix+":*", 1000).Iterator()
	pipe := rdb.Pipeline()
	for it.Next(ctx) {
		// One key per UNLINK: the keys of a prefix span hash slots.
		pipe.Unlink(ctx, it.Val())
		if pipe.Len() >= 500 {
			_, _ = pipe.Exec(ctx)
		}
	}
	_, _ = pipe.Exec(ctx)
}

// Names lists the processes started so far.
func (c *Cluster) Names() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	names := make([]string, 0, len(c.procs))
	for n := range c.procs {
		names = append(names, n)
	}
	return names
}
