package api

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/labstack/echo/v5"
	"go.uber.org/zap"

	"github.com/tockhq/tock/pkg/queue"
	"github.com/tockhq/tock/services/dashboard/apierr"
	"github.com/tockhq/tock/services/dashboard/rate"
)

// strictHeaders refuses a request that names its credentials or its body's
// type twice. Go's server keeps both values and Header.Get reads the first,
// so "Authorization: <admin token>" followed by a second, different
// Authorization would be served as whichever a proxy in front did not look
// at: tock answers 400 rather than guess.
func strictHeaders(r *http.Request) error {
	for _, name := range []string{"Authorization", "Content-Type"} {
		if len(r.Header.Values(name)) > 1 {
			return apierr.New(http.StatusBadRequest, apierr.CodeInvalid, name, "the "+name+" header appears more than once; send it once")
		}
	}
	return nil
}

// clientAddrFunc returns how the address a request comes from is read, for
// the limit on failed authentication: the peer's address, or, when the peer
// is one of the trusted proxies (TOCK_TRUSTED_PROXIES, such as the load
// balancer's subnets), the last address in X-Forwarded-For that is not a
// trusted proxy. No range is trusted by default, not even loopback or
// private ones: a client inside the network could otherwise name any
// address, to escape the limit or to have another address blocked.
func clientAddrFunc(trusted []netip.Prefix) echo.IPExtractor {
	if len(trusted) == 0 {
		return echo.ExtractIPDirect()
	}
	opts := []echo.TrustOption{echo.TrustLoopback(false), echo.TrustLinkLocal(false), echo.TrustPrivateNet(false)}
	for _, p := range trusted {
		p = p.Masked()
		opts = append(opts, echo.TrustIPRange(&net.IPNet{IP: net.IP(p.Addr().AsSlice()), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}))
	}
	return echo.ExtractIPFromXFFHeader(opts...)
}

// bucketAuthFailures is the per-address bucket of requests that carried no
// valid credentials.
const bucketAuthFailures = "auth-failures"

// blockedAddrs remembers, in this process, the client addresses whose
// failure budget is spent and until when, so that their next requests are
// refused before any Postgres lookup, and without a Redis call unless the
// token is shaped like a key or a session id (authGate). Every dashboard
// learns it from the shared bucket on the first failure it sees.
type blockedAddrs struct {
	mu    sync.Mutex
	until map[string]time.Time
}

// maxBlocked bounds the memory of blockedAddrs: beyond it, the expired
// entries go, and if all are live the new address is not remembered (its
// failures still meet the shared bucket).
const maxBlocked = 100_000

func (b *blockedAddrs) blocked(addr string, now time.Time) (time.Duration, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	t, ok := b.until[addr]
	if !ok {
		return 0, false
	}
	if !now.Before(t) {
		delete(b.until, addr)
		return 0, false
	}
	return t.Sub(now), true
}

func (b *blockedAddrs) block(addr string, now, until time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.until == nil {
		b.until = map[string]time.Time{}
	}
	if len(b.until) >= maxBlocked {
		for a, t := range b.until {
			if !now.Before(t) {
				delete(b.until, a)
			}
		}
		if len(b.until) >= maxBlocked {
			return
		}
	}
	b.until[addr] = until
}

// tooManyFailures is the 429 of an address whose failure budget is spent.
func tooManyFailures(c *echo.Context, retry time.Duration) error {
	secs := int(max(retry, time.Second).Round(time.Second) / time.Second)
	c.Response().Header().Set("Retry-After", strconv.Itoa(secs))
	return apierr.New(http.StatusTooManyRequests, apierr.CodeRateLimited, "",
		"too many requests without valid credentials from your address; retry after "+strconv.Itoa(secs)+"s")
}

// authGate refuses, before any credential is looked up, a request from an
// address that has spent its budget of failed authentications, unless its
// token is one that authenticated lately on this dashboard, one any
// dashboard minted lately (a key just created, a session just opened: one
// Redis EXISTS, see limiter.vouched), or the admin token: the clients that
// share an address with a careless or hostile one (behind a NAT, or a proxy
// not named in TOCK_TRUSTED_PROXIES) keep working, even with a key made a
// moment ago, while guesses, which nothing vouches for, cost no Postgres
// query.
func (s *Server) authGate(c *echo.Context, token string) error {
	if s.quotas.AuthFailuresPerMinute <= 0 || s.limiter == nil {
		return nil
	}
	now := s.clock()
	retry, ok := s.limiter.blocked.blocked(addrKey(s.limiter.clientAddr(c.Request())), now)
	if !ok {
		return nil
	}
	sum := sha256.Sum256([]byte(token))
	admin := sha256.Sum256(s.token)
	if len(s.token) > 0 && subtle.ConstantTimeCompare(sum[:], admin[:]) == 1 || s.limiter.good.has(sum, now) {
		return nil
	}
	if s.limiter.vouched(c.Request().Context(), token, sum) {
		return nil
	}
	return tooManyFailures(c, retry)
}

