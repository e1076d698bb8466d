package main

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/tockhq/tock/pkg/metrics"
	"github.com/tockhq/tock/pkg/queue"
)

// Publisher moves due members to the ready stream. Every scheduler instance runs
// one; the Lua pop is atomic, so they never publish a member twice. It sleeps
// until the earliest remaining due time, and never longer than its tick, so a
// member added while it sleeps waits at most one tick to be seen.
type Publisher struct {
	queue *queue.Queue
	log   *zap.Logger
	batch int
	tick  time.Duration
	// metrics counts the members moved.
	metrics *metrics.Scheduler
}

// Run publishes until ctx ends.
func (p *Publisher) Run(ctx context.Context) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		wait := p.tick
		res, err := p.queue.Publish(ctx, p.batch, time.Time{})
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return
			}
			if !failing {
				p.log.Warn("publish_failed", zap.Error(err))
			}
			failing = true
		case res.Moved >= p.batch:
			// More may be due right now: go again at once.
			wait = 0
		default:
			if failing {
				p.log.Info("publish_recovered")
				failing = false
			}
			if !res.Next.IsZero() {
				if d := res.Next.Sub(res.Now); d < wait {
					wait = max(d, 0)
				}
			}
		}
		if res.Moved > 0 {
			p.metrics.Moved.Add(float64(res.Moved))
			p.log.Debug("published", zap.Int("moved", res.Moved))
		}
		timer.Reset(wait)
	}
}
