// Package config reads tock's settings from environment variables once, at
// start-up, into typed structs, and reports every problem together rather than
// the first one only.
package config

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/tockhq/tock/pkg/outbound"
	"github.com/tockhq/tock/pkg/secretbox"
)

// Env reads variables through a lookup function (os.LookupEnv in main, a map
// in tests) and collects the errors.
type Env struct {
	lookup func(string) (string, bool)
	errs   []error
}

// FromOS reads the process environment.
func FromOS() *Env { return &Env{lookup: os.LookupEnv} }

// FromMap reads a fixed set of variables, for tests.
func FromMap(m map[string]string) *Env {
	return &Env{lookup: func(k string) (string, bool) { v, ok := m[k]; return v, ok }}
}

func (e *Env) raw(name string) (string, bool) {
	v, ok := e.lookup(name)
	if !ok || strings.TrimSpace(v) == "" {
		return "", false
	}
	return strings.TrimSpace(v), true
}

// String returns the variable or def.
func (e *Env) String(name, def string) string {
	if v, ok := e.raw(name); ok {
		return v
	}
	return def
}

// Required returns the variable, recording an error if it is unset.
func (e *Env) Required(name, why string) string {
	v, ok := e.raw(name)
	if !ok {
		e.errs = append(e.errs, fmt.Errorf("%s must be set: %s", name, why))
	}
	return v
}

// Duration returns the variable parsed as a Go duration (90s, 10m), or def.
func (e *Env) Duration(name string, def time.Duration) time.Duration {
	v, ok := e.raw(name)
	if !ok {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		e.errs = append(e.errs, fmt.Errorf("%s=%q is not a duration such as 30s or 10m", name, v))
		return def
	}
	return d
}

// Int returns the variable parsed as an integer within [lo, hi], or def.
func (e *Env) Int(name string, def, lo, hi int) int {
	v, ok := e.raw(name)
	if !ok {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		e.errs = append(e.errs, fmt.Errorf("%s=%q must be an integer from %d to %d", name, v, lo, hi))
		return def
	}
	return n
}

// Bool returns the variable parsed as a boolean (true/false/1/0), or def.
func (e *Env) Bool(name string, def bool) bool {
	v, ok := e.raw(name)
	if !ok {
		return def
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		e.errs = append(e.errs, fmt.Errorf("%s=%q must be true or false", name, v))
		return def
	}
	return b
}

// List returns the variable split at commas and spaces, or nil.
func (e *Env) List(name string) []string {
	v, ok := e.raw(name)
	if !ok {
		return nil
	}
	return strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' })
}

// Prefixes returns the variable's comma- or space-separated CIDRs; each
// one that is not a CIDR is a problem, named with example as a model.
func (e *Env) Prefixes(name, example string) []netip.Prefix {
	var out []netip.Prefix
	for _, v := range e.List(name) {
		p, err := netip.ParsePrefix(v)
		if err != nil {
			e.Check(fmt.Errorf("%s: %q is not a CIDR such as %s", name, v, example))
			continue
		}
		out = append(out, p)
	}
	return out
}

// Check records err, if not nil, as a configuration problem.
func (e *Env) Check(err error) {
	if err != nil {
		e.errs = append(e.errs, err)
	}
}

// Err returns every problem found, joined, or nil.
func (e *Env) Err() error { return errors.Join(e.errs...) }

// Common is what every service reads.
type Common struct {
	DatabaseURL string
	// DatabaseDirectURL reaches Postgres itself, for what a pooler in
	// transaction mode cannot carry: the migrations, which hold a session's
	// advisory lock. Empty means DatabaseURL.
	DatabaseDirectURL string
	DBMaxConns        int
	RedisURL          string
	RedisPrefix       string
	// RedisCluster treats RedisURL as a Redis Cluster node or configuration
	// endpoint; RedisAddrs, when set, are the cluster's seed nodes.
	RedisCluster bool
	RedisAddrs   []string
	// RedisShards is how many hash tags (each with its own due set and
	// stream) the deployment spreads jobs over. All services must agree.
	RedisShards int
	LogLevel    string
	// Pprof serves /debug/pprof/ on the metrics listener.
	Pprof bool
	// Tracing is where the service sends its spans; zero is off.
	Tracing Tracing
	// Secrets seals users' signing secrets at rest (TOCK_SECRET_KEY).
	Secrets *secretbox.Box
}

// Service names a tock service, for the defaults that differ between them.
type Service string

// The services.
const (
	Dashboard Service = "dashboard"
	Scheduler Service = "scheduler"
	Worker    Service = "worker"
)

// DBConns is each service's default Postgres pool (TOCK_DB_MAX_CONNS), from
// what it needs: the dashboard one connection per request in progress,
// which a few cores cannot use more than a handful of; the scheduler's
// leader one loader or reconciler round at a time (the others none); a
// worker a few batch starts at once and one group commit. docs/operations.md
// adds them up for a deployment.
var DBConns = map[Service]int{Dashboard: 8, Scheduler: 3, Worker: 6}

