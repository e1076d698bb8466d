package api_test

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/queue"
	"github.com/tockhq/tock/pkg/store"
	"github.com/tockhq/tock/services/dashboard/api"
	"github.com/tockhq/tock/services/dashboard/apierr"
	"github.com/tockhq/tock/services/dashboard/rate"
)

// TestStrictHeaders refuses a request that names its credentials or its
// body's type twice, whatever the order, and changes nothing.
func TestStrictHeaders(t *testing.T) {
	t.Parallel()
	b := setup(t)
	send := func(headers [][2]string) *httptest.ResponseRecorder {
		req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/api/v1/jobs",
			strings.NewReader(`{"name":"x","type":"ping","delay":"1h","payload":{"url":"https://example.com/"}}`))
		for _, h := range headers {
			req.Header.Add(h[0], h[1])
		}
		rec := httptest.NewRecorder()
		b.h.ServeHTTP(rec, req)
		return rec
	}
	json := [2]string{"Content-Type", "application/json"}
	admin := [2]string{"Authorization", "Bearer " + token}
	bad := [2]string{"Authorization", "Bearer tock_aaaaaaaaaaaaa_bad"}
	for name, headers := range map[string][][2]string{
		"AuthorizationTwiceAdminFirst":  {admin, bad, json},
		"AuthorizationTwiceAdminSecond": {bad, admin, json},
		"AuthorizationTwiceTheSame":     {admin, admin, json},
		"ContentTypeTwice":              {admin, json, {"Content-Type", "text/plain"}},
	} {
		t.Run(name, func(t *testing.T) {
			rec := send(headers)
			e := requireError(t, rec, http.StatusBadRequest, apierr.CodeInvalid)
			require.Contains(t, []string{"Authorization", "Content-Type"}, e.Field)
			require.Contains(t, e.Message, "more than once")
		})
	}
	list := decode[api.JobList](t, b.do(t, http.MethodGet, "/api/v1/jobs", nil))
	require.Empty(t, list.Jobs, "no refused request created a job")
	require.Equal(t, http.StatusCreated, send([][2]string{admin, json}).Code, "once each is served")
}

// TestAuthFailuresPerAddress lets an address fail authentication a burst of
// times, then answers 429 with Retry-After before any credential lookup,
// even for a good key nothing vouches for yet, while another address is not
// affected.
func TestAuthFailuresPerAddress(t *testing.T) {
	t.Parallel()
	q := api.DefaultQuotas
	q.AuthFailuresPerMinute, q.AuthFailureBurst = 60, 3
	b := setup(t, func(d *api.Deps) {
		d.Quotas = &q
		d.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/24")}
	})
	from := func(addr, auth string) *httptest.ResponseRecorder {
		req := httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/api/v1/me", nil)
		req.RemoteAddr = addr + ":40000"
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		rec := httptest.NewRecorder()
		b.h.ServeHTTP(rec, req)
		return rec
	}
	const attacker, other = "203.0.113.7", "203.0.113.8"
	for _, auth := range []string{"", "Bearer tock_aaaaaaaaaaaaa_wrong", "Basic eDp5"} {
		requireError(t, from(attacker, auth), http.StatusUnauthorized, apierr.CodeUnauthorized)
	}
	rec := from(attacker, "Bearer tock_aaaaaaaaaaaaa_wrong")
	requireError(t, rec, http.StatusTooManyRequests, apierr.CodeRateLimited)
	require.NotEmpty(t, rec.Header().Get("Retry-After"))
	neighbour := b.user(t, "behind-the-same-nat", "user", nil)
	stale := "Bearer " + b.staleKey(t, neighbour.id) // neither used nor minted lately
	requireError(t, from(attacker, stale), http.StatusTooManyRequests, apierr.CodeRateLimited)
	require.Equal(t, http.StatusOK, from(attacker, "Bearer "+token).Code, "the admin token needs no lookup, and passes")
	require.Equal(t, http.StatusOK, from(attacker, neighbour.auth()).Code, "a key minted a moment ago passes")

	require.Equal(t, http.StatusOK, from(other, stale).Code, "another address is served")
	require.Equal(t, http.StatusOK, from(attacker, stale).Code,
		"a key that authenticated lately passes a blocked address: its neighbours keep working")
	requireError(t, from(attacker, "Bearer tock_bbbbbbbbbbbbb_guess"), http.StatusTooManyRequests, apierr.CodeRateLimited)

	// IPv6 counts by /64: rotating through one's own prefix does not escape.
	for _, a := range []string{"[2001:db8:1:2::1]", "[2001:db8:1:2::2]", "[2001:db8:1:2:ffff::9]"} {
		requireError(t, from(a, "Bearer nope"), http.StatusUnauthorized, apierr.CodeUnauthorized)
	}
	requireError(t, from("[2001:db8:1:2::abcd]", "Bearer nope"), http.StatusTooManyRequests, apierr.CodeRateLimited)
	require.Equal(t, http.StatusOK, from("[2001:db8:1:3::1]", "Bearer "+token).Code, "another /64 is served")
	requireError(t, from(other, "Bearer nope"), http.StatusUnauthorized, apierr.CodeUnauthorized)

	// A trusted proxy speaks for its client through X-Forwarded-For; any
	// other peer's X-Forwarded-For is not believed, private or not, so it
	// can neither escape the limit nor have another address blocked.
	proxied := "Bearer " + b.staleKey(t, b.user(t, "proxied", "user", nil).id)
	via := func(peer, xff string) int {
		req := httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/api/v1/me", nil)
		req.RemoteAddr = peer + ":40000"
		req.Header.Set("X-Forwarded-For", xff)
		req.Header.Set("Authorization", proxied)
		rec := httptest.NewRecorder()
		b.h.ServeHTTP(rec, req)
		return rec.Code
	}
	require.Equal(t, http.StatusTooManyRequests, via("10.0.0.5", attacker), "the trusted proxy's client is blocked")
	require.Equal(t, http.StatusOK, via("10.0.0.5", other), "another client of the proxy is not")
	require.Equal(t, http.StatusOK, via("192.168.1.9", attacker), "an untrusted peer is judged by its own address")
}

