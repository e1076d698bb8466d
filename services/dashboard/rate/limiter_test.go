package rate_test

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/tockhq/tock/pkg/testenv"
	"github.com/tockhq/tock/services/dashboard/apierr"
	"github.com/tockhq/tock/services/dashboard/rate"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestTake: two dashboards' limiters on the same Redis count in the same
// bucket, so a client cannot double its limit by alternating between them.
func TestTake(t *testing.T) {
	t.Parallel()
	rdb, prefix := testenv.Redis(t)
	one := rate.New(rate.Deps{Redis: rdb, Prefix: prefix})
	two := rate.New(rate.Deps{Redis: rdb, Prefix: prefix})
	limit := redis_rate.Limit{Rate: 1, Burst: 2, Period: time.Hour}
	for _, l := range []*rate.Limiter{one, two} {
		res, err := l.Take(t.Context(), "requests", "user-1", limit, 1)
		require.NoError(t, err)
		require.Equal(t, 1, res.Allowed)
	}
	res, err := one.Take(t.Context(), "requests", "user-1", limit, 1)
	require.NoError(t, err)
	require.Zero(t, res.Allowed, "the burst is spent, across both")
	require.Positive(t, res.RetryAfter)

	res, err = two.Take(t.Context(), "requests", "user-2", limit, 2)
	require.NoError(t, err)
	require.Equal(t, 2, res.Allowed, "another key has a bucket of its own")
	res, err = two.Take(t.Context(), "jobs", "user-1", limit, 1)
	require.NoError(t, err)
	require.Equal(t, 1, res.Allowed, "and so has another bucket")
}

// TestUnavailable: while Redis cannot be asked, Allow lets requests through
// and Deny answers 503; either way one warning a minute says how many
// requests met the outage, not one per request.
func TestUnavailable(t *testing.T) {
	t.Parallel()
	dead := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: time.Second})
	t.Cleanup(func() { _ = dead.Close() })
	core, logs := observer.New(zapcore.WarnLevel)
	l := rate.New(rate.Deps{Redis: dead, Prefix: "unused", Logger: zap.New(core)})

	_, err := l.Take(t.Context(), "requests", "user-1", redis_rate.PerMinute(10), 1)
	require.Error(t, err)
	require.NoError(t, l.Unavailable("requests", err, rate.Allow))
	for range 3 {
		refused := l.Unavailable("auth-failures", err, rate.Deny)
		var ae *apierr.Error
		require.True(t, errors.As(refused, &ae), "%v", refused)
		require.Equal(t, http.StatusServiceUnavailable, ae.Status)
		require.Equal(t, apierr.CodeUnavailable, ae.Detail.Code)
	}
	warned := logs.FilterMessage("rate_limit_unavailable").All()
	require.Len(t, warned, 1)
	require.Equal(t, "requests", warned[0].ContextMap()["bucket"])
	require.Equal(t, int64(1), warned[0].ContextMap()["requests"])
}
