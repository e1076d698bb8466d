package main

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/tockhq/tock/pkg/queue"
	"github.com/tockhq/tock/pkg/service"
)

// heartbeatEvery is how often a worker says it is alive and how many slots
// it has. The scheduler counts the slots of workers heard from in the last
// few seconds when it derives the default caps on attempts in flight.
const heartbeatEvery = time.Second

// heartbeat records in Redis, every second until ctx ends, that this worker
// is alive with slots slots. A failure is only logged, once per outage: the
// scheduler then counts this worker out of the pool, which makes the
// derived caps smaller, never larger.
func heartbeat(ctx context.Context, q *queue.Shard, name string, slots int, clock func() time.Time, log *zap.Logger) {
	service.Every(ctx, heartbeatEvery, log, "heartbeat_failed", func(ctx context.Context) error {
		return q.WorkerBeat(ctx, name, slots, clock())
	})
}
