// Package api is the dashboard's HTTP JSON API under /api/v1, and the
// browser dashboard's pages: routes, handlers, request decoding, the JSON
// shapes clients see and the one mapping from errors to status codes. It
// builds on access, which decides who a request acts for, and guard, which
// hardens requests before that; api wires both. It holds no state of its
// own, so any number of dashboards can run side by side behind a load
// balancer.
package api

import (
	"context"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v5"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/tockhq/tock/pkg/config"
	"github.com/tockhq/tock/pkg/jobspec"
	"github.com/tockhq/tock/pkg/lifecycle"
	"github.com/tockhq/tock/pkg/metrics"
	"github.com/tockhq/tock/pkg/probe"
	"github.com/tockhq/tock/pkg/queue"
	"github.com/tockhq/tock/pkg/store"
	"github.com/tockhq/tock/services/dashboard/access"
	"github.com/tockhq/tock/services/dashboard/guard"
	"github.com/tockhq/tock/services/dashboard/rate"
)

// AdminID is the bootstrap administrator that the first migration creates and
// that TOCK_ADMIN_TOKEN authenticates as.
var AdminID = store.BootstrapAdmin

// Defaults for the Deps fields left zero.
const (
	DefaultMaxBodyBytes = 1 << 20
	// DefaultMaxBatchBodyBytes holds 10,000 jobs of about 3 KiB each.
	DefaultMaxBatchBodyBytes = 32 << 20
)

// Deps is everything the API needs, built once by the service's run function.
type Deps struct {
	Store *store.Store
	Queue *queue.Queue
	// Redis is the client behind Queue, pinged by /readyz.
	Redis  redis.UniversalClient
	Logger *zap.Logger
	// Clock reads the time; tests inject a fixed one. Nil means time.Now.
	Clock func() time.Time
	// AdminToken is the bearer token of the bootstrap administrator. Empty
	// refuses every request to /api/v1.
	AdminToken string
	// Horizon is the scheduler loader's look-ahead: a job due sooner is put in
	// Redis by the API itself, or it would wait for the next load.
	Horizon time.Duration
	// MisfireThreshold is how late an occurrence may start before its job's
	// misfire policy decides whether it runs, as in the scheduler's loader:
	// loading a recurring job right after an edit judges misfires the same way.
	// Zero means config.DefaultMisfireThreshold.
	MisfireThreshold time.Duration
	// Limits bounds what a job may ask for (payload size).
	Limits jobspec.Limits
	// MaxBodyBytes caps every request body; larger ones get 413.
	MaxBodyBytes int64
	// MaxBatchBodyBytes caps the body of POST /api/v1/jobs:batch instead;
	// zero means DefaultMaxBatchBodyBytes.
	MaxBatchBodyBytes int64
	// Ready reports whether start-up preparation (migrations) is done; until
	// then /readyz is 503 and the API answers 503. Nil means ready.
	Ready probe.Check
	// Quotas are the per-user rate limits and cap; nil means DefaultQuotas.
	Quotas *Quotas
	// TrustedProxies are the proxies (a load balancer) whose
	// X-Forwarded-For names the client, for the limit on failed
	// authentication; none means every peer is the client.
	TrustedProxies []netip.Prefix
	// Metrics counts requests by route, method and code; nil counts nothing.
	Metrics *metrics.API
	// Tracer makes a span per request and per create; nil (tracing off)
	// makes none.
	Tracer trace.Tracer
}

// Server is the dashboard's HTTP API.
type Server struct {
	store   *store.Store
	queue   *queue.Queue
	redis   redis.UniversalClient
	log     *zap.Logger
	clock   func() time.Time
	horizon time.Duration
	misfire time.Duration
	limits  jobspec.Limits
	maxBody int64
	// maxBatchBody caps the bulk create's body.
	maxBatchBody int64
	ready        probe.Check
	quotas       Quotas
	// limiter holds the per-user buckets; nil without Redis.
	limiter *rate.Limiter
	// access authenticates requests, and opens and ends sessions.
	access  *access.Control
	metrics *metrics.API
	tracer  trace.Tracer
	// jobs commits job changes and then tells the due set.
	jobs *lifecycle.Jobs
	// evaluating lets each user compile and walk one schedule at a time.
	evaluating *userGate
	// settling bounds the keys whose settle is retried after an outage.
	settling chan struct{}
	// active estimates owners' active jobs for the cap (activeCounts).
	active *activeCounts
	echo   *echo.Echo
}

