package service

import (
	"context"
	"time"

	"go.uber.org/zap"
)

// Every calls beat at once, then every interval until ctx ends: the loop of
// a heartbeat, which nothing depends on for correctness. A failure is logged
// as msg once per outage, and logged again only after a call has succeeded.
func Every(ctx context.Context, interval time.Duration, log *zap.Logger, msg string, beat func(context.Context) error) {
	t := time.NewTicker(interval)
	defer t.Stop()
	failing := false
	for {
		err := beat(ctx)
		switch {
		case err != nil && !failing && ctx.Err() == nil:
			log.Warn(msg, zap.Error(err))
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
