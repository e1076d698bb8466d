package api

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v5"

	"github.com/tockhq/tock/services/dashboard/access"
)

// SessionInfo is the answer to a sign-in: who the session acts for.
type SessionInfo struct {
	User  string `json:"user"`
	Admin bool   `json:"admin"`
	// Scopes are what the session's key may do; the dashboard hides what
	// it may not.
	Scopes []string `json:"scopes"`
}

// signIn checks the key posted as a form field or as JSON {"key": "..."}
// exactly as the API checks a bearer token, and on success opens a session
// and sets its cookie (access.Control.SignIn, OpenSession). A form post is
// answered with a redirect to the dashboard, JSON with SessionInfo; a bad
// key is the API's 401 either way.
func (s *Server) signIn(c *echo.Context) error {
	r := c.Request()
	if err := access.CheckSignIn(r); err != nil {
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
	p, err := s.access.SignIn(c, strings.TrimSpace(key), func() error {
		if form {
			return c.Redirect(http.StatusSeeOther, "/#/signin?failed=1")
		}
		return access.Unauthorized(c)
	})
	if p == nil {
		return err
	}
	// Each sign-in stores a row: it counts against the user's request
	// rate, so that a key cannot fill the table.
	q := s.quotas.effective(p.Limits, p.Admin)
	if err := allow(c, s.limiter, bucketRequests, p.User, q.RequestsPerMinute, q.RequestBurst, 1, s.quotas.OnRedisDown); err != nil {
		return err
	}
	if err := s.access.OpenSession(c, *p); err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	if form {
		return c.Redirect(http.StatusSeeOther, "/")
	}
	return writeJSON(c, http.StatusOK, SessionInfo{User: p.User.String(), Admin: p.Admin, Scopes: p.Scopes.Names()})
}

// signOut ends the cookie's session and clears the cookie
// (access.Control.SignOut): 204 whether there was one or not.
func (s *Server) signOut(c *echo.Context) error {
	if err := s.access.SignOut(c); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