// New builds the API on d, filling defaults for the zero fields.
func New(d Deps) *Server {
	s := &Server{
		store:   d.Store,
		queue:   d.Queue,
		redis:   d.Redis,
		log:     d.Logger,
		clock:   d.Clock,
		horizon: d.Horizon,
		misfire: d.MisfireThreshold,
		limits:  d.Limits,
		maxBody: d.MaxBodyBytes,
		ready:   d.Ready,
		metrics: d.Metrics,
		tracer:  d.Tracer,

		evaluating: newUserGate(),
		settling:   make(chan struct{}, maxSettling),
	}
	if s.ready == nil {
		s.ready = func(context.Context) error { return nil }
	}
	if s.log == nil {
		s.log = zap.NewNop()
	}
	if s.clock == nil {
		s.clock = time.Now
	}
	if s.horizon == 0 {
		s.horizon = config.DefaultHorizon
	}
	if s.misfire <= 0 {
		s.misfire = config.DefaultMisfireThreshold
	}
	s.active = newActiveCounts(func(ctx context.Context, owner uuid.UUID) (int, error) {
		return s.store.CountActive(ctx, owner)
	}, s.clock)
	s.jobs = lifecycle.New(s.store, s.queue, s.horizon, s.misfire, s.log.Named("jobs"))
	if s.maxBody <= 0 {
		s.maxBody = DefaultMaxBodyBytes
	}
	s.maxBatchBody = max(d.MaxBatchBodyBytes, s.maxBody)
	if d.MaxBatchBodyBytes <= 0 {
		s.maxBatchBody = max(DefaultMaxBatchBodyBytes, s.maxBody)
	}
	s.quotas = DefaultQuotas
	if d.Quotas != nil {
		s.quotas = *d.Quotas
	}
	// The limits count in Redis, the per-user ones and the per-address
	// limit on failed authentications alike; without Redis (tests of the
	// routes alone) nothing is limited.
	gd := guard.Deps{
		Logger:            s.log,
		Clock:             s.clock,
		AdminToken:        d.AdminToken,
		FailuresPerMinute: s.quotas.AuthFailuresPerMinute,
		FailureBurst:      s.quotas.AuthFailureBurst,
		OnRedisDown:       s.quotas.OnRedisDown,
		TrustedProxies:    d.TrustedProxies,
		Minted:            access.Minted,
	}
	if s.redis != nil && s.queue != nil {
		s.limiter = rate.New(rate.Deps{Redis: s.redis, Prefix: s.queue.Prefix(), Logger: s.log.Named("limits")})
		gd.Limiter, gd.Redis, gd.Prefix = s.limiter, s.redis, s.queue.Prefix()
	}
	s.access = access.New(access.Deps{
		Store:      s.store,
		Gate:       guard.New(gd),
		Logger:     s.log,
		Clock:      s.clock,
		AdminToken: d.AdminToken,
	})
	if s.limits.MaxPayloadBytes <= 0 {
		s.limits.MaxPayloadBytes = jobspec.DefaultLimits.MaxPayloadBytes
	}
	s.echo = s.routes()
	return s
}

// Handler returns the API as an http.Handler, for an http.Server or httptest.
func (s *Server) Handler() http.Handler { return s.echo }

// Stop ends what the server does in the background for the requests it
// answered: the looking for creates whose commit Postgres never answered
// (lifecycle.Jobs.Stop). Call it once every request has ended.
func (s *Server) Stop() { s.jobs.Stop() }

// ClaimAs makes the jobs the server stores claimed carry n, the dashboard's
// process number (lifecycle.Jobs.ClaimAs).
func (s *Server) ClaimAs(n int32) { s.jobs.ClaimAs(n) }

