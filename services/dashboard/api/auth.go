package api

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base32"
	"encoding/base64"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v5"
	"go.uber.org/zap"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/store"
	"github.com/tockhq/tock/services/dashboard/apierr"
	"github.com/tockhq/tock/services/dashboard/guard"
)

// principal is who a request acts for.
type principal struct {
	user  uuid.UUID
	admin bool
	// limits are the caller's own overrides of the global limits.
	limits store.Limits
	// scopes are what the credential may do (the admin token: everything),
	// and expires when it stops (zero: never).
	scopes  scopeSet
	expires time.Time
	// key is the API key the request authenticated with; uuid.Nil for the
	// admin token. A session opened with a key acts through it.
	key uuid.UUID
}

// scope is the owner to filter queries by: an administrator sees every owner.
func (p principal) scope() uuid.UUID {
	if p.admin {
		return store.AnyOwner
	}
	return p.user
}

// audit is the audit context of a change the caller makes.
func (p principal) audit(action string) store.Audit {
	return store.Audit{Actor: p.user, Action: action}
}

const principalKey = "tock.principal"

func caller(c *echo.Context) principal {
	p, _ := c.Get(principalKey).(principal)
	return p
}

// An API key reads tock_<prefix>_<secret>: the prefix (13 characters of
// lower-case base32) is public and finds the key's row; the secret is 32
// random bytes, base64url. Only the SHA-256 of the whole key is stored: the
// key is random enough that a slow hash would add nothing but latency.
const keyScheme = "tock_"

var prefixEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// newKey returns a fresh key, its prefix and its hash.
func newKey() (key, prefix string, hash []byte) {
	var p [8]byte
	var secret [32]byte
	_, _ = rand.Read(p[:]) // crypto/rand.Read never fails
	_, _ = rand.Read(secret[:])
	prefix = strings.ToLower(prefixEncoding.EncodeToString(p[:]))
	key = keyScheme + prefix + "_" + base64.RawURLEncoding.EncodeToString(secret[:])
	sum := sha256.Sum256([]byte(key))
	return key, prefix, sum[:]
}

// splitKey returns the prefix of a string shaped like a key.
func splitKey(token string) (prefix string, ok bool) {
	rest, ok := strings.CutPrefix(token, keyScheme)
	if !ok {
		return "", false
	}
	prefix, secret, ok := strings.Cut(rest, "_")
	if !ok || len(prefix) != 13 || secret == "" {
		return "", false
	}
	// Only base32's lower-case alphabet: anything else names no key, and
	// must not reach Postgres (a byte that is not UTF-8 would fail the query).
	for i := 0; i < len(prefix); i++ {
		if c := prefix[i]; (c < 'a' || c > 'z') && (c < '2' || c > '7') {
			return "", false
		}
	}
	return prefix, true
}

// authenticate admits a request carrying "Authorization: Bearer <token>"
// where the token is the bootstrap admin token or a live API key of an
// enabled user, or, from the browser dashboard, the id of a live session in
// the session cookie (see session.go), which acts as the key or token it was
// opened with. Every failure looks the same to the client: 401, saying
// nothing of which check failed; an address that keeps failing gets 429
// before any lookup (guard.Gate). A request naming its credentials twice is
// a 400 (guard.StrictHeaders).
func (s *Server) authenticate(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c *echo.Context) error {
		r := c.Request()
		if err := guard.StrictHeaders(r); err != nil {
			return err
		}
		refuse := func() error { return s.gate.Failed(c, func() error { return unauthorized(c) }) }
		var token string
		cookie := false
		if h := r.Header.Get("Authorization"); h != "" {
			scheme, t, _ := strings.Cut(h, " ")
			if !strings.EqualFold(scheme, "Bearer") {
				return refuse()
			}
			token = strings.TrimSpace(t)
		} else if t, ok := sessionToken(r); ok {
			// A cookie rides along with any request the browser makes, a
			// cross-site form's included: a change must also carry a header
			// that only the dashboard's own scripts can set.
			if !safeMethod(r.Method) && r.Header.Get(csrfHeader) != "1" {
				return refuse()
			}
			token, cookie = t, true
		}
		if err := s.gate.Admit(c, token); err != nil {
			return err
		}
		lookup := s.credential
		if cookie {
			lookup = s.sessionPrincipal
		}
		p, err := lookup(r.Context(), token)
		if err != nil {
			return err
		}
		if p == nil {
			return refuse()
		}
		if err := requireScope(c, *p); err != nil {
			return err
		}
		c.Set(principalKey, *p)
		return next(c)
	}
}

