package probe

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// ErrStarting is what a Gate reports until start-up preparation is done.
var ErrStarting = errors.New("starting")

// Gate stays closed while a service prepares (migrations, partitions, stream
// group), so /readyz says not ready and nothing is served half-prepared, while
// /healthz already answers.
type Gate struct{ open atomic.Bool }

// Open marks preparation done.
func (g *Gate) Open() { g.open.Store(true) }

// Check is a readiness check: ErrStarting until Open.
func (g *Gate) Check(context.Context) error {
	if !g.open.Load() {
		return ErrStarting
	}
	return nil
}

// Retry runs f until it succeeds or ctx ends, backing off from 200 ms to 5 s, so
// a service started while Postgres or Redis is down waits for them instead of
// exiting. It logs the first failure and then every tenth.
func Retry(ctx context.Context, log *zap.Logger, what string, f func(context.Context) error) error {
	wait := 200 * time.Millisecond
	for attempt := 0; ; attempt++ {
		err := f(ctx)
		if err == nil {
			if attempt > 0 {
				log.Info("startup_step_recovered", zap.String("step", what), zap.Int("attempts", attempt+1))
			}
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if attempt%10 == 0 {
			log.Warn("startup_step_failed_retrying", zap.String("step", what), zap.Int("attempt", attempt+1), zap.Error(err))
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		wait = min(wait*2, 5*time.Second)
	}
}
