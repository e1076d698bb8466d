// Package guard hardens the dashboard's requests before anything acts on
// them: it refuses a request whose headers could be read two ways (a
// credential or a body type named twice, an obs-fold line), and it limits,
// per client address, the requests that fail to authenticate, refusing an
// address that keeps failing before any credential lookup. It knows nothing
// of what a credential is worth; access asks it, and api wires it.
package guard

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"net/netip"
	"strconv"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/labstack/echo/v5"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/tockhq/tock/services/dashboard/apierr"
	"github.com/tockhq/tock/services/dashboard/rate"
)

// Deps is what a Gate needs, built once by the API.
type Deps struct {
	// Limiter counts each address's failed authentications in the buckets
	// every dashboard shares; nil (no Redis) limits nothing.
	Limiter *rate.Limiter
	// Redis holds, under Prefix, the credentials minted lately (Vouch), so
	// that every dashboard lets them past a blocked address.
	Redis  redis.UniversalClient
	Prefix string
	// Logger logs the addresses limited; nil logs nothing.
	Logger *zap.Logger
	// Clock reads the time; nil means time.Now.
	Clock func() time.Time
	// AdminToken passes a blocked address without any lookup.
	AdminToken string
	// FailuresPerMinute is the sustained rate, per client address, of
	// requests without valid credentials, and FailureBurst how many may come
	// at once (0: as many as the rate); a rate of 0 limits nothing.
	FailuresPerMinute int
	FailureBurst      int
	// OnRedisDown is what a failure that cannot be counted does: rate.Allow
	// answers it as if counted, rate.Deny answers 503.
	OnRedisDown string
	// TrustedProxies are the proxies (a load balancer) whose
	// X-Forwarded-For names the client; none means every peer is the
	// client.
	TrustedProxies []netip.Prefix
	// Minted reports whether a token is shaped like a credential tock mints
	// (a key, a session id): only those are asked about in Redis. Nil
	// means none is.
	Minted func(token string) bool
}

// Gate is the limit on failed authentications per client address.
type Gate struct {
	limiter *rate.Limiter
	rdb     redis.UniversalClient
	prefix  string
	log     *zap.Logger
	clock   func() time.Time
	token   []byte
	limit   redis_rate.Limit
	policy  string
	minted  func(string) bool

	// blocked are the client addresses refused before any lookup, and
	// clientAddr reads a request's (clientAddrFunc).
	blocked    blockedAddrs
	clientAddr echo.IPExtractor
	// good are the tokens that authenticated lately (Admit).
	good goodTokens
}

// New builds a Gate on d, filling defaults for the zero fields.
func New(d Deps) *Gate {
	g := &Gate{
		limiter:    d.Limiter,
		rdb:        d.Redis,
		prefix:     d.Prefix,
		log:        d.Logger,
		clock:      d.Clock,
		token:      []byte(d.AdminToken),
		policy:     d.OnRedisDown,
		minted:     d.Minted,
		clientAddr: clientAddrFunc(d.TrustedProxies),
	}
	if g.log == nil {
		g.log = zap.NewNop()
	}
	if g.clock == nil {
		g.clock = time.Now
	}
	if g.minted == nil {
		g.minted = func(string) bool { return false }
	}
	burst := d.FailureBurst
	if burst <= 0 {
		burst = d.FailuresPerMinute
	}
	g.limit = redis_rate.Limit{Rate: d.FailuresPerMinute, Burst: burst, Period: time.Minute}
	return g
}

// off reports whether there is no limit to apply.
func (g *Gate) off() bool { return g.limit.Rate <= 0 || g.limiter == nil }

// bucketAuthFailures is the per-address bucket of requests that carried no
// valid credentials.
const bucketAuthFailures = "auth-failures"

// Admit refuses, before any credential is looked up, a request from an
// address that has spent its budget of failed authentications, unless its
// token is one that authenticated lately on this dashboard (Passed), one
// any dashboard minted lately (a key just created, a session just opened:
// one Redis EXISTS, see vouched), or the admin token: the clients that
// share an address with a careless or hostile one (behind a NAT, or a proxy
// not named in TOCK_TRUSTED_PROXIES) keep working, even with a key made a
// moment ago, while guesses, which nothing vouches for, cost no Postgres
// query.
func (g *Gate) Admit(c *echo.Context, token string) error {
	if g.off() {
		return nil
	}
	now := g.clock()
	retry, ok := g.blocked.blocked(addrKey(g.clientAddr(c.Request())), now)
	if !ok {
		return nil
	}
	sum := sha256.Sum256([]byte(token))
	admin := sha256.Sum256(g.token)
	if len(g.token) > 0 && subtle.ConstantTimeCompare(sum[:], admin[:]) == 1 || g.good.has(sum, now) {
		return nil
	}
	if g.vouched(c.Request().Context(), token, sum) {
		return nil
	}
	return tooManyFailures(c, retry)
}

// Failed counts one request without valid credentials against its address
// and answers it: answer's answer, or 429 once the address's budget
// (TOCK_LIMIT_AUTH_FAILURES_PER_MINUTE, with bursts of
// TOCK_LIMIT_AUTH_FAILURE_BURST) is spent, after which the address is
// refused before any lookup (Admit) until the bucket allows one again.
func (g *Gate) Failed(c *echo.Context, answer func() error) error {
	if g.off() {
		return answer()
	}
	addr := addrKey(g.clientAddr(c.Request()))
	res, err := g.limiter.Take(c.Request().Context(), bucketAuthFailures, addr, g.limit, 1)
	if err != nil {
		if derr := g.limiter.Unavailable(bucketAuthFailures, err, g.policy); derr != nil {
			return derr
		}
		return answer()
	}
	if res.Allowed >= 1 {
		return answer()
	}
	retry := max(res.RetryAfter, time.Second)
	now := g.clock()
	g.blocked.block(addr, now, now.Add(retry))
	g.log.Info("auth_failures_limited", zap.String("addr", addr), zap.Duration("retry_after", retry))
	return tooManyFailures(c, retry)
}

// Passed records that a token, by its SHA-256, authenticated: for goodFor
// it passes its address's block (Admit).
func (g *Gate) Passed(sum [32]byte) {
	if g.limiter == nil {
		return
	}
	g.good.add(sum, g.clock())
}

// tooManyFailures is the 429 of an address whose failure budget is spent.
func tooManyFailures(c *echo.Context, retry time.Duration) error {
	secs := int(max(retry, time.Second).Round(time.Second) / time.Second)
	c.Response().Header().Set("Retry-After", strconv.Itoa(secs))
	return apierr.New(http.StatusTooManyRequests, apierr.CodeRateLimited, "",
		"too many requests without valid credentials from your address; retry after "+strconv.Itoa(secs)+"s")
}
