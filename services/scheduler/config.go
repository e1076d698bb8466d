package main

import (
	"fmt"
	"time"

	"github.com/tockhq/tock/pkg/config"
	"github.com/tockhq/tock/pkg/queue"
)

// DefaultPublishLead is how far ahead of their due time members are
// published by default (queue.DefaultPublishLead, which says why): enough
// for a worker to read, fetch and lease a batch before it is due, small
// enough that a cancel in the last moments before a due time is rare to
// find the attempt leased (it is then aborted before it starts).
const DefaultPublishLead = queue.DefaultPublishLead

// Config is the scheduler's settings, read once from the environment.
type Config struct {
	config.Common
	config.Scheduling
	MetricsAddr  string
	LoadInterval time.Duration
	LoadBatch    int
	LockTTL      time.Duration
	PublishBatch int
	PublishTick  time.Duration
	// PublishLead: see Publisher.lead (TOCK_PUBLISH_LEAD).
	PublishLead       time.Duration
	ReconcileInterval time.Duration
	LostAfter         time.Duration
	RunRetention      time.Duration
	PartitionsAhead   time.Duration
	// JobRetention is how long a finished job (completed,
	// permanently_failed, cancelled) is kept, with its runs, after it
	// finished; AuditRetention how long an audit entry is kept. 0 keeps
	// them for ever. Retention runs every RetentionInterval, removing at most
	// retentionBatches batches of RetentionBatch of each a round.
	JobRetention      time.Duration
	AuditRetention    time.Duration
	RetentionInterval time.Duration
	RetentionBatch    int
	// Name identifies this instance on the dashboard's system page.
	Name string
	// MaxRunning and MaxRunningPerHost cap the attempts in flight of one
	// owner and of one target host, for the whole deployment; 0 derives each
	// from the live workers' slots (see caps.go).
	MaxRunning, MaxRunningPerHost int
	// LendIdle lets an owner or host at its cap use slots nobody else is
	// waiting for (see caps.go); false holds every lane to its cap.
	LendIdle bool
	// CloudWatchNamespace turns on the backlog reporter, for ECS to scale
	// workers on; empty leaves it off.
	CloudWatchNamespace string
	CloudWatchInterval  time.Duration
}

func readConfig(e *config.Env) (Config, error) {
	c := Config{
		Common:            config.ReadCommon(e, config.Scheduler),
		MetricsAddr:       e.String("TOCK_METRICS_ADDR", "127.0.0.1:9091"),
		Name:              e.String("TOCK_SCHEDULER_NAME", ""),
		Scheduling:        config.ReadScheduling(e),
		LoadInterval:      e.Duration("TOCK_LOAD_INTERVAL", time.Second),
		LoadBatch:         e.Int("TOCK_LOAD_BATCH", 5000, 1, 100000),
		LockTTL:           e.Duration("TOCK_LOCK_TTL", 10*time.Second),
		PublishBatch:      e.Int("TOCK_PUBLISH_BATCH", 1000, 1, 100000),
		PublishTick:       e.Duration("TOCK_PUBLISH_TICK", 50*time.Millisecond),
		PublishLead:       e.Duration("TOCK_PUBLISH_LEAD", DefaultPublishLead),
		ReconcileInterval: e.Duration("TOCK_RECONCILE_INTERVAL", 10*time.Second),
		LostAfter:         e.Duration("TOCK_LOST_AFTER", time.Minute),
		RunRetention:      e.Duration("TOCK_RUN_RETENTION", 30*24*time.Hour),
		PartitionsAhead:   e.Duration("TOCK_PARTITIONS_AHEAD", 7*24*time.Hour),
		JobRetention:      e.Duration("TOCK_JOB_RETENTION", 30*24*time.Hour),
		AuditRetention:    e.Duration("TOCK_AUDIT_RETENTION", 365*24*time.Hour),
		RetentionInterval: e.Duration("TOCK_RETENTION_INTERVAL", time.Minute),
		RetentionBatch:    e.Int("TOCK_RETENTION_BATCH", 1000, 1, 100000),
		MaxRunning:        e.Int("TOCK_LIMIT_MAX_RUNNING", 0, 0, 10_000_000),
		MaxRunningPerHost: e.Int("TOCK_LIMIT_MAX_RUNNING_PER_HOST", 0, 0, 10_000_000),
		LendIdle:          e.Bool("TOCK_LIMIT_LEND_IDLE_SLOTS", true),

		CloudWatchNamespace: e.String("TOCK_CLOUDWATCH_NAMESPACE", ""),
		CloudWatchInterval:  e.Duration("TOCK_CLOUDWATCH_INTERVAL", 10*time.Second),
	}
	if c.PublishLead < 0 || c.PublishLead > time.Second {
		e.Check(fmt.Errorf("TOCK_PUBLISH_LEAD=%s must be from 0 to 1s", c.PublishLead))
	}
	if c.PublishTick <= 0 || c.PublishTick > 50*time.Millisecond {
		e.Check(fmt.Errorf("TOCK_PUBLISH_TICK=%s must be above 0 and at most 50ms", c.PublishTick))
	}
	if c.LockTTL < time.Second {
		e.Check(fmt.Errorf("TOCK_LOCK_TTL=%s must be at least 1s", c.LockTTL))
	}
	if c.JobRetention < 0 || c.AuditRetention < 0 {
		e.Check(fmt.Errorf("TOCK_JOB_RETENTION=%s and TOCK_AUDIT_RETENTION=%s must not be negative (0 keeps for ever)", c.JobRetention, c.AuditRetention))
	}
	if c.RetentionInterval <= 0 {
		e.Check(fmt.Errorf("TOCK_RETENTION_INTERVAL=%s must be above 0", c.RetentionInterval))
	}
	if c.CloudWatchInterval < time.Second {
		e.Check(fmt.Errorf("TOCK_CLOUDWATCH_INTERVAL=%s must be at least 1s", c.CloudWatchInterval))
	}
	return c, e.Err()
}