// TestLimitsWhileRedisIsDown: by default a request whose limits cannot be
// checked is served; with TOCK_LIMITS_ON_REDIS_DOWN=deny it is a 503.
func TestLimitsWhileRedisIsDown(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		policy string
		want   int
	}{{rate.Allow, http.StatusOK}, {rate.Deny, http.StatusServiceUnavailable}} {
		t.Run(tt.policy, func(t *testing.T) {
			t.Parallel()
			q := api.DefaultQuotas
			q.OnRedisDown = tt.policy
			b := setup(t, func(d *api.Deps) { d.Quotas = &q; d.Redis = deadRedis(t) })
			u := b.user(t, "limited", "user", nil)
			for range 3 {
				rec := b.as(t, u, http.MethodGet, "/api/v1/me", nil)
				require.Equal(t, tt.want, rec.Code, rec.Body.String())
			}
			requireError(t, b.request(t, http.MethodGet, "/api/v1/me", nil, "Bearer nope"), map[string]int{
				rate.Allow: http.StatusUnauthorized, rate.Deny: http.StatusServiceUnavailable}[tt.policy], map[string]string{
				rate.Allow: apierr.CodeUnauthorized, rate.Deny: apierr.CodeUnavailable}[tt.policy])
		})
	}
}

// TestAuthLimitBeforeAnyLookup: once an address has spent its failures, a
// key-shaped token from it is refused without a Postgres query. The store
// here answers nothing (every query fails, 503), so a 429 rather than a 503
// shows that no query was made, and a fresh address's 503 that one would be.
func TestAuthLimitBeforeAnyLookup(t *testing.T) {
	t.Parallel()
	q := api.DefaultQuotas
	q.AuthFailuresPerMinute, q.AuthFailureBurst = 60, 2
	b := setup(t, func(d *api.Deps) { d.Quotas = &q; d.Store = deadStore(t) })
	from := func(addr, auth string) *httptest.ResponseRecorder {
		req := httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/api/v1/jobs", nil)
		req.RemoteAddr = addr + ":40000"
		req.Header.Set("Authorization", auth)
		rec := httptest.NewRecorder()
		b.h.ServeHTTP(rec, req)
		return rec
	}
	const keyShaped = "Bearer tock_aaaaaaaaaaaaa_guess"
	requireError(t, from("198.51.100.1", keyShaped), http.StatusServiceUnavailable, apierr.CodeUnavailable)
	for range 2 {
		requireError(t, from("198.51.100.2", "Bearer not-a-key"), http.StatusUnauthorized, apierr.CodeUnauthorized)
	}
	requireError(t, from("198.51.100.2", "Bearer not-a-key"), http.StatusTooManyRequests, apierr.CodeRateLimited)
	for range 5 {
		requireError(t, from("198.51.100.2", keyShaped), http.StatusTooManyRequests, apierr.CodeRateLimited)
	}
}

