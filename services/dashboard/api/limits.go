package api

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/google/uuid"
	"github.com/labstack/echo/v5"

	"github.com/tockhq/tock/pkg/store"
	"github.com/tockhq/tock/services/dashboard/access"
	"github.com/tockhq/tock/services/dashboard/apierr"
	"github.com/tockhq/tock/services/dashboard/rate"
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
	// may fire together in their busiest minute, and OccurrencesPerSecond in
	// their busiest second (each job's load is schedule.Schedule.Load; see
	// store.Rates); 0 means no cap.
	OccurrencesPerMinute int
	OccurrencesPerSecond int
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
	// MaxFlowKeys caps the flow keys a user may hold (store.Flow); 0 means
	// no cap.
	MaxFlowKeys int
	// OnRedisDown is what the limits do while Redis cannot be asked:
	// rate.Allow (let requests through) or rate.Deny (503).
	OnRedisDown string
}

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
	MaxFlowKeys:   store.DefaultMaxFlowKeys,
	// Ten every-second jobs, or six hundred every-minute ones (at six or
	// more seconds of the minute: see OccurrencesPerSecond).
	OccurrencesPerMinute: 600,
	// A tenth of the minute's limit in any one second, ten times the
	// average rate that limit allows: room for the seconds jobs crowd into
	// (a 5-field cron fires at second 0, @daily at midnight), while no
	// user lines a minute's worth, or 35,000 jobs, up in one second, which
	// the loader, the publisher and the workers would all have to take at
	// once, late for everyone else.
	OccurrencesPerSecond:  100,
	AuthFailuresPerMinute: 60,
	AuthFailureBurst:      20,
	MaxKeys:               50,
	OnRedisDown:           rate.Allow,
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
	pick(&q.OccurrencesPerSecond, l.OccurrencesPerSecond)
	pick(&q.MaxRunning, l.MaxRunning)
	if q.RequestsPerMinute > 0 && q.RequestBurst <= 0 {
		q.RequestBurst = q.RequestsPerMinute
	}
	if q.JobsPerMinute > 0 && q.JobBurst <= 0 {
		q.JobBurst = q.JobsPerMinute
	}
	return q
}

// allow takes n tokens from one of a user's buckets. A refusal is a 429 with
// Retry-After in whole seconds, rounded up. When Redis fails, policy
// (TOCK_LIMITS_ON_REDIS_DOWN) decides: by default the request is let
// through, since the limits protect tock from a user and refusing everyone
// while Redis is away would protect nothing; "deny" answers 503.
func allow(c *echo.Context, l *rate.Limiter, bucket string, user uuid.UUID, perMinute, burst, n int, policy string) error {
	if perMinute <= 0 || l == nil {
		return nil
	}
	limit := redis_rate.Limit{Rate: perMinute, Burst: burst, Period: time.Minute}
	res, err := l.Take(c.Request().Context(), bucket, user.String(), limit, n)
	if err != nil {
		return l.Unavailable(bucket, err, policy)
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
		return apierr.New(http.StatusTooManyRequests, apierr.CodeRateLimited, "",
			fmt.Sprintf("%d jobs at once is more than your burst of %d; send smaller batches", n, burst))
	}
	h.Set("Retry-After", strconv.Itoa(int(math.Ceil(max(retry, time.Second).Seconds()))))
	what := "API requests"
	if bucket == bucketJobs {
		what = "job creations"
	}
	return apierr.New(http.StatusTooManyRequests, apierr.CodeRateLimited, "",
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
		p := access.Caller(c)
		q := s.quotas.effective(p.Limits, p.Admin)
		if err := allow(c, s.limiter, bucketRequests, p.User, q.RequestsPerMinute, q.RequestBurst, 1, s.quotas.OnRedisDown); err != nil {
			return err
		}
		return next(c)
	}
}

// allowJobs takes n jobs from the caller's creation rate.
func (s *Server) allowJobs(c *echo.Context, n int) error {
	p := access.Caller(c)
	q := s.quotas.effective(p.Limits, p.Admin)
	return allow(c, s.limiter, bucketJobs, p.User, q.JobsPerMinute, q.JobBurst, n, s.quotas.OnRedisDown)
}

// maxActive is the cap on active jobs of an owner: their own limits and role,
// whoever creates the job for them.
func (s *Server) maxActive(owner *store.User) int {
	return s.quotas.effective(owner.Limits, owner.Role == store.RoleAdmin).MaxActiveJobs
}

// rates are an owner's limits on how often their recurring jobs fire
// together: their own limits and role, whoever creates the job for them.
func (s *Server) rates(owner *store.User) store.Rates {
	return s.quotas.effective(owner.Limits, owner.Role == store.RoleAdmin).rates()
}

// rates are the limits of q on how often recurring jobs fire together.
func (q Quotas) rates() store.Rates {
	return store.Rates{PerMinute: q.OccurrencesPerMinute, PerSecond: q.OccurrencesPerSecond}
}

// ownerRates answers, for an edit, the limits on how often a job owner's
// recurring jobs fire together: the caller's own, or the limits of the user
// an administrator edits a job of.
func (s *Server) ownerRates(c *echo.Context) func(context.Context, uuid.UUID) (store.Rates, error) {
	return s.ratesOf(access.Caller(c))
}

// ratesOf is ownerRates for a caller p.
func (s *Server) ratesOf(p access.Principal) func(context.Context, uuid.UUID) (store.Rates, error) {
	return func(ctx context.Context, owner uuid.UUID) (store.Rates, error) {
		if owner == p.User {
			return s.quotas.effective(p.Limits, p.Admin).rates(), nil
		}
		u, err := s.store.GetUser(ctx, owner)
		if err != nil {
			return store.Rates{}, err
		}
		return s.rates(u), nil
	}
}

// rateError refuses recurring jobs that would make their owner's busiest
// minute or second pass its limit: a 400 on the schedule, like any rule a
// schedule breaks, not a 429, since the same request is refused again
// however long the client waits, until the jobs or the limit change.
func rateError(e *store.RateError) error {
	return apierr.Invalid("schedule", rateMessage(e))
}

// rateMessage says which limit a *store.RateError passed, where, and what to
// do; a bulk action gives it as a job's skip reason.
func rateMessage(e *store.RateError) string {
	these, them := "this job", "it"
	if e.Jobs > 1 {
		these, them = fmt.Sprintf("these %d jobs", e.Jobs), "them"
	}
	unit := e.Unit()
	return fmt.Sprintf("with %s, the owner's scheduled recurring jobs would fire %d times in their busiest %s (%s UTC), past the limit of %d (occurrences_per_%s): spread the jobs over more %ss, run %s less often, or ask an administrator to raise the limit",
		these, e.Count, unit, e.When(), e.Max, unit, unit, them)
}

func quotaError(e *store.QuotaError) error {
	return apierr.New(http.StatusTooManyRequests, apierr.CodeQuotaExceeded, "",
		fmt.Sprintf("the owner has %s active jobs and may have at most %d; cancel some, or ask an administrator to raise max_active_jobs", e.Count(), e.Max))
}
