package access

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v5"

	"github.com/tockhq/tock/pkg/store"
	"github.com/tockhq/tock/services/dashboard/apierr"
	"github.com/tockhq/tock/services/dashboard/guard"
)

// The browser dashboard's session is a random id in a cookie the page's
// scripts cannot read (HttpOnly), that no other site's request carries
// (SameSite=Strict), sent only over TLS when the dashboard is reached over
// TLS. The cookie holds the id, never the key it was opened with: Postgres
// keeps only the id's SHA-256 (store.Session), so signing out ends the
// session for good, and a cookie that leaks gives a session that ends, not
// the key. The session acts through its key, checked on every request:
// revoking the key, its expiry or disabling its user ends the session on the
// next request, as it does for the API.
const (
	sessionCookie = "tock_session"
	// sessionScheme starts every session id, so that one is told from a
	// key at a glance (and by secret scanners).
	sessionScheme = "tses_"
	// csrfHeader must be "1" on a change authenticated by the cookie: a
	// cross-site form cannot set a header, and a cross-site script cannot
	// send one without a CORS preflight the dashboard never grants.
	csrfHeader = "X-Tock-CSRF"
	// sessionAge bounds a session even if the browser is never closed.
	sessionAge = 12 * time.Hour
)

// newSessionID returns a fresh session id, tses_ and 32 random bytes in
// base64url, and its SHA-256. As for a key, the id is random enough that a
// slow hash would add nothing but latency.
func newSessionID() (string, [32]byte) {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	id := sessionScheme + base64.RawURLEncoding.EncodeToString(b[:])
	return id, sha256.Sum256([]byte(id))
}

// sessionIDLen is the length of a session id: the scheme and 43 characters.
var sessionIDLen = len(sessionScheme) + base64.RawURLEncoding.EncodedLen(32)

// sessionShaped reports whether a cookie's value could be a session id;
// anything else (a key, as a cookie of an earlier release held) is refused
// without a lookup.
func sessionShaped(v string) bool {
	rest, ok := strings.CutPrefix(v, sessionScheme)
	if !ok || len(v) != sessionIDLen {
		return false
	}
	for i := 0; i < len(rest); i++ {
		if c := rest[i]; (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (c < '0' || c > '9') && c != '-' && c != '_' {
			return false
		}
	}
	return true
}

// adminBinding ties a session opened with the admin token to that token:
// the HMAC-SHA256 of the session id under the token. Stored instead of a
// key, it no longer matches once TOCK_ADMIN_TOKEN changes, which ends those
// sessions; and since the id it covers is not stored, the table alone
// offers nothing to guess the token against.
func adminBinding(token []byte, id string) []byte {
	m := hmac.New(sha256.New, token)
	m.Write([]byte(id))
	return m.Sum(nil)
}

// sessionToken is the value of the session cookie, if any.
func sessionToken(r *http.Request) (string, bool) {
	c, err := r.Cookie(sessionCookie)
	if err != nil || c.Value == "" {
		return "", false
	}
	return c.Value, true
}

func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// overTLS reports whether the browser reached us over TLS, directly or
// through a load balancer that terminates it.
func overTLS(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

// sameOrigin refuses a sign-in posted from another site, which would sign
// the browser in as someone else (login CSRF). Browsers send Origin on every
// POST; a client that sends none is not a browser and not at risk.
func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	u, err := url.Parse(o)
	return err == nil && u.Host == r.Host
}

// CheckSignIn refuses a sign-in before its body is read: a 403 when it is
// posted from another site (sameOrigin), a 400 when it names its
// credentials or its body's type twice (guard.StrictHeaders).
func CheckSignIn(r *http.Request) error {
	if !sameOrigin(r) {
		return ErrForbidden
	}
	return guard.StrictHeaders(r)
}

// SignIn checks a key posted to sign in exactly as the API checks a bearer
// token: the caller it acts for, or nil and the answer of refuse, counted
// as a failed authentication (a 429 instead once the address has spent its
// budget). The session is opened by OpenSession once the handler has
// applied its limits.
func (a *Control) SignIn(c *echo.Context, key string, refuse func() error) (*Principal, error) {
	if err := a.gate.Admit(c, key); err != nil {
		return nil, err
	}
	p, err := a.credential(c.Request().Context(), key)
	if err != nil {
		return nil, err
	}
	if p == nil {
		return nil, a.gate.Failed(c, refuse)
	}
	return p, nil
}

// OpenSession opens a session acting as p's credential and sets its cookie.
func (a *Control) OpenSession(c *echo.Context, p Principal) error {
	r := c.Request()
	id, sum := newSessionID()
	now := a.clock()
	sess := &store.Session{UserID: p.User, KeyID: p.key, CreatedAt: now, ExpiresAt: now.Add(sessionAge)}
	if p.key == uuid.Nil {
		sess.AdminBinding = adminBinding(a.token, id)
	}
	if err := a.store.CreateSession(r.Context(), sum[:], sess); err != nil {
		return apierr.Dependency(err)
	}
	// Behind a load balancer the next request may reach another dashboard:
	// each lets the new session past a blocked address as its own.
	a.gate.Vouch(r.Context(), sum)
	c.SetCookie(&http.Cookie{
		Name: sessionCookie, Value: id, Path: "/", MaxAge: int(sessionAge / time.Second),
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: overTLS(r),
	})
	return nil
}

// SignOut ends the cookie's session in Postgres and clears the cookie. It
// needs no valid session: signing out is harmless, whoever asks, and the
// cookie is cleared in any case. A cookie naming no session counts as a
// failed authentication, as a guess through the API would: sign-out is
// not a way around the limit on them. Nil means the handler may answer.
func (a *Control) SignOut(c *echo.Context) error {
	r := c.Request()
	c.SetCookie(&http.Cookie{
		Name: sessionCookie, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: overTLS(r),
	})
	id, ok := sessionToken(r)
	if !ok || !sessionShaped(id) {
		return nil
	}
	if err := a.gate.Admit(c, id); err != nil {
		return err
	}
	sum := sha256.Sum256([]byte(id))
	found, err := a.store.DeleteSession(r.Context(), sum[:])
	if err != nil {
		return apierr.Dependency(err)
	}
	if !found {
		return a.gate.Failed(c, func() error { return nil })
	}
	return nil
}
