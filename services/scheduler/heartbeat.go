package main

import (
	"context"
	"os"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/tockhq/tock/pkg/queue"
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
func heartbeat(ctx context.Context, q *queue.Queue, name string, l *Leader, ttl time.Duration, log *zap.Logger) {
	t := time.NewTicker(heartbeatEvery)
	defer t.Stop()
	failing := false
	for {
		err := q.Heartbeat(ctx, name, time.Now(), l.Leading(), ttl)
		switch {
		case err != nil && !failing && ctx.Err() == nil:
			log.Warn("heartbeat_failed", zap.Error(err))
			failing = true
		case err == nil:
			failing = false
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
