package main

import (
	"fmt"
	"net"
	"net/netip"

	"go.uber.org/zap/zapcore"

	"github.com/tockhq/tock/pkg/config"
	"github.com/tockhq/tock/pkg/outbound"
	"github.com/tockhq/tock/services/dashboard/api"
	"github.com/tockhq/tock/services/dashboard/rate"
)

// minTokenLen keeps the admin token out of reach of guessing.
const minTokenLen = 16

// Config is the dashboard's settings, read once from the environment.
type Config struct {
	config.Common
	HTTPAddr string
	// MetricsAddr serves /metrics and /healthz apart from the public API, so
	// metrics never reach the API's clients.
	MetricsAddr string
	AdminToken  string
	// Scheduling's misfire threshold judges misfires when the dashboard loads
	// a recurring job right after creating or editing it, as the loader does.
	config.Scheduling
	MaxPayloadBytes int
	MaxBodyBytes    int
	// MaxBatchBodyBytes caps the body of a bulk create.
	MaxBatchBodyBytes int
	// Targets is the workers' outbound policy: a job URL they would refuse
	// to call is refused at creation.
	Targets outbound.Options
	// Quotas are every user's rate limits and cap on active jobs.
	Quotas api.Quotas
	// TrustedProxies (TOCK_TRUSTED_PROXIES) are the proxies whose
	// X-Forwarded-For names the client.
	TrustedProxies []netip.Prefix
}

// readConfig reads the settings and reports every problem at once. No error
// message carries the token's value.
func readConfig(e *config.Env) (Config, error) {
	c := Config{
		Common:            config.ReadCommon(e, config.Dashboard),
		HTTPAddr:          e.String("TOCK_HTTP_ADDR", "127.0.0.1:8080"),
		MetricsAddr:       e.String("TOCK_METRICS_ADDR", "127.0.0.1:9090"),
		AdminToken:        e.Required("TOCK_ADMIN_TOKEN", fmt.Sprintf("the administrator's bearer token, at least %d characters", minTokenLen)),
		Scheduling:        config.ReadScheduling(e),
		MaxPayloadBytes:   e.Int("TOCK_MAX_PAYLOAD_BYTES", 64<<10, 1, 16<<20),
		MaxBodyBytes:      e.Int("TOCK_MAX_BODY_BYTES", 1<<20, 1, 64<<20),
		MaxBatchBodyBytes: e.Int("TOCK_MAX_BATCH_BODY_BYTES", 32<<20, 1, 1<<30),
		Targets:           config.ReadTargets(e),
		Quotas: api.Quotas{
			RequestsPerMinute:     e.Int("TOCK_LIMIT_REQUESTS_PER_MINUTE", api.DefaultQuotas.RequestsPerMinute, 0, 10_000_000),
			RequestBurst:          e.Int("TOCK_LIMIT_REQUEST_BURST", api.DefaultQuotas.RequestBurst, 0, 10_000_000),
			JobsPerMinute:         e.Int("TOCK_LIMIT_JOBS_PER_MINUTE", api.DefaultQuotas.JobsPerMinute, 0, 10_000_000),
			JobBurst:              e.Int("TOCK_LIMIT_JOB_BURST", api.DefaultQuotas.JobBurst, 0, 10_000_000),
			MaxActiveJobs:         e.Int("TOCK_LIMIT_MAX_ACTIVE_JOBS", api.DefaultQuotas.MaxActiveJobs, 0, 1_000_000_000),
			OccurrencesPerMinute:  e.Int("TOCK_LIMIT_OCCURRENCES_PER_MINUTE", api.DefaultQuotas.OccurrencesPerMinute, 0, 10_000_000),
			OccurrencesPerSecond:  e.Int("TOCK_LIMIT_OCCURRENCES_PER_SECOND", api.DefaultQuotas.OccurrencesPerSecond, 0, 10_000_000),
			MaxRunning:            e.Int("TOCK_LIMIT_MAX_RUNNING", 0, 0, 10_000_000),
			AuthFailuresPerMinute: e.Int("TOCK_LIMIT_AUTH_FAILURES_PER_MINUTE", api.DefaultQuotas.AuthFailuresPerMinute, 0, 10_000_000),
			AuthFailureBurst:      e.Int("TOCK_LIMIT_AUTH_FAILURE_BURST", api.DefaultQuotas.AuthFailureBurst, 0, 10_000_000),
			MaxKeys:               e.Int("TOCK_LIMIT_MAX_KEYS", api.DefaultQuotas.MaxKeys, 0, 1_000_000),
			MaxFlowKeys:           e.Int("TOCK_LIMIT_MAX_FLOW_KEYS", api.DefaultQuotas.MaxFlowKeys, 0, 100_000_000),
			OnRedisDown:           e.String("TOCK_LIMITS_ON_REDIS_DOWN", rate.Allow),
		},
	}
	c.TrustedProxies = e.Prefixes("TOCK_TRUSTED_PROXIES", "10.0.0.0/16")
	if p := c.Quotas.OnRedisDown; p != rate.Allow && p != rate.Deny {
		e.Check(fmt.Errorf("TOCK_LIMITS_ON_REDIS_DOWN=%q must be %s or %s", p, rate.Allow, rate.Deny))
	}
	if c.AdminToken != "" && len(c.AdminToken) < minTokenLen {
		e.Check(fmt.Errorf("TOCK_ADMIN_TOKEN must be at least %d characters", minTokenLen))
	}
	if _, _, err := net.SplitHostPort(c.HTTPAddr); err != nil {
		e.Check(fmt.Errorf("TOCK_HTTP_ADDR=%q is not host:port", c.HTTPAddr))
	}
	if _, _, err := net.SplitHostPort(c.MetricsAddr); err != nil {
		e.Check(fmt.Errorf("TOCK_METRICS_ADDR=%q is not host:port", c.MetricsAddr))
	} else if c.MetricsAddr == c.HTTPAddr {
		e.Check(fmt.Errorf("TOCK_METRICS_ADDR=%q must differ from TOCK_HTTP_ADDR: metrics stay off the public port", c.MetricsAddr))
	}
	if c.MaxBodyBytes < c.MaxPayloadBytes {
		e.Check(fmt.Errorf("TOCK_MAX_BODY_BYTES=%d must be at least TOCK_MAX_PAYLOAD_BYTES=%d", c.MaxBodyBytes, c.MaxPayloadBytes))
	}
	if _, err := zapcore.ParseLevel(c.LogLevel); err != nil {
		e.Check(fmt.Errorf("TOCK_LOG_LEVEL=%q must be debug, info, warn or error", c.LogLevel))
	}
	return c, e.Err()
}
