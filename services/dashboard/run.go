package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/tockhq/tock/pkg/config"
	"github.com/tockhq/tock/pkg/jobspec"
	"github.com/tockhq/tock/pkg/metrics"
	"github.com/tockhq/tock/pkg/probe"
	"github.com/tockhq/tock/pkg/service"
	"github.com/tockhq/tock/pkg/store"
	"github.com/tockhq/tock/services/dashboard/api"
	"github.com/tockhq/tock/services/dashboard/guard"
)

// drainTimeout is how long in-flight requests get to finish at shutdown.
const drainTimeout = 10 * time.Second

// run wires the dashboard and serves until ctx ends. Pools open in order
// (Postgres, Redis, listener) and close in reverse, through the defers.
func run(ctx context.Context) error {
	cfg, err := readConfig(config.FromOS())
	if err != nil {
		return fmt.Errorf("config:\n%w", err)
	}
	base, err := service.Open(ctx, "dashboard", cfg.Common)
	if err != nil {
		return err
	}
	defer base.Close()
	log, st, rdb, q := base.Log, base.Store, base.Redis, base.Queue

	reg := metrics.NewRegistry()
	var gate probe.Gate
	srv := api.New(api.Deps{
		Store:             st,
		Queue:             q,
		Redis:             rdb,
		Logger:            log.Named("api"),
		Clock:             time.Now,
		AdminToken:        cfg.AdminToken,
		Horizon:           cfg.Horizon,
		MisfireThreshold:  cfg.MisfireThreshold,
		Limits:            jobspec.Limits{MaxPayloadBytes: cfg.MaxPayloadBytes, Targets: cfg.Targets, Box: cfg.Secrets},
		MaxBodyBytes:      int64(cfg.MaxBodyBytes),
		MaxBatchBodyBytes: int64(cfg.MaxBatchBodyBytes),
		Ready:             gate.Check,
		Quotas:            &cfg.Quotas,
		TrustedProxies:    cfg.TrustedProxies,
		Metrics:           metrics.NewAPI(reg),
		Tracer:            base.Tracing.Tracer("api"),
	})
	mux := base.MetricsMux(gate.Check, reg)
	ms, err := probe.Listen(cfg.MetricsAddr, mux)
	if err != nil {
		return fmt.Errorf("listen on TOCK_METRICS_ADDR: %w", err)
	}
	ln, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("listen on TOCK_HTTP_ADDR: %w", err)
	}
	ln = guard.StrictListener(ln, log.Named("http_server"))
	hs := &http.Server{
		Handler:           srv.Handler(),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          zap.NewStdLog(log.Named("http_server")),
	}
	// The beat lives until every request has ended (beats.stop, below), not
	// just until ctx ends.
	beats := newBeater(log, st, q.Home(), srv.ClaimAs)
	beatCtx, endBeat := context.WithCancel(context.WithoutCancel(ctx))
	defer endBeat()
	go beats.run(beatCtx)
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	merrc := make(chan error, 1)
	go func() { merrc <- ms.Serve() }()
	// Serve /healthz at once; the API answers 503 until Postgres is prepared.
	go func() {
		err := probe.Retry(ctx, log, "migrate", func(ctx context.Context) error {
			if err := st.Migrate(ctx); err != nil {
				return err
			}
			now := time.Now()
			_, err := st.EnsureRunPartitions(ctx, now.Add(-24*time.Hour), now.Add(7*24*time.Hour))
			return err
		})
		if err == nil {
			beats.start(ctx)
			gate.Open()
			reseal(ctx, log, st, cfg.Secrets.Encrypts())
			backfillLoads(ctx, log, st)
		}
	}()
	log.Info("dashboard_started", zap.String("addr", ln.Addr().String()), zap.String("metrics_addr", cfg.MetricsAddr),
		zap.Duration("horizon", cfg.Horizon), zap.Duration("misfire_threshold", cfg.MisfireThreshold), zap.String("redis_prefix", cfg.RedisPrefix))

	select {
	case <-ctx.Done():
	case err := <-errc:
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		_ = ms.Shutdown(sctx)
		return fmt.Errorf("serve http: %w", err)
	case err := <-merrc:
		_ = hs.Close()
		return fmt.Errorf("serve metrics: %w", err)
	}
	// Stop accepting, let in-flight requests finish, then force what is left.
	log.Info("dashboard_stopping")
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), drainTimeout)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		log.Warn("drain_timed_out", zap.Error(err))
		_ = hs.Close()
	}
	// Every request has ended, and with Stop no create whose commit went
	// unanswered is looked for: none of this dashboard's claims awaits its
	// ZADD any more (one looked for and stored waits for the leader).
	srv.Stop()
	endBeat()
	beats.stop(ctx)
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve http: %w", err)
	}
	// The metrics listener goes last, so the drain can still be scraped.
	_ = ms.Shutdown(sctx)
	log.Info("dashboard_stopped")
	return nil
}

// reseal seals, under the current operator key, after the migrations: every
// signing secret stored in plain text or under a previous key, the
// credentials of jobs stored before they were sealed or without a key, and,
// while previous keys are held, the job secrets they sealed. Without a key
// it says, once, that the secrets are stored as they are.
func reseal(ctx context.Context, log *zap.Logger, st *store.Store, encrypts bool) {
	if !encrypts {
		log.Warn("signing_secrets_not_encrypted", zap.String("fix", "set TOCK_SECRET_KEY (openssl rand -base64 32) on the dashboard and the workers"))
		return
	}
	for _, pass := range []struct {
		what string
		run  func(context.Context) (int, int, error)
	}{
		{"signing", st.ResealSecrets},
		{"job_legacy", st.SealJobSecrets},
		{"job_rotation", st.ResealJobSecrets},
	} {
		n, skipped, err := pass.run(ctx)
		switch {
		case err != nil:
			log.Error("reseal_secrets_failed", zap.String("secrets", pass.what), zap.Int("resealed", n), zap.Error(err))
		case skipped > 0:
			log.Error("reseal_secrets_incomplete", zap.String("secrets", pass.what), zap.Int("resealed", n), zap.Int("unopenable", skipped),
				zap.String("fix", "add the key that sealed them to TOCK_SECRET_KEY_PREVIOUS"))
		case n > 0:
			log.Info("secrets_resealed", zap.String("secrets", pass.what), zap.Int("resealed", n))
		}
	}
}

// backfillLoads fills in, after the migrations, the load of every recurring
// job that can still run and has none (stored before migration 023, or by a
// dashboard of the previous release during the upgrade), so that the
// owner's occurrence limits count it. Serving does not wait for it: until
// it is done such a job is not counted.
func backfillLoads(ctx context.Context, log *zap.Logger, st *store.Store) {
	filled, skipped, err := st.BackfillLoads(ctx, time.Now())
	switch {
	case err != nil:
		log.Error("backfill_loads_failed", zap.Int("filled", filled), zap.Int("skipped", skipped), zap.Error(err))
	case skipped > 0:
		log.Warn("backfill_loads_incomplete", zap.Int("filled", filled), zap.Int("skipped", skipped),
			zap.String("why", "their schedules no longer compile, or need more than a request's schedule budget; they are not counted by the occurrence limits"))
	case filled > 0:
		log.Info("loads_backfilled", zap.Int("filled", filled))
	}
}