func (s *Server) routes() *echo.Echo {
	e := echo.NewWithConfig(echo.Config{
		Logger:           newSlogLogger(s.log.Named("echo")),
		HTTPErrorHandler: s.handleError,
		// Group middleware (authentication) runs only for routes that exist;
		// an unknown path is a plain 404 with or without a token.
		NoGroupAutoRegister404Routes: true,
	})
	if s.tracer != nil {
		e.Use(s.traceRequests)
	}
	e.Use(s.countRequests)
	e.Use(s.logRequests, s.recoverPanics, s.limitBody)

	e.GET("/", s.index)
	e.GET("/healthz", s.healthz)
	e.GET("/readyz", s.readyz)

	e.GET("/api/v1/openapi.json", s.openapiDoc)
	e.GET("/api/v1/job-types", s.jobTypes)

	v1 := e.Group("/api/v1", s.access.Authenticate, s.whenReady, s.rateLimit, checkQuery)
	v1.POST("/jobs", s.createJob, s.idempotent)
	v1.POST(strings.TrimPrefix(batchRoute, "/api/v1"), s.createBatch, s.idempotent)
	v1.POST(strings.TrimPrefix(bulkRoute, "/api/v1"), s.bulkJobs, s.idempotent)
	v1.GET("/jobs", s.listJobs)
	v1.GET(strings.TrimPrefix(countsRoute, "/api/v1"), s.countJobs)
	v1.GET("/jobs/:id", s.getJob)
	v1.GET("/jobs/by-key/:key", s.getJobByKey)
	v1.PUT("/jobs/by-key/:key", s.putJobByKey, s.idempotent)
	v1.DELETE("/jobs/by-key/:key", s.cancelJobByKey, s.idempotent)
	v1.PATCH("/jobs/:id", s.patchJob, s.idempotent)
	v1.DELETE("/jobs/:id", s.cancelJob, s.idempotent)
	v1.POST("/jobs/:id/pause", s.pauseJob, s.idempotent)
	v1.POST("/jobs/:id/resume", s.resumeJob, s.idempotent)
	v1.POST("/jobs/:id/trigger", s.triggerJob, s.idempotent)
	v1.POST("/jobs/:id/retry", s.retryJob, s.idempotent)
	v1.POST("/jobs/:id/abort", s.abortJob, s.idempotent)
	v1.POST("/jobs/:id/backfill", s.backfillJob, s.idempotent)
	v1.GET("/jobs/:id/backfills", s.listBackfills)
	v1.GET("/jobs/:id/backfills/:backfill", s.getBackfill)
	v1.DELETE("/jobs/:id/backfills/:backfill", s.cancelBackfill, s.idempotent)
	v1.GET("/backfills/:backfill", s.getBackfill)
	v1.DELETE("/backfills/:backfill", s.cancelBackfill, s.idempotent)
	v1.GET("/jobs/:id/next", s.nextRuns)
	v1.GET("/jobs/:id/runs", s.listRuns)
	v1.GET("/runs", s.searchRuns)
	v1.GET("/calendars", s.listCalendars)
	v1.GET("/calendars/:name", s.getCalendar)
	v1.PUT("/calendars/:name", s.putCalendar, s.idempotent)
	v1.DELETE("/calendars/:name", s.deleteCalendar, s.idempotent)
	v1.GET("/flows", s.listFlows)
	v1.GET("/flows/:key", s.getFlow)
	v1.PUT("/flows/:key", s.putFlow, s.idempotent)
	v1.DELETE("/flows/:key", s.deleteFlow, s.idempotent)
	v1.POST("/flows/:key/pause", s.pauseFlow, s.idempotent)
	v1.POST("/flows/:key/resume", s.resumeFlow, s.idempotent)
	v1.GET("/dead-letters", s.listDeadLetters)
	v1.POST(strings.TrimPrefix(deadReplayRoute, "/api/v1"), s.replayDeadLetters, s.idempotent)
	v1.POST(strings.TrimPrefix(deadPurgeRoute, "/api/v1"), s.purgeDeadLetters, s.idempotent)
	v1.GET("/dead-letters/:id", s.getDeadLetter)
	v1.POST("/dead-letters/:id/replay", s.replayDeadLetter, s.idempotent)
	v1.DELETE("/dead-letters/:id", s.purgeDeadLetter, s.idempotent)
	v1.GET(strings.TrimPrefix(runStatsRoute, "/api/v1"), s.runStats)
	v1.POST("/schedules/preview", s.previewSchedule)
	v1.GET("/signing-secret", s.signingSecret)
	v1.POST(strings.TrimPrefix(rotateRoute, "/api/v1"), s.rotateSigningSecret, s.idempotent)

	v1.GET("/me", s.me)
	v1.POST("/users", s.createUser, access.AdminOnly)
	v1.GET("/users", s.listUsers, access.AdminOnly)
	v1.GET("/users/:id", s.getUser)
	v1.PATCH("/users/:id", s.patchUser, access.AdminOnly)
	v1.POST("/users/:id/disable", s.disableUser, access.AdminOnly)
	v1.POST("/users/:id/enable", s.enableUser, access.AdminOnly)
	v1.POST("/users/:id/erase", s.eraseUser, access.AdminOnly)
	v1.GET("/users/:id/jobs", s.userJobs, access.AdminOnly)
	v1.POST("/users/:id/keys", s.createKey)
	v1.GET("/users/:id/keys", s.listKeys)
	v1.DELETE("/keys/:id", s.revokeKey)
	v1.GET("/audit", s.listAudit, access.AdminOnly)
	v1.GET("/system", s.system, access.AdminOnly)

	e.POST("/ui/session", s.signIn)
	e.DELETE("/ui/session", s.signOut)
	e.POST("/ui/session/logout", s.signOut)
	e.GET("/ui/:file", s.asset)
	return e
}