// credential is the one check of a token, shared by the API and the sign-in
// of the browser dashboard: nil if it is neither the admin token nor a live
// key of an enabled user. Every comparison is of SHA-256 digests in
// constant time, so that neither a token's content nor its length leaks
// through timing.
func (s *Server) credential(ctx context.Context, token string) (*principal, error) {
	if token == "" {
		return nil, nil
	}
	got := sha256.Sum256([]byte(token))
	admin := sha256.Sum256(s.token)
	if len(s.token) > 0 && subtle.ConstantTimeCompare(got[:], admin[:]) == 1 {
		return adminPrincipal(), nil
	}
	p, err := s.keyPrincipal(ctx, token, got[:])
	if p != nil {
		s.gate.Passed(got)
	}
	return p, err
}

// adminPrincipal is who the admin token acts as.
func adminPrincipal() *principal {
	return &principal{user: store.BootstrapAdmin, admin: true, scopes: roleScopes(store.RoleAdmin)}
}

// keyPrincipal authenticates an API key: nil if it is not one, unknown,
// revoked, expired, or its user is disabled.
func (s *Server) keyPrincipal(ctx context.Context, token string, hash []byte) (*principal, error) {
	prefix, ok := splitKey(token)
	if !ok {
		return nil, nil
	}
	cred, err := s.store.Credential(ctx, prefix)
	if errors.Is(err, job.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, apierr.Dependency(err)
	}
	if subtle.ConstantTimeCompare(hash, cred.Hash) != 1 {
		return nil, nil
	}
	return s.keyHolder(ctx, &cred.Key, &cred.User), nil
}

// keyHolder is who a found key acts as, whether it came as a bearer token
// or through the session it opened: nil if it is revoked or expired or its
// user is disabled, so that these end a session exactly as they end the key.
func (s *Server) keyHolder(ctx context.Context, k *store.Key, u *store.User) *principal {
	now := s.clock()
	if !k.Live(now) || !u.DisabledAt.IsZero() {
		return nil
	}
	if now.Sub(k.LastUsedAt) >= store.KeyTouchInterval {
		if err := s.store.TouchKey(ctx, k.ID, now); err != nil {
			// The key is valid; a missed last_used_at refresh is not worth a failed request.
			s.log.Warn("touch_key_failed", zap.Stringer("key_id", k.ID), zap.Error(err))
		}
	}
	scopes := keyScopes(k, u.Role)
	return &principal{user: u.ID, admin: scopes&canAdmin != 0, limits: u.Limits, scopes: scopes,
		expires: k.ExpiresAt, key: k.ID}
}

// sessionPrincipal authenticates a session id from the cookie: nil if it is
// not one, unknown or expired, or if what opened it no longer authenticates
// (its key revoked or expired, its user disabled, or, for a session of the
// admin token, another TOCK_ADMIN_TOKEN now). The lookup is one round trip,
// by the SHA-256 of the id.
func (s *Server) sessionPrincipal(ctx context.Context, id string) (*principal, error) {
	if !sessionShaped(id) {
		return nil, nil
	}
	sum := sha256.Sum256([]byte(id))
	sc, err := s.store.SessionCredential(ctx, sum[:], s.clock())
	if errors.Is(err, job.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, apierr.Dependency(err)
	}
	var p *principal
	switch {
	case sc.Key != nil:
		p = s.keyHolder(ctx, sc.Key, &sc.User)
	case len(s.token) > 0 && sc.User.ID == store.BootstrapAdmin && hmac.Equal(adminBinding(s.token, id), sc.Session.AdminBinding):
		p = adminPrincipal()
	}
	if p != nil {
		s.gate.Passed(sum)
	}
	return p, nil
}

func unauthorized(c *echo.Context) error {
	c.Response().Header().Set("WWW-Authenticate", `Bearer realm="tock"`)
	return errUnauthorized
}

// adminOnly refuses a route to callers who are not administrators.
func adminOnly(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c *echo.Context) error {
		if !caller(c).admin {
			return errForbidden
		}
		return next(c)
	}
}

// selfOrAdmin lets an administrator act on any user, and a user on
// themself only. Another user is a 403: users are not secret from each
// other's existence the way jobs are, but they are not theirs to manage.
func selfOrAdmin(c *echo.Context, user uuid.UUID) error {
	if p := caller(c); p.admin || p.user == user {
		return nil
	}
	return errForbidden
}

var errForbidden = apierr.New(http.StatusForbidden, apierr.CodeForbidden, "", "this needs an administrator")

// minted reports whether a token is shaped like a credential tock mints (a
// key, a session id): past a blocked address, only those are worth asking
// Redis about (guard.Deps.Minted).
func minted(token string) bool {
	_, ok := splitKey(token)
	return ok || sessionShaped(token)
}
