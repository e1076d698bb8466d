package api

import (
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/labstack/echo/v5"
)

// The browser dashboard's session is the credential itself in a cookie the
// page's scripts cannot read (HttpOnly), that no other site's request
// carries (SameSite=Strict), sent only over TLS when the dashboard is
// reached over TLS. Keeping the key rather than a reference leaves the
// dashboard stateless: revoking the key or disabling its user ends the
// session on the next request, as it does for the API.
const (
	sessionCookie = "tock_session"
	// csrfHeader must be "1" on a change authenticated by the cookie: a
	// cross-site form cannot set a header, and a cross-site script cannot
	// send one without a CORS preflight the dashboard never grants.
	csrfHeader = "X-Tock-CSRF"
	// sessionAge bounds a session even if the browser is never closed.
	sessionAge = 12 * time.Hour
)

// sessionToken is the credential in the session cookie, if any.
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

// SessionInfo is the answer to a sign-in: who the session acts for.
type SessionInfo struct {
	User  string `json:"user"`
	Admin bool   `json:"admin"`
	// Scopes are what the session's key may do; the dashboard hides what
	// it may not.
	Scopes []string `json:"scopes"`
}

// signIn checks the key posted as a form field or as JSON {"key": "..."}
// exactly as the API checks a bearer token, and on success sets the session
// cookie. A form post is answered with a redirect to the dashboard, JSON
// with SessionInfo; a bad key is the API's 401 either way.
func (s *Server) signIn(c *echo.Context) error {
	r := c.Request()
	if !sameOrigin(r) {
		return errForbidden
	}
	if err := strictHeaders(r); err != nil {
		return err
	}
	form := !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json")
	var key string
	if form {
		key = c.FormValue("key")
	} else {
		var body struct {
			Key string `json:"key"`
		}
		if err := decodeJSON(c, &body); err != nil {
			return err
		}
		key = body.Key
	}
	key = strings.TrimSpace(key)
	if err := s.authGate(c, key); err != nil {
		return err
	}
	p, err := s.credential(r.Context(), key)
	if err != nil {
		return err
	}
	if p == nil {
		return s.authFailed(c, func() error {
			if form {
				return c.Redirect(http.StatusSeeOther, "/#/signin?failed=1")
			}
			return unauthorized(c)
		})
	}
	c.SetCookie(&http.Cookie{
		Name: sessionCookie, Value: key, Path: "/", MaxAge: int(sessionAge / time.Second),
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: overTLS(r),
	})
	c.Response().Header().Set("Cache-Control", "no-store")
	if form {
		return c.Redirect(http.StatusSeeOther, "/")
	}
	return writeJSON(c, http.StatusOK, SessionInfo{User: p.user.String(), Admin: p.admin, Scopes: p.scopes.names()})
}

// signOut clears the session cookie. It needs no session: signing out is
// harmless, whoever asks.
func (s *Server) signOut(c *echo.Context) error {
	c.SetCookie(&http.Cookie{
		Name: sessionCookie, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: overTLS(c.Request()),
	})
	return c.NoContent(http.StatusNoContent)
}
