// Package rate holds the dashboard's rate buckets. They are GCRA buckets in
// Redis (go-redis/redis_rate), so that every dashboard behind a load
// balancer counts in the same ones: the API's per-user limits count there,
// and so does the per-address limit on failed authentications (guard). One
// home for them keeps one policy for while Redis cannot be asked, and one
// warning a minute about it, whichever limit met the outage.
package rate

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/tockhq/tock/pkg/queue"
	"github.com/tockhq/tock/services/dashboard/apierr"
)

// The policies for while Redis cannot be asked (TOCK_LIMITS_ON_REDIS_DOWN).
const (
	Allow = "allow" // let the requests through
	Deny  = "deny"  // answer 503
)

// Deps is what a Limiter needs.
type Deps struct {
	// Redis holds the buckets, under Prefix (queue.RateKey).
	Redis  redis.UniversalClient
	Prefix string
	// Logger warns of the outages; nil logs nothing.
	Logger *zap.Logger
}

// Limiter takes tokens from the buckets and applies the outage policy.
type Limiter struct {
	rl     *redis_rate.Limiter
	prefix string
	log    *zap.Logger

	// While Redis cannot be asked, one warning a minute says how many
	// requests met the outage, instead of one per request.
	mu       sync.Mutex
	missed   int
	warnedAt time.Time
}

// New builds a Limiter on d.
func New(d Deps) *Limiter {
	l := &Limiter{rl: redis_rate.NewLimiter(d.Redis), prefix: d.Prefix, log: d.Logger}
	if l.log == nil {
		l.log = zap.NewNop()
	}
	return l
}

// Take takes n tokens from the bucket of key (a user id, or a client
// address), within a second.
func (l *Limiter) Take(ctx context.Context, bucket, key string, limit redis_rate.Limit, n int) (*redis_rate.Result, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	return l.rl.AllowN(ctx, queue.RateKey(l.prefix, bucket, stringer(key)), limit, n)
}

type stringer string

func (s stringer) String() string { return string(s) }

// Unavailable applies the outage policy to a request whose limit could not
// be checked: nil lets it through (Allow), or a 503 refuses it (Deny).
// Either way the outage is logged at most once a minute, with the number of
// requests it met since the last line.
func (l *Limiter) Unavailable(bucket string, err error, policy string) error {
	l.mu.Lock()
	l.missed++
	if now := time.Now(); now.Sub(l.warnedAt) >= time.Minute {
		l.log.Warn("rate_limit_unavailable", zap.String("bucket", bucket), zap.Int("requests", l.missed),
			zap.String("policy", policy), zap.Error(err))
		l.missed, l.warnedAt = 0, now
	}
	l.mu.Unlock()
	if policy == Deny {
		return apierr.New(http.StatusServiceUnavailable, apierr.CodeUnavailable, "",
			"rate limits cannot be checked while Redis is unavailable; retry shortly")
	}
	return nil
}
