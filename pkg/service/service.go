// Package service holds the start-up every tock service shares: its logger,
// its Postgres pool and its Redis client, opened from the common settings and
// closed in reverse order. Each service's run wires its own parts on top.
package service

import (
	"context"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/tockhq/tock/pkg/config"
	"github.com/tockhq/tock/pkg/logging"
	"github.com/tockhq/tock/pkg/metrics"
	"github.com/tockhq/tock/pkg/probe"
	"github.com/tockhq/tock/pkg/queue"
	"github.com/tockhq/tock/pkg/store"
	"github.com/tockhq/tock/pkg/telemetry"
)

// flushTimeout bounds the export of the spans still buffered at shutdown.
const flushTimeout = 5 * time.Second

// Base is what every service opens at start-up. Opening connects to nothing
// yet: pools dial on first use, so a service starts while Postgres or Redis is
// down and waits for them (see probe.Retry).
type Base struct {
	Log   *zap.Logger
	Store *store.Store
	Redis redis.UniversalClient
	Queue *queue.Queue
	// Tracing exports the service's spans; nil when tracing is off, and
	// its tracers then nil too.
	Tracing *telemetry.Tracing

	pprof bool
}

// Open builds the named service's logger, tracing (when configured),
// Postgres pool (with opts) and Redis client.
func Open(ctx context.Context, name string, c config.Common, opts ...store.Option) (*Base, error) {
	log, err := logging.New(name, c.LogLevel)
	if err != nil {
		return nil, err
	}
	tracing, err := telemetry.Setup(ctx, c.Tracing, name, log)
	if err != nil {
		_ = log.Sync()
		return nil, err
	}
	st, err := store.Open(ctx, c.DatabaseURL, int32(c.DBMaxConns), append(opts, store.DirectURL(c.DatabaseDirectURL), store.Secrets(c.Secrets))...)
	if err != nil {
		_ = tracing.Shutdown(ctx)
		_ = log.Sync()
		return nil, err
	}
	rdb, err := queue.Connect(c.RedisURL, c.RedisCluster, c.RedisAddrs)
	if err != nil {
		st.Close()
		_ = tracing.Shutdown(ctx)
		_ = log.Sync()
		return nil, err
	}
	return &Base{Log: log, Store: st, Redis: rdb, Queue: queue.New(rdb, c.RedisPrefix, c.RedisShards), Tracing: tracing, pprof: c.Pprof}, nil
}

// MetricsMux is what every service serves on its metrics listener: /healthz,
// /readyz (start-up done, Postgres and Redis answering), /metrics from reg,
// and with TOCK_PPROF the pprof endpoints.
func (b *Base) MetricsMux(started probe.Check, reg *prometheus.Registry) *http.ServeMux {
	mux := probe.Handler(map[string]probe.Check{
		"startup":  started,
		"postgres": b.Store.Ping,
		"redis":    func(ctx context.Context) error { return b.Redis.Ping(ctx).Err() },
	})
	mux.Handle("GET /metrics", metrics.Handler(reg))
	if b.pprof {
		probe.Profiling(mux)
	}
	return mux
}

// Close releases the Redis client, the Postgres pool, the tracing (its
// buffered spans exported within flushTimeout) and the logger, in the
// reverse of the order Open made them. It runs once the service's parts
// have stopped, so their last spans are among those flushed.
func (b *Base) Close() {
	_ = b.Redis.Close()
	b.Store.Close()
	ctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
	defer cancel()
	if err := b.Tracing.Shutdown(ctx); err != nil {
		b.Log.Warn("trace_flush_failed", zap.Error(err))
	}
	_ = b.Log.Sync()
}
