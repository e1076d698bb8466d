package api

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/google/uuid"
	"github.com/labstack/echo/v5"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/tockhq/tock/pkg/queue"
	"github.com/tockhq/tock/pkg/store"
)

// Quotas are the operator's limits for every user (TOCK_LIMIT_*). A user's
// own limits, set by an administrator, override them field by field.
// Administrators are held only to the limits set on them: they are the
// operators, and bulk tools run as them.
type Quotas struct {
	// RequestsPerMinute is the sustained rate of API calls per user, and
	// RequestBurst how many may come at once (GCRA).
	RequestsPerMinute int
	RequestBurst      int
	// JobsPerMinute is the sustained rate of job creation per user, counted
	// in jobs (a batch counts each of its jobs), and JobBurst the most at once.
	JobsPerMinute int
	JobBurst      int
	// MaxActiveJobs caps the jobs a user may have that can still run
	// (scheduled or paused); 0 means no cap.
	MaxActiveJobs int
	// OccurrencesPerMinute caps how often a user's scheduled recurring jobs
	// may run together, averaged over an hour (each job's rate is its
	// schedule.Schedule.PerHour); 0 means no cap.
	OccurrencesPerMinute int
	// MaxRunning caps a user's attempts in flight at once. The dashboard
	// only shows and stores it; the scheduler's publisher applies it, and
	// 0 leaves the scheduler's default.
	MaxRunning int
	// AuthFailuresPerMinute is the sustained rate, per client address, of
	// requests without valid credentials, and AuthFailureBurst how many may
	// come at once; beyond them the address gets 429 before any credential
	// lookup. 0 means no limit. They bind addresses, not users: a user's
	// own limits do not change them.
	AuthFailuresPerMinute int
	AuthFailureBurst      int
	// MaxKeys caps a user's live API keys (neither revoked nor expired);
	// 0 means no cap.
	MaxKeys int
	// OnRedisDown is what the limits do while Redis cannot be asked:
	// LimitsAllow (let requests through) or LimitsDeny (503).
	OnRedisDown string
}

// The policies of Quotas.OnRedisDown (TOCK_LIMITS_ON_REDIS_DOWN).
const (
	LimitsAllow = "allow"
	LimitsDeny  = "deny"
)

// DefaultQuotas are the limits when the operator sets none.
var DefaultQuotas = Quotas{
	RequestsPerMinute: 1200,
	RequestBurst:      100,
	// The largest bulk create or bulk action at once (each counts all its
	// jobs, and a request beyond the burst can never pass), then 100 a
	// second: a full batch every 100 s.
	JobsPerMinute: 6000,
	JobBurst:      max(MaxBatchJobs, MaxBulkJobs),
	MaxActiveJobs: 100000,
	// Ten every-second jobs, or six hundred every-minute ones.
	OccurrencesPerMinute:  600,
	AuthFailuresPerMinute: 60,
	AuthFailureBurst:      20,
	MaxKeys:               50,
	OnRedisDown:           LimitsAllow,
}

// effective resolves the limits that hold for a user with overrides l and
// the given role. A zero rate means unlimited.
func (q Quotas) effective(l store.Limits, admin bool) Quotas {
	if admin {
		q = Quotas{}
	}
	pick := func(dst *int, v *int) {
		if v != nil {
			*dst = *v
		}
	}
	pick(&q.RequestsPerMinute, l.RequestsPerMinute)
	pick(&q.RequestBurst, l.RequestBurst)
	pick(&q.JobsPerMinute, l.JobsPerMinute)
	pick(&q.JobBurst, l.JobBurst)
	pick(&q.MaxActiveJobs, l.MaxActiveJobs)
	pick(&q.OccurrencesPerMinute, l.OccurrencesPerMinute)
	pick(&q.MaxRunning, l.MaxRunning)
	if q.RequestsPerMinute > 0 && q.RequestBurst <= 0 {
		q.RequestBurst = q.RequestsPerMinute
	}
	if q.JobsPerMinute > 0 && q.JobBurst <= 0 {
		q.JobBurst = q.JobsPerMinute
	}
	return q
}

// limiter holds the per-user GCRA buckets in Redis (go-redis/redis_rate), so
// every dashboard instance shares them.
type limiter struct {
	rl *redis_rate.Limiter
	// rdb records and finds the credentials minted lately (vouch).
	rdb    redis.UniversalClient
	prefix string
	log    *zap.Logger

	// While Redis cannot be asked, one warning a minute says how many
	// requests met the outage, instead of one per request.
	mu       sync.Mutex
	missed   int
	warnedAt time.Time

	// blocked are the client addresses refused before any lookup, and
	// clientAddr reads a request's (clientAddrFunc).
	blocked    blockedAddrs
	clientAddr echo.IPExtractor
	// good are the tokens that authenticated lately (authGate).
	good goodTokens
}

// take takes n tokens from the bucket of key (a user id, or a client
// address), within a second.
func (l *limiter) take(ctx context.Context, bucket, key string, limit redis_rate.Limit, n int) (*redis_rate.Result, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	return l.rl.AllowN(ctx, queue.RateKey(l.prefix, bucket, stringer(key)), limit, n)
}

type stringer string

func (s stringer) String() string { return string(s) }