// staleKey stores a key of user straight in Postgres, as one minted long
// ago: no dashboard has seen it succeed or minted it lately.
func (b *bundle) staleKey(t *testing.T, user uuid.UUID) string {
	t.Helper()
	var p [8]byte
	var secret [32]byte
	_, _ = rand.Read(p[:])
	_, _ = rand.Read(secret[:])
	prefix := strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(p[:]))
	key := "tock_" + prefix + "_" + base64.RawURLEncoding.EncodeToString(secret[:])
	sum := sha256.Sum256([]byte(key))
	_, err := b.store.CreateKey(t.Context(), &store.Key{ID: job.NewID(), UserID: user, Name: "old", Prefix: prefix,
		CreatedAt: b.now.Add(-24 * time.Hour)}, sum[:], 0, store.Audit{Actor: store.BootstrapAdmin, Action: store.ActionKeyCreate})
	require.NoError(t, err)
	return key
}

// TestMintedCredentialsPassABlockedAddress: once bad tokens from an address
// have spent its budget, a key minted a moment ago on another dashboard, and
// a session opened there, are served from that address by every dashboard,
// while a guess is still refused with 429 before any Postgres query. The
// dashboard called blind has a store that answers nothing (every query
// fails, 503): there, a 503 shows that the gate let a token through to its
// lookup, and a 429 that no query was made.
func TestMintedCredentialsPassABlockedAddress(t *testing.T) {
	t.Parallel()
	q := api.DefaultQuotas
	q.AuthFailuresPerMinute, q.AuthFailureBurst = 1, 1 // no token back within the test
	served := setup(t, func(d *api.Deps) { d.Quotas = &q })
	minter := served.another(t)
	blind := served.another(t, func(d *api.Deps) { d.Store = deadStore(t) })
	const addr = "203.0.113.9"
	from := func(b *bundle, auth, cookie string) *httptest.ResponseRecorder {
		req := httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/api/v1/me", nil)
		req.RemoteAddr = addr + ":40000"
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		if cookie != "" {
			req.AddCookie(&http.Cookie{Name: "tock_session", Value: cookie})
		}
		rec := httptest.NewRecorder()
		b.h.ServeHTTP(rec, req)
		return rec
	}
	requireError(t, from(served, "Bearer nope", ""), http.StatusUnauthorized, apierr.CodeUnauthorized)
	requireError(t, from(served, "Bearer nope", ""), http.StatusTooManyRequests, apierr.CodeRateLimited)
	requireError(t, from(blind, "Bearer nope", ""), http.StatusTooManyRequests, apierr.CodeRateLimited)

	// Minted on another dashboard, from another address.
	p := minter.user(t, "ci-runner", "user", nil)
	session := minter.signIn(t, p.key)
	var random [32]byte
	_, _ = rand.Read(random[:])
	guessKey := "Bearer tock_bbbbbbbbbbbbb_" + base64.RawURLEncoding.EncodeToString(random[:])
	guessSession := "tses_" + base64.RawURLEncoding.EncodeToString(random[:])

	rec := from(served, p.auth(), "")
	require.Equal(t, http.StatusOK, rec.Code, "the new key is served from the blocked address: %s", rec.Body.String())
	require.Equal(t, p.id, decode[api.User](t, rec).ID)
	rec = from(served, "", session)
	require.Equal(t, http.StatusOK, rec.Code, "and so is the new session: %s", rec.Body.String())

	requireError(t, from(blind, p.auth(), ""), http.StatusServiceUnavailable, apierr.CodeUnavailable)
	requireError(t, from(blind, "", session), http.StatusServiceUnavailable, apierr.CodeUnavailable)
	for range 3 {
		requireError(t, from(blind, guessKey, ""), http.StatusTooManyRequests, apierr.CodeRateLimited)
		requireError(t, from(blind, "", guessSession), http.StatusTooManyRequests, apierr.CodeRateLimited)
		requireError(t, from(served, guessKey, ""), http.StatusTooManyRequests, apierr.CodeRateLimited)
	}

	// Redis forgets a minting after as long as a success vouches for a token.
	ttl, err := served.rdb.PTTL(t.Context(), queue.VouchedKey(served.keys.Prefix, sha256.Sum256([]byte(p.key)))).Result()
	require.NoError(t, err)
	require.Greater(t, ttl, 9*time.Minute)
	require.LessOrEqual(t, ttl, 10*time.Minute)
}
