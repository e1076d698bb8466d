package access

import (
	"net/http"
	"strings"

	"github.com/google/uuid"
	"github.com/labstack/echo/v5"

	"github.com/tockhq/tock/services/dashboard/apierr"
	"github.com/tockhq/tock/services/dashboard/guard"
)

// Authenticate admits a request carrying "Authorization: Bearer <token>"
// where the token is the bootstrap admin token or a live API key of an
// enabled user, or, from the browser dashboard, the id of a live session in
// the session cookie (see session.go), which acts as the key or token it was
// opened with, and whose credential allows the route (neededScope). Every
// failure looks the same to the client: 401, saying nothing of which check
// failed; an address that keeps failing gets 429 before any lookup
// (guard.Gate). A request naming its credentials twice is a 400
// (guard.StrictHeaders).
func (a *Control) Authenticate(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c *echo.Context) error {
		r := c.Request()
		if err := guard.StrictHeaders(r); err != nil {
			return err
		}
		refuse := func() error { return a.gate.Failed(c, func() error { return Unauthorized(c) }) }
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
		if err := a.gate.Admit(c, token); err != nil {
			return err
		}
		lookup := a.credential
		if cookie {
			lookup = a.sessionPrincipal
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

// ErrUnauthorized is the one answer to a request without valid
// credentials, whichever check failed.
var ErrUnauthorized = apierr.New(http.StatusUnauthorized, apierr.CodeUnauthorized, "", "a valid bearer token is required")

// ErrForbidden refuses what only an administrator may do.
var ErrForbidden = apierr.New(http.StatusForbidden, apierr.CodeForbidden, "", "this needs an administrator")

// Unauthorized answers ErrUnauthorized, with the WWW-Authenticate header
// that names the scheme to use.
func Unauthorized(c *echo.Context) error {
	c.Response().Header().Set("WWW-Authenticate", `Bearer realm="tock"`)
	return ErrUnauthorized
}

// AdminOnly refuses a route to callers who are not administrators.
func AdminOnly(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c *echo.Context) error {
		if !Caller(c).Admin {
			return ErrForbidden
		}
		return next(c)
	}
}

// SelfOrAdmin lets an administrator act on any user, and a user on
// themself only. Another user is a 403: users are not secret from each
// other's existence the way jobs are, but they are not theirs to manage.
func SelfOrAdmin(c *echo.Context, user uuid.UUID) error {
	if p := Caller(c); p.Admin || p.User == user {
		return nil
	}
	return ErrForbidden
}