// unavailable applies the outage policy to a request whose limit could not
// be checked: nil lets it through (LimitsAllow), or a 503 refuses it
// (LimitsDeny). Either way the outage is logged at most once a minute, with
// the number of requests it met since the last line.
func (l *limiter) unavailable(bucket string, err error, policy string) error {
	l.mu.Lock()
	l.missed++
	if now := time.Now(); now.Sub(l.warnedAt) >= time.Minute {
		l.log.Warn("rate_limit_unavailable", zap.String("bucket", bucket), zap.Int("requests", l.missed),
			zap.String("policy", policy), zap.Error(err))
		l.missed, l.warnedAt = 0, now
	}
	l.mu.Unlock()
	if policy == LimitsDeny {
		return newError(http.StatusServiceUnavailable, CodeUnavailable, "",
			"rate limits cannot be checked while Redis is unavailable; retry shortly")
	}
	return nil
}

// allow takes n tokens from one of a user's buckets. A refusal is a 429 with
// Retry-After in whole seconds, rounded up. When Redis fails, policy
// (TOCK_LIMITS_ON_REDIS_DOWN) decides: by default the request is let
// through, since the limits protect tock from a user and refusing everyone
// while Redis is away would protect nothing; "deny" answers 503.
func (l *limiter) allow(c *echo.Context, bucket string, user uuid.UUID, perMinute, burst, n int, policy string) error {
	if perMinute <= 0 || l == nil {
		return nil
	}
	limit := redis_rate.Limit{Rate: perMinute, Burst: burst, Period: time.Minute}
	res, err := l.take(c.Request().Context(), bucket, user.String(), limit, n)
	if err != nil {
		return l.unavailable(bucket, err, policy)
	}
	h := c.Response().Header()
	if bucket == bucketRequests {
		h.Set("X-RateLimit-Limit", strconv.Itoa(perMinute))
		h.Set("X-RateLimit-Remaining", strconv.Itoa(res.Remaining))
	}
	if res.Allowed >= n {
		return nil
	}
	retry := res.RetryAfter
	if n > burst {
		// More than the bucket holds can never pass at once.
		return newError(http.StatusTooManyRequests, CodeRateLimited, "",
			fmt.Sprintf("%d jobs at once is more than your burst of %d; send smaller batches", n, burst))
	}
	h.Set("Retry-After", strconv.Itoa(int(math.Ceil(max(retry, time.Second).Seconds()))))
	what := "API requests"
	if bucket == bucketJobs {
		what = "job creations"
	}
	return newError(http.StatusTooManyRequests, CodeRateLimited, "",
		fmt.Sprintf("too many %s: the limit is %d a minute with bursts of %d; retry after %s", what, perMinute, burst, retry.Round(time.Millisecond)))
}

// Buckets of the limiter.
const (
	bucketRequests = "requests"
	bucketJobs     = "jobs"
)

// rateLimit holds every authenticated request to the caller's request rate.
func (s *Server) rateLimit(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c *echo.Context) error {
		p := caller(c)
		q := s.quotas.effective(p.limits, p.admin)
		if err := s.limiter.allow(c, bucketRequests, p.user, q.RequestsPerMinute, q.RequestBurst, 1, s.quotas.OnRedisDown); err != nil {
			return err
		}
		return next(c)
	}
}

// allowJobs takes n jobs from the caller's creation rate.
func (s *Server) allowJobs(c *echo.Context, n int) error {
	p := caller(c)
	q := s.quotas.effective(p.limits, p.admin)
	return s.limiter.allow(c, bucketJobs, p.user, q.JobsPerMinute, q.JobBurst, n, s.quotas.OnRedisDown)
}

// maxActive is the cap on active jobs of an owner: their own limits and role,
// whoever creates the job for them.
func (s *Server) maxActive(owner *store.User) int {
	return s.quotas.effective(owner.Limits, owner.Role == store.RoleAdmin).MaxActiveJobs
}

// maxPerHour is the cap on occurrences an hour of an owner's recurring jobs.
func (s *Server) maxPerHour(owner *store.User) int {
	return 60 * s.quotas.effective(owner.Limits, owner.Role == store.RoleAdmin).OccurrencesPerMinute
}

// ownerMaxPerHour answers, for an edit, the cap on occurrences an hour of a
// job owner's recurring jobs: the caller's own, or the limits of the user an
// administrator edits a job of.
func (s *Server) ownerMaxPerHour(c *echo.Context) func(context.Context, uuid.UUID) (int, error) {
	return s.maxPerHourOf(caller(c))
}

// maxPerHourOf is ownerMaxPerHour for a caller p.
func (s *Server) maxPerHourOf(p principal) func(context.Context, uuid.UUID) (int, error) {
	return func(ctx context.Context, owner uuid.UUID) (int, error) {
		if owner == p.user {
			return 60 * s.quotas.effective(p.limits, p.admin).OccurrencesPerMinute, nil
		}
		u, err := s.store.GetUser(ctx, owner)
		if err != nil {
			return 0, err
		}
		return s.maxPerHour(u), nil
	}
}

// rateError refuses a recurring job that would make its owner's jobs run
// more often than their limit allows.
func rateError(e *store.RateError) error {
	return newError(http.StatusTooManyRequests, CodeQuotaExceeded, "schedule",
		fmt.Sprintf("the owner's scheduled recurring jobs run %d times a minute and this one would add %d; the limit is %d a minute (occurrences_per_minute): pause or cancel some, run this one less often, or ask an administrator to raise the limit",
			ceilDiv(e.PerHour, 60), ceilDiv(e.Adding, 60), e.Max/60))
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

func quotaError(e *store.QuotaError) error {
	return newError(http.StatusTooManyRequests, CodeQuotaExceeded, "",
		fmt.Sprintf("the owner has %d active jobs and may have at most %d; cancel some, or ask an administrator to raise max_active_jobs", e.Active, e.Max))
}
