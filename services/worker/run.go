package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/tockhq/tock/pkg/config"
	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/jobtype"
	"github.com/tockhq/tock/pkg/metrics"
	"github.com/tockhq/tock/pkg/outbound"
	"github.com/tockhq/tock/pkg/probe"
	"github.com/tockhq/tock/pkg/service"
	"github.com/tockhq/tock/pkg/store"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func run(ctx context.Context) error {
	cfg, err := readConfig(config.FromOS())
	if err != nil {
		return fmt.Errorf("config:\n%w", err)
	}
	base, err := service.Open(ctx, "worker", cfg.Common, store.GenericPlans())
	if err != nil {
		return err
	}
	defer base.Close()
	log, st, q := base.Log, base.Store, base.Queue
	prepare := func(ctx context.Context) error {
		if err := st.Migrate(ctx); err != nil {
			return err
		}
		now := time.Now()
		if _, err := st.EnsureRunPartitions(ctx, now.Add(-24*time.Hour), now.Add(48*time.Hour)); err != nil {
			return err
		}
		if err := st.Warm(ctx, cfg.DBMaxConns); err != nil {
			return err
		}
		if err := q.CheckShards(ctx); err != nil {
			return err
		}
		return q.EnsureGroup(ctx)
	}

	reg := metrics.NewRegistry()
	var gate probe.Gate
	mux := base.MetricsMux(gate.Check, reg)
	srv, err := probe.Listen(cfg.MetricsAddr, mux)
	if err != nil {
		return fmt.Errorf("listen on TOCK_METRICS_ADDR: %w", err)
	}

	name := cfg.ConsumerName
	if name == "" {
		host, _ := os.Hostname()
		name = host + "-" + strconv.Itoa(os.Getpid()) + "-" + job.NewID().String()[24:]
	}
	brokers := jobtype.NewBrokers(cfg.Targets)
	defer brokers.Close()
	runner := jobtype.NewRegistry(jobtype.Deps{Client: outbound.NewClient(cfg.Targets), Version: version, Email: cfg.SMTP, Brokers: brokers})
	worker := &Worker{
		Store: st, Queue: q, Runner: runner, Log: log.Named("worker"), Clock: time.Now,
		Name: name, Concurrency: cfg.Concurrency, Batch: cfg.Batch, Block: cfg.Block, CommitWindow: cfg.CommitWindow, Visibility: cfg.Visibility,
		LeaseMargin: cfg.LeaseMargin, BackoffBase: cfg.BackoffBase, BackoffMax: cfg.BackoffMax, Grace: cfg.Grace,
		MisfireThreshold: cfg.MisfireThreshold, AutoPauseAfter: cfg.AutoPause, MaxDeliveries: cfg.MaxDeliveries,
		Metrics: metrics.NewWorker(reg), Tracer: base.Tracing.Tracer("worker"), busyNow: make(chan struct{}, 1),
	}

	var wg sync.WaitGroup
	errc := make(chan error, 1)
	wg.Go(func() {
		if err := srv.Serve(); err != nil {
			errc <- err
		}
	})
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	consumed := make(chan struct{})
	go func() {
		defer close(consumed)
		// Postgres or Redis may not answer yet: wait for them rather than exit.
		if probe.Retry(cctx, log, "prepare", prepare) != nil {
			return
		}
		gate.Open()
		beat, procs := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(beat)
			heartbeat(cctx, q.Home(), name, cfg.Concurrency, time.Now, log.Named("heartbeat"))
		}()
		go func() {
			defer close(procs)
			service.NewProcs(worker.Busy, worker.busyNow).Run(cctx)
		}()
		worker.Run(cctx)
		<-beat
		<-procs
	}()
	log.Info("worker_started", zap.String("consumer", name), zap.String("metrics_addr", cfg.MetricsAddr),
		zap.Int("concurrency", cfg.Concurrency), zap.Bool("allow_private_targets", cfg.Targets.AllowPrivate),
		zap.String("smtp_host", cfg.SMTP.Host))

	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	// Stop fetching; in-flight attempts finish within the grace period.
	cancel()
	<-consumed
	sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer scancel()
	_ = srv.Shutdown(sctx)
	wg.Wait()
	log.Info("worker_stopped")
	return err
}
