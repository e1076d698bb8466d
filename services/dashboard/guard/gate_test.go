package guard_test

import (
	"crypto/sha256"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v5"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"go.uber.org/zap/zaptest"

	"github.com/tockhq/tock/pkg/queue"
	"github.com/tockhq/tock/pkg/testenv"
	"github.com/tockhq/tock/services/dashboard/apierr"
	"github.com/tockhq/tock/services/dashboard/guard"
	"github.com/tockhq/tock/services/dashboard/rate"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const admin = "test-admin-token-0123456789abcdef"

var errUnauthorized = apierr.New(http.StatusUnauthorized, apierr.CodeUnauthorized, "", "a valid bearer token is required")

// bundle is one dashboard's gate, the Redis behind it, the fixed time its
// clock reads, and the tokens the test counts as valid credentials.
type bundle struct {
	gate  *guard.Gate
	rdb   redis.UniversalClient
	deps  guard.Deps
	now   time.Time
	valid map[string]bool
}

// setup builds a gate on a Redis prefix of the test's own, allowing 60
// failures a minute in bursts of 3; opts adjust the Deps.
func setup(t *testing.T, opts ...func(*guard.Deps)) *bundle {
	t.Helper()
	rdb, prefix := testenv.Redis(t)
	b := &bundle{rdb: rdb, now: time.Now().UTC(), valid: map[string]bool{}}
	d := guard.Deps{
		Limiter:           rate.New(rate.Deps{Redis: rdb, Prefix: prefix}),
		Redis:             rdb,
		Prefix:            prefix,
		Logger:            zaptest.NewLogger(t),
		Clock:             func() time.Time { return b.now },
		AdminToken:        admin,
		FailuresPerMinute: 60,
		FailureBurst:      3,
		OnRedisDown:       rate.Allow,
		Minted:            func(token string) bool { return strings.HasPrefix(token, "tock_") },
	}
	for _, o := range opts {
		o(&d)
	}
	b.deps = d
	b.gate = guard.New(d)
	return b
}

// another is a second dashboard beside b's, with a gate of its own (its own
// memory of blocked addresses and good tokens) on the same Redis prefix.
func (b *bundle) another() *bundle {
	b2 := *b
	b2.gate = guard.New(b.deps)
	return &b2
}

// authenticate does what access does with a token from addr: the gate
// first, then the lookup (here: b.valid), and a failure counted. It returns
// the answer's status and Retry-After.
func (b *bundle) authenticate(t *testing.T, addr, token string, edit ...func(*http.Request)) (int, string) {
	t.Helper()
	req := httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/api/v1/me", nil)
	req.RemoteAddr = addr + ":40000"
	for _, e := range edit {
		e(req)
	}
	rec := httptest.NewRecorder()
	c := echo.New().NewContext(req, rec)
	err := b.gate.Admit(c, token)
	if err == nil {
		if token == admin || b.valid[token] {
			b.gate.Passed(sha256.Sum256([]byte(token)))
			return http.StatusOK, ""
		}
		err = b.gate.Failed(c, func() error { return errUnauthorized })
	}
	var ae *apierr.Error
	require.True(t, errors.As(err, &ae), "%v", err)
	return ae.Status, rec.Header().Get("Retry-After")
}

// TestGate lets an address fail authentication a burst of times, then
// answers 429 with Retry-After before any lookup, except for the tokens
// something vouches for, while another address is not affected.
func TestGate(t *testing.T) {
	t.Parallel()
	const attacker, other = "203.0.113.7", "203.0.113.8"

	// block spends addr's burst on b.
	block := func(t *testing.T, b *bundle, addr string) {
		t.Helper()
		for range 3 {
			status, _ := b.authenticate(t, addr, "nope")
			require.Equal(t, http.StatusUnauthorized, status)
		}
		status, retry := b.authenticate(t, addr, "nope")
		require.Equal(t, http.StatusTooManyRequests, status)
		require.NotEmpty(t, retry)
	}

	t.Run("BlocksAnAddressPastItsBurst", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		block(t, b, attacker)
		b.valid["tock_stale"] = true // valid, but neither used nor minted lately
		status, _ := b.authenticate(t, attacker, "tock_stale")
		require.Equal(t, http.StatusTooManyRequests, status, "refused before its lookup")
		status, _ = b.authenticate(t, other, "tock_stale")
		require.Equal(t, http.StatusOK, status, "another address is served")
		status, _ = b.authenticate(t, attacker, "tock_stale")
		require.Equal(t, http.StatusOK, status, "a token that authenticated lately passes: its neighbours keep working")
		status, _ = b.authenticate(t, attacker, "tock_guess")
		require.Equal(t, http.StatusTooManyRequests, status)
		status, _ = b.authenticate(t, attacker, admin)
		require.Equal(t, http.StatusOK, status, "the admin token needs no lookup, and passes")
	})

	// The block in this dashboard's memory ends at its time; the shared
	// bucket (Redis's clock) then decides the next failure.
	t.Run("TheBlockEnds", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		block(t, b, attacker)
		b.valid["tock_stale"] = true
		status, _ := b.authenticate(t, attacker, "tock_stale")
		require.Equal(t, http.StatusTooManyRequests, status)
		b.now = b.now.Add(time.Minute)
		status, _ = b.authenticate(t, attacker, "tock_stale")
		require.Equal(t, http.StatusOK, status, "looked up once the block ended")
	})

	t.Run("IPv6CountsByItsPrefix", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		for _, a := range []string{"[2001:db8:1:2::1]", "[2001:db8:1:2::2]", "[2001:db8:1:2:ffff::9]"} {
			status, _ := b.authenticate(t, a, "nope")
			require.Equal(t, http.StatusUnauthorized, status)
		}
		status, _ := b.authenticate(t, "[2001:db8:1:2::abcd]", "nope")
		require.Equal(t, http.StatusTooManyRequests, status, "rotating through one's own /64 does not escape")
		status, _ = b.authenticate(t, "[2001:db8:1:3::1]", "nope")
		require.Equal(t, http.StatusUnauthorized, status, "another /64 is served")
	})

	// A trusted proxy speaks for its client through X-Forwarded-For; any
	// other peer's is not believed, private or not, so it can neither
	// escape the limit nor have another address blocked.
	t.Run("TrustedProxySpeaksForItsClient", func(t *testing.T) {
		t.Parallel()
		b := setup(t, func(d *guard.Deps) { d.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/24")} })
		block(t, b, attacker)
		b.valid["tock_proxied"] = true
		via := func(peer, xff string) int {
			status, _ := b.authenticate(t, peer, "tock_proxied", func(r *http.Request) { r.Header.Set("X-Forwarded-For", xff) })
			return status
		}
		require.Equal(t, http.StatusTooManyRequests, via("10.0.0.5", attacker), "the trusted proxy's client is blocked")
		require.Equal(t, http.StatusOK, via("10.0.0.5", other), "another client of the proxy is not")
		require.Equal(t, http.StatusOK, via("192.168.1.9", attacker), "an untrusted peer is judged by its own address")
	})

	// A credential minted on one dashboard passes a blocked address on
	// every other, for as long as a success vouches for a token; a guess
	// does not, and a token not shaped like a minted one is not asked about.
	t.Run("MintedCredentialsPassEveryDashboard", func(t *testing.T) {
		t.Parallel()
		served := setup(t)
		minter := served.another()
		block(t, served, attacker)
		key := "tock_minted_a_moment_ago"
		served.valid[key] = true
		minter.gate.Vouch(t.Context(), sha256.Sum256([]byte(key)))
		status, _ := served.authenticate(t, attacker, key)
		require.Equal(t, http.StatusOK, status, "the new key is served from the blocked address")
		status, _ = served.authenticate(t, attacker, "tock_guess")
		require.Equal(t, http.StatusTooManyRequests, status)

		unshaped := "vouched-but-not-shaped-like-a-key"
		served.valid[unshaped] = true
		minter.gate.Vouch(t.Context(), sha256.Sum256([]byte(unshaped)))
		status, _ = served.authenticate(t, attacker, unshaped)
		require.Equal(t, http.StatusTooManyRequests, status, "only tokens shaped like minted ones are asked about")

		ttl, err := served.rdb.PTTL(t.Context(), queue.VouchedKey(served.deps.Prefix, sha256.Sum256([]byte(key)))).Result()
		require.NoError(t, err)
		require.Greater(t, ttl, 9*time.Minute)
		require.LessOrEqual(t, ttl, 10*time.Minute)
	})

	t.Run("NoLimitWithoutARate", func(t *testing.T) {
		t.Parallel()
		b := setup(t, func(d *guard.Deps) { d.FailuresPerMinute = 0 })
		for range 10 {
			status, _ := b.authenticate(t, attacker, "nope")
			require.Equal(t, http.StatusUnauthorized, status)
		}
	})

	t.Run("NoLimitWithoutRedis", func(t *testing.T) {
		t.Parallel()
		b := setup(t, func(d *guard.Deps) { d.Limiter, d.Redis = nil, nil })
		for range 10 {
			status, _ := b.authenticate(t, attacker, "nope")
			require.Equal(t, http.StatusUnauthorized, status)
		}
		b.gate.Vouch(t.Context(), sha256.Sum256([]byte("tock_x"))) // nothing to tell
	})
}

// TestGateWhileRedisIsDown: a failure that cannot be counted is answered as
// it would be by default, or with a 503 under rate.Deny.
func TestGateWhileRedisIsDown(t *testing.T) {
	t.Parallel()
	for policy, want := range map[string]int{rate.Allow: http.StatusUnauthorized, rate.Deny: http.StatusServiceUnavailable} {
		t.Run(policy, func(t *testing.T) {
			t.Parallel()
			dead := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: time.Second})
			t.Cleanup(func() { _ = dead.Close() })
			b := setup(t, func(d *guard.Deps) {
				d.Limiter, d.Redis, d.OnRedisDown = rate.New(rate.Deps{Redis: dead, Prefix: d.Prefix}), dead, policy
			})
			for range 5 {
				status, _ := b.authenticate(t, "203.0.113.7", "nope")
				require.Equal(t, want, status)
			}
		})
	}
}
