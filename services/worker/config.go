package main

import (
	"errors"
	"fmt"
	"net/mail"
	"strings"
	"time"

	"github.com/tockhq/tock/pkg/config"
	"github.com/tockhq/tock/pkg/jobtype"
	"github.com/tockhq/tock/pkg/outbound"
)

// DefaultConcurrency is how many attempts a worker runs at once. A slot is a
// goroutine and, for a call to a target, one connection: an attempt waiting
// on a slow socket costs memory and a file descriptor, not a CPU, so a worker
// keeps many more attempts in flight than it has cores. 2048 attempts that
// all hang cost about 100 MB and 2048 descriptors (docs/operations.md).
const DefaultConcurrency = 2048

// DefaultCommitWindow is how long the group commit gathers outcomes by
// default. An outcome is recorded that much later at most, which no start
// waits on but that of a job held by an overlap policy (settling, after the
// recording, lets go of it): the slot is free already, and the lane's place
// is given back within maxReleaseWindow. At 1,000 attempts a second each of two workers
// writes about 50 outcomes per statement and settle instead of 12. Against
// 25 ms, 100 ms cut the whole stack's CPU per steady job from 500 to 440
// µs (Postgres 86 -> 64, Redis 74 -> 62, workers 328 -> 302; medians of
// four alternated runs), for the same lateness.
const DefaultCommitWindow = 100 * time.Millisecond

// Config is the worker's settings, read once from the environment.
type Config struct {
	config.Common
	MetricsAddr string
	Concurrency int
	Batch       int
	Block       time.Duration
	// CommitWindow: see Worker.CommitWindow (TOCK_WORKER_COMMIT_WINDOW).
	CommitWindow time.Duration
	Visibility   time.Duration
	LeaseMargin  time.Duration
	BackoffBase  time.Duration
	BackoffMax   time.Duration
	Grace        time.Duration
	// Targets is the outbound policy for job URLs.
	Targets      outbound.Options
	ConsumerName string
	// Scheduling's misfire threshold judges a recurring occurrence that
	// starts late, as the loader does (the worker has no use for the horizon).
	config.Scheduling
	AutoPause int
	// MaxDeliveries: an entry delivered more often than this without an
	// outcome is dead-lettered instead of started again.
	MaxDeliveries int
	// SMTP is the relay of email jobs; without TOCK_SMTP_HOST email jobs fail
	// saying so. Its String leaves the password out.
	SMTP jobtype.EmailConfig
}

func readConfig(e *config.Env) (Config, error) {
	c := Config{
		Common:       config.ReadCommon(e, config.Worker),
		MetricsAddr:  e.String("TOCK_METRICS_ADDR", "127.0.0.1:9092"),
		Concurrency:  e.Int("TOCK_WORKER_CONCURRENCY", DefaultConcurrency, 1, 100000),
		Batch:        e.Int("TOCK_WORKER_BATCH", 256, 1, 10000),
		Block:        e.Duration("TOCK_WORKER_BLOCK", time.Second),
		CommitWindow: e.Duration("TOCK_WORKER_COMMIT_WINDOW", DefaultCommitWindow),
		Visibility:   e.Duration("TOCK_VISIBILITY_TIMEOUT", 15*time.Second),
		LeaseMargin:  e.Duration("TOCK_LEASE_MARGIN", 5*time.Second),
		BackoffBase:  e.Duration("TOCK_RETRY_BACKOFF", time.Second),
		BackoffMax:   e.Duration("TOCK_RETRY_BACKOFF_MAX", time.Hour),
		Grace:        e.Duration("TOCK_SHUTDOWN_GRACE", 25*time.Second),
		Targets:      config.ReadTargets(e),
		ConsumerName: e.String("TOCK_WORKER_NAME", ""),
		Scheduling:   config.ReadScheduling(e),
		AutoPause:    e.Int("TOCK_AUTO_PAUSE_AFTER", 5, 0, 1000),
	}
	if c.BackoffBase <= 0 || c.BackoffMax < c.BackoffBase {
		e.Check(fmt.Errorf("TOCK_RETRY_BACKOFF=%s must be above 0 and at most TOCK_RETRY_BACKOFF_MAX=%s", c.BackoffBase, c.BackoffMax))
	}
	if c.Visibility < time.Second {
		e.Check(fmt.Errorf("TOCK_VISIBILITY_TIMEOUT=%s must be at least 1s", c.Visibility))
	}
	// With several shards, each shard's reader holds a slot while it waits on
	// an empty stream: fewer slots than two per shard would leave attempts
	// waiting for readers that wait for entries.
	if c.RedisShards > 1 && c.Concurrency < 2*c.RedisShards {
		e.Check(fmt.Errorf("TOCK_WORKER_CONCURRENCY=%d must be at least twice TOCK_REDIS_SHARDS=%d: each shard's reader holds a slot while it waits", c.Concurrency, c.RedisShards))
	}
	// Redis reads BLOCK 0 as "wait forever": a worker could then never stop.
	if c.CommitWindow < 0 || c.CommitWindow > time.Second {
		e.Check(fmt.Errorf("TOCK_WORKER_COMMIT_WINDOW=%s must be from 0 to 1s", c.CommitWindow))
	}
	if c.Block < time.Millisecond || c.Block > time.Minute {
		e.Check(fmt.Errorf("TOCK_WORKER_BLOCK=%s must be from 1ms to 1m", c.Block))
	}
	// At least 1: 0 would dead-letter every entry reclaimed. A worker that
	// means never says so with a large number.
	c.MaxDeliveries = e.Int("TOCK_MAX_DELIVERIES", 10, 1, 1_000_000)
	c.SMTP = readSMTP(e)
	if c.Batch > c.Concurrency {
		c.Batch = c.Concurrency
	}
	return c, e.Err()
}

// readSMTP reads the SMTP relay of email jobs. Everything but the host is
// checked only when the host is set: an unset host leaves email off.
func readSMTP(e *config.Env) jobtype.EmailConfig {
	c := jobtype.EmailConfig{
		Host:     e.String("TOCK_SMTP_HOST", ""),
		Username: e.String("TOCK_SMTP_USERNAME", ""),
		Password: e.String("TOCK_SMTP_PASSWORD", ""),
		From:     e.String("TOCK_SMTP_FROM", ""),
		StartTLS: jobtype.StartTLS(strings.ToLower(e.String("TOCK_SMTP_STARTTLS", string(jobtype.StartTLSMandatory)))),
		TLS:      e.Bool("TOCK_SMTP_TLS", false),
	}
	defPort := 587
	if c.TLS {
		defPort = 465
	}
	c.Port = e.Int("TOCK_SMTP_PORT", defPort, 1, 65535)
	switch c.StartTLS {
	case jobtype.StartTLSMandatory, jobtype.StartTLSOpportunistic, jobtype.StartTLSNone:
	default:
		e.Check(fmt.Errorf("TOCK_SMTP_STARTTLS=%q must be mandatory, opportunistic or none", c.StartTLS))
	}
	if c.Host == "" {
		return c
	}
	if c.From == "" {
		e.Check(errors.New("TOCK_SMTP_FROM must be set with TOCK_SMTP_HOST: the sender of email jobs"))
	} else if _, err := mail.ParseAddress(c.From); err != nil || strings.ContainsAny(c.From, "\r\n") {
		e.Check(fmt.Errorf("TOCK_SMTP_FROM=%q is not an address such as tock@example.com", c.From))
	}
	if c.Password != "" && c.Username == "" {
		e.Check(errors.New("TOCK_SMTP_PASSWORD is set without TOCK_SMTP_USERNAME"))
	}
	return c
}
