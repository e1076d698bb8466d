package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/bsm/redislock"
	"go.uber.org/zap"

	"github.com/tockhq/tock/pkg/config"
	"github.com/tockhq/tock/pkg/metrics"
	"github.com/tockhq/tock/pkg/probe"
	"github.com/tockhq/tock/pkg/service"
)

func run(ctx context.Context) error {
	cfg, err := readConfig(config.FromOS())
	if err != nil {
		return fmt.Errorf("config:\n%w", err)
	}
	base, err := service.Open(ctx, "scheduler", cfg.Common)
	if err != nil {
		return err
	}
	defer base.Close()
	log, st, rdb, q := base.Log, base.Store, base.Redis, base.Queue

	reg := metrics.NewRegistry()
	m := metrics.NewScheduler(reg)
	reg.MustRegister(metrics.NewQueueCollector(q.Stats))
	var gate probe.Gate
	mux := base.MetricsMux(gate.Check, reg)
	srv, err := probe.Listen(cfg.MetricsAddr, mux)
	if err != nil {
		return fmt.Errorf("listen on TOCK_METRICS_ADDR: %w", err)
	}

	leader := &Leader{store: st, queue: q, locker: redislock.New(rdb), log: log.Named("loader"), clock: time.Now, cfg: cfg, metrics: m,
		tracer: base.Tracing.Tracer("loader")}
	// A publisher per shard: each sleeps until its own shard's next due time,
	// and records the caps on attempts in flight that caps works out.
	caps := NewCapsWatcher(q, cfg.MaxRunning, cfg.MaxRunningPerHost, cfg.LendIdle, log.Named("caps"), time.Now)
	leader.caps = caps.Caps
	pubs := make([]*Publisher, len(q.Shards()))
	for i, sq := range q.Shards() {
		pubs[i] = &Publisher{queue: sq, log: log.Named("publisher").With(zap.Int("shard", i)), batch: cfg.PublishBatch, tick: cfg.PublishTick, lead: cfg.PublishLead,
			caps: caps.Caps, metrics: m, tracer: base.Tracing.Tracer("publisher")}
	}

	// The backlog in CloudWatch, for scaling workers on AWS: only when asked,
	// and a setup that cannot work fails the start rather than every report.
	var cw *CloudWatch
	if cfg.CloudWatchNamespace != "" {
		client, err := NewCloudWatchClient(ctx)
		if err != nil {
			return err
		}
		cw = &CloudWatch{Namespace: cfg.CloudWatchNamespace, Prefix: cfg.RedisPrefix, Interval: cfg.CloudWatchInterval,
			Stats: q.Stats, Leading: leader.Leading, Client: client, Log: log.Named("cloudwatch")}
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errc := make(chan error, 1)
	wg.Go(func() {
		if err := srv.Serve(); err != nil {
			errc <- err
		}
	})
	wg.Go(func() {
		// Postgres may not answer yet: wait for it rather than exit.
		if probe.Retry(ctx, log, "migrate", st.Migrate) != nil {
			return
		}
		gate.Open()
		wg.Go(func() { leader.Run(ctx) })
		wg.Go(func() { caps.Run(ctx) })
		for _, p := range pubs {
			wg.Go(func() { p.Run(ctx) })
		}
		if cw != nil {
			wg.Go(func() { cw.Run(ctx) })
		}
		wg.Go(func() { heartbeat(ctx, q.Home(), instanceName(cfg.Name), leader, cfg.LockTTL, log.Named("heartbeat")) })
	})
	log.Info("scheduler_started", zap.String("metrics_addr", cfg.MetricsAddr),
		zap.Duration("horizon", cfg.Horizon), zap.Duration("lock_ttl", cfg.LockTTL), zap.Int("shards", len(q.Shards())))

	select {
	case <-ctx.Done():
	case err = <-errc:
		cancel()
	}
	// Stop in reverse: the loops end with ctx (the leader releases its lock),
	// then the probe server.
	sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer scancel()
	_ = srv.Shutdown(sctx)
	wg.Wait()
	log.Info("scheduler_stopped")
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}
