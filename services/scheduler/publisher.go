package main

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/tockhq/tock/pkg/metrics"
	"github.com/tockhq/tock/pkg/queue"
	"github.com/tockhq/tock/pkg/telemetry"
)

// The names of the scheduler's spans.
const (
	publishSpan = "tock.publish"
	loadSpan    = "tock.load"
)

// Publisher moves due members to the ready stream. Every scheduler instance runs
// one; the Lua pop is atomic, so they never publish a member twice. It sleeps
// until the earliest remaining due time, and never longer than its tick, so a
// member added while it sleeps waits at most one tick to be seen.
type Publisher struct {
	queue *queue.Shard
	log   *zap.Logger
	batch int
	tick  time.Duration
	// lead: members due up to this long ahead are published too, for the
	// workers to start at their due time (TOCK_PUBLISH_LEAD); after a call
	// that moved some, the next waits at least half of it, so that at a
	// steady load each call, and each read, start and write downstream,
	// serves the members due over that half.
	lead time.Duration
	// caps are the caps on attempts in flight it records for its shard;
	// nil records none (every lane unlimited until something does).
	caps func() queue.Caps
	// metrics counts the members moved.
	metrics *metrics.Scheduler
	// tracer makes a span per publish that moved members (or first failed);
	// nil (tracing off) makes none.
	tracer trace.Tracer
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
		var caps queue.Caps
		if p.caps != nil {
			caps = p.caps()
		}
		var start time.Time
		if p.tracer != nil {
			start = time.Now()
		}
		res, err := p.queue.PublishAhead(ctx, p.batch, time.Time{}, p.lead, caps)
		if p.tracer != nil && (res.Moved > 0 || (err != nil && !failing && ctx.Err() == nil)) {
			p.trace(ctx, start, res, err)
		}
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
				if d := res.Next.Sub(res.Now) - p.lead; d < wait {
					wait = max(d, 0)
				}
			}
			// A flow key's rate window that reopens (the script gave the
			// time, lead included) is looked at then, not at the next tick.
			if !res.Wake.IsZero() {
				if d := res.Wake.Sub(res.Now); d < wait {
					wait = max(d, 0)
				}
			}
			if res.Moved > 0 && p.lead > 0 {
				wait = max(wait, p.lead/2)
			}
		}
		if res.Sent > 0 {
			p.metrics.Moved.Add(float64(res.Sent))
			p.log.Debug("published", zap.Int("sent", res.Sent), zap.Int("held", res.Held))
		}
		timer.Reset(wait)
	}
}

// trace records a publish that began at start as a span, after the fact: a
// span per call would be twenty a second per shard of empty ones, so only
// the calls that moved members, or the first of a run of failures, make one.
func (p *Publisher) trace(ctx context.Context, start time.Time, res queue.Published, err error) {
	_, span := p.tracer.Start(ctx, publishSpan, trace.WithTimestamp(start), trace.WithAttributes(
		telemetry.Shard.Int(p.queue.Keys().Shard),
		telemetry.Published.Int(res.Sent),
		telemetry.Held.Int(res.Held)))
	if err != nil {
		span.SetStatus(codes.Error, "publish failed") // no stored value in a span
	}
	span.End()
}