// vouch records that a credential was minted a moment ago (a key created, a
// session opened), by the SHA-256 of its token: in this process's good
// tokens, and in Redis for goodFor, so that every other dashboard lets it
// past a blocked address too before it has seen it succeed. Failing to tell
// Redis costs only that: its client may wait out a block elsewhere.
func (l *limiter) vouch(ctx context.Context, sum [32]byte, now time.Time) {
	if l == nil {
		return
	}
	l.good.add(sum, now)
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if err := l.rdb.Set(ctx, queue.VouchedKey(l.prefix, sum), 1, goodFor).Err(); err != nil {
		l.log.Warn("vouch_failed", zap.Error(err))
	}
}

// vouched asks Redis whether any dashboard minted the token lately (vouch).
// Only a token shaped like a key or a session id is asked about, with one
// EXISTS and no Postgres query; an error counts as no, leaving the block as
// it was before keys were shared.
func (l *limiter) vouched(ctx context.Context, token string, sum [32]byte) bool {
	if _, ok := splitKey(token); !ok && !sessionShaped(token) {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	n, err := l.rdb.Exists(ctx, queue.VouchedKey(l.prefix, sum)).Result()
	if err != nil {
		_ = l.buckets.Unavailable(bucketVouched, err, rate.Allow)
		return false
	}
	return n == 1
}

// bucketVouched names the credentials vouch records, in the warning logged
// while Redis cannot be asked about them.
const bucketVouched = "vouched"

// goodTokens remembers, by SHA-256, the tokens that authenticated within
// goodFor, or were minted here within it (limiter.vouch), so that a blocked
// address's known clients still get through.
type goodTokens struct {
	mu   sync.Mutex
	seen map[[32]byte]time.Time
}

// goodFor is how long a success, or a minting, vouches for a token (in this
// process's memory, and in Redis for a minting), and maxGood bounds the
// memory (beyond it, stale entries go; if none is stale, the new one is not
// kept and its client merely waits out a block like the rest).
const (
	goodFor = 10 * time.Minute
	maxGood = 100_000
)

func (g *goodTokens) add(sum [32]byte, now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.seen == nil {
		g.seen = map[[32]byte]time.Time{}
	}
	if _, ok := g.seen[sum]; !ok && len(g.seen) >= maxGood {
		for k, t := range g.seen {
			if now.Sub(t) >= goodFor {
				delete(g.seen, k)
			}
		}
		if len(g.seen) >= maxGood {
			return
		}
	}
	g.seen[sum] = now
}

func (g *goodTokens) has(sum [32]byte, now time.Time) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	t, ok := g.seen[sum]
	return ok && now.Sub(t) < goodFor
}

// authFailed counts one request without valid credentials against its
// address and answers it: 401, or 429 once the address's budget
// (TOCK_LIMIT_AUTH_FAILURES_PER_MINUTE, with bursts of
// TOCK_LIMIT_AUTH_FAILURE_BURST) is spent, after which the address is
// refused before any lookup until the bucket allows one again.
func (s *Server) authFailed(c *echo.Context, answer func() error) error {
	q := s.quotas
	if q.AuthFailuresPerMinute <= 0 || s.limiter == nil {
		return answer()
	}
	addr := addrKey(s.limiter.clientAddr(c.Request()))
	burst := q.AuthFailureBurst
	if burst <= 0 {
		burst = q.AuthFailuresPerMinute
	}
	limit := redis_rate.Limit{Rate: q.AuthFailuresPerMinute, Burst: burst, Period: time.Minute}
	res, err := s.limiter.buckets.Take(c.Request().Context(), bucketAuthFailures, addr, limit, 1)
	if err != nil {
		if derr := s.limiter.buckets.Unavailable(bucketAuthFailures, err, q.OnRedisDown); derr != nil {
			return derr
		}
		return answer()
	}
	if res.Allowed >= 1 {
		return answer()
	}
	retry := max(res.RetryAfter, time.Second)
	now := s.clock()
	s.limiter.blocked.block(addr, now, now.Add(retry))
	s.log.Info("auth_failures_limited", zap.String("addr", addr), zap.Duration("retry_after", retry))
	return tooManyFailures(c, retry)
}

// addrKey is the bucket a client address counts in: an IPv4 address alone,
// an IPv6 address by its /64, which one subscriber usually holds whole (a
// limit per IPv6 address would let one client rotate through 2^64 of them).
func addrKey(addr string) string {
	a, err := netip.ParseAddr(addr)
	if err != nil || !a.Is6() || a.Is4In6() {
		if err == nil {
			return a.Unmap().String()
		}
		return addr
	}
	p, _ := a.WithZone("").Prefix(64)
	return p.String()
}
