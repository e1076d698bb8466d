package service

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// TestEvery: a beat that fails through an outage is logged once, and once
// more after it has recovered and fails again; Every returns when ctx ends.
func TestEvery(t *testing.T) {
	t.Parallel()
	core, logs := observer.New(zap.WarnLevel)
	results := []error{nil, errors.New("down"), errors.New("down"), nil, errors.New("down again")}
	var mu sync.Mutex
	calls := 0
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		Every(ctx, time.Millisecond, zap.New(core), "beat_failed", func(context.Context) error {
			mu.Lock()
			defer mu.Unlock()
			calls++
			if calls > len(results) {
				cancel()
				return nil
			}
			return results[calls-1]
		})
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Every did not return when its context ended")
	}
	require.Equal(t, 2, logs.FilterMessage("beat_failed").Len(), "one line per outage")
}
