package api

import (
	"io/fs"

	"github.com/labstack/echo/v5"

	"github.com/tockhq/tock/web"
)

// uiPolicy lets the dashboard's pages load only their own scripts and
// styles, and never be framed (clickjacking). Charts are SVG built in the
// page, so no other source is needed.
const uiPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

func uiHeaders(c *echo.Context) {
	h := c.Response().Header()
	h.Set("Content-Security-Policy", uiPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
}

// index serves the browser dashboard: one page whose script draws every
// view from the API, authenticated by the session cookie.
func (s *Server) index(c *echo.Context) error {
	uiHeaders(c)
	c.Response().Header().Set("Cache-Control", "no-cache")
	return c.FileFS("index.html", web.FS())
}

// asset serves one of the dashboard's scripts or stylesheets; only the
// files web embeds exist.
func (s *Server) asset(c *echo.Context) error {
	name := c.Param("file")
	if name == "index.html" || !fs.ValidPath(name) {
		return echo.ErrNotFound
	}
	if _, err := fs.Stat(web.FS(), name); err != nil {
		return echo.ErrNotFound
	}
	uiHeaders(c)
	c.Response().Header().Set("Cache-Control", "no-cache")
	return c.FileFS(name, web.FS())
}
