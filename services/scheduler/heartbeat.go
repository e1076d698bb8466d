package main

import (
	"context"
	"os"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/tockhq/tock/pkg/queue"
	"github.com/tockhq/tock/pkg/service"
)

// heartbeatEvery is how often a scheduler says it is alive. The dashboard
// shows an instance silent for several beats as gone.
const heartbeatEvery = time.Second

// instanceName is TOCK_SCHEDULER_NAME, or host and pid.
func instanceName(configured string) string {
	if configured != "" {
		return configured
	}
	host, _ := os.Hostname()
	return host + "-" + strconv.Itoa(os.Getpid())
}

// heartbeat records in Redis, every second until ctx ends, that this
// instance is alive and whether it holds the loader lock, for the
// dashboard's system page. Nothing depends on it for correctness, so a
// failure is only logged, once per outage.
func heartbeat(ctx context.Context, q *queue.Shard, name string, l *Leader, ttl time.Duration, log *zap.Logger) {
	service.Every(ctx, heartbeatEvery, log, "heartbeat_failed", func(ctx context.Context) error {
		return q.Heartbeat(ctx, name, time.Now(), l.Leading(), ttl)
	})
}