// ReadCommon reads the settings every service shares. The defaults reach the
// Postgres and Redis of a development machine.
func ReadCommon(e *Env, s Service) Common {
	return Common{
		DatabaseURL:       e.String("TOCK_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"),
		DatabaseDirectURL: e.String("TOCK_DATABASE_DIRECT_URL", ""),
		DBMaxConns:        e.Int("TOCK_DB_MAX_CONNS", DBConns[s], 1, 1000),
		RedisURL:          e.String("TOCK_REDIS_URL", "redis://127.0.0.1:6379/0"),
		RedisPrefix:       e.String("TOCK_REDIS_PREFIX", "tock"),
		RedisCluster:      e.Bool("TOCK_REDIS_CLUSTER", false),
		RedisAddrs:        e.List("TOCK_REDIS_ADDRS"),
		RedisShards:       e.Int("TOCK_REDIS_SHARDS", 1, 1, 256),
		LogLevel:          e.String("TOCK_LOG_LEVEL", "info"),
		Pprof:             e.Bool("TOCK_PPROF", false),
		Tracing:           ReadTracing(e),
		Secrets:           ReadSecrets(e),
	}
}

// Tracing is the OpenTelemetry export of a service's spans. It is read from
// the standard OTEL_ variables rather than TOCK_ ones, so a deployment that
// already sets them for its other services needs nothing new. Only what
// decides whether tracing is on is read here; the exporter and the SDK read
// the rest themselves (OTEL_EXPORTER_OTLP_HEADERS, _TIMEOUT, _COMPRESSION,
// OTEL_TRACES_SAMPLER, OTEL_BSP_*, OTEL_SERVICE_NAME,
// OTEL_RESOURCE_ATTRIBUTES), as the OpenTelemetry specification defines them.
type Tracing struct {
	// Endpoint is the OTLP/HTTP endpoint the spans go to:
	// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, or else OTEL_EXPORTER_OTLP_ENDPOINT.
	// Empty turns tracing off, and so do OTEL_SDK_DISABLED=true and
	// OTEL_TRACES_EXPORTER=none.
	Endpoint string
}

// On reports whether spans are exported.
func (t Tracing) On() bool { return t.Endpoint != "" }

// ReadTracing reads whether and where spans are exported. The only protocol
// is http/protobuf: the gRPC exporter would bring a second RPC stack into
// every service for what any OTLP collector also accepts over HTTP.
func ReadTracing(e *Env) Tracing {
	name := "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	endpoint := e.String(name, "")
	if endpoint == "" {
		name = "OTEL_EXPORTER_OTLP_ENDPOINT"
		endpoint = e.String(name, "")
	}
	exporter := strings.ToLower(e.String("OTEL_TRACES_EXPORTER", "otlp"))
	if endpoint == "" || exporter == "none" || e.Bool("OTEL_SDK_DISABLED", false) {
		return Tracing{}
	}
	if exporter != "otlp" {
		e.Check(fmt.Errorf("OTEL_TRACES_EXPORTER=%q: tock exports spans with otlp only (or none)", exporter))
	}
	protocol := e.String("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", e.String("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"))
	if protocol != "http/protobuf" {
		e.Check(fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%q: tock sends spans over http/protobuf only (an OTLP collector listens for it on port 4318)", protocol))
	}
	if u, err := url.Parse(endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		e.Check(fmt.Errorf("%s=%q is not a URL such as http://collector:4318", name, endpoint))
	}
	return Tracing{Endpoint: endpoint}
}

// The defaults of the settings in Scheduling.
const (
	DefaultHorizon          = 10 * time.Minute
	DefaultMisfireThreshold = time.Minute
)

// Scheduling is what the dashboard, the scheduler and the worker must agree
// on about due times, read once by each from the same variables.
type Scheduling struct {
	// Horizon is how far ahead the scheduler's loader puts occurrences in
	// Redis (TOCK_LOAD_HORIZON); the dashboard puts a job due sooner there
	// itself, or it would wait for the next load.
	Horizon time.Duration
	// MisfireThreshold is how late a recurring occurrence may start before
	// its job's misfire policy decides whether it runs
	// (TOCK_MISFIRE_THRESHOLD): the loader, the dashboard loading a job it
	// just created or edited, and the worker about to start one judge alike.
	MisfireThreshold time.Duration
}

// ReadScheduling reads the scheduling settings the services share.
func ReadScheduling(e *Env) Scheduling {
	s := Scheduling{
		Horizon:          e.Duration("TOCK_LOAD_HORIZON", DefaultHorizon),
		MisfireThreshold: e.Duration("TOCK_MISFIRE_THRESHOLD", DefaultMisfireThreshold),
	}
	if s.Horizon < time.Second {
		e.Check(fmt.Errorf("TOCK_LOAD_HORIZON=%s must be at least 1s", s.Horizon))
	}
	if s.MisfireThreshold <= 0 {
		e.Check(fmt.Errorf("TOCK_MISFIRE_THRESHOLD=%s must be positive", s.MisfireThreshold))
	}
	return s
}

// ReadTargets reads the outbound policy for user-supplied URLs. The worker
// dials through it, and the dashboard refuses at creation the URLs it would
// refuse, so both must read the same variables.
func ReadTargets(e *Env) outbound.Options {
	o := outbound.Options{AllowPrivate: e.Bool("TOCK_ALLOW_PRIVATE_TARGETS", false)}
	o.AllowCIDRs = e.Prefixes("TOCK_ALLOWED_TARGET_CIDRS", "10.1.0.0/16")
	for _, h := range e.List("TOCK_SQS_HOSTS") {
		if strings.ContainsAny(h, "/@ ") {
			e.Check(fmt.Errorf("TOCK_SQS_HOSTS: %q is not a host or host:port such as elasticmq:9324", h))
			continue
		}
		o.SQSHosts = append(o.SQSHosts, strings.ToLower(h))
	}
	return o
}
