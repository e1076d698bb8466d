package api

import (
	"net/http"

	"github.com/labstack/echo/v5"
)

// signingSecret answers the caller's webhook signing secret, which receivers
// need to verify X-Tock-Signature (docs/webhooks.md). It is only ever sent to
// its owner and never logged.
func (s *Server) signingSecret(c *echo.Context) error {
	secret, err := s.store.SigningSecret(c.Request().Context(), caller(c).user)
	if err != nil {
		return dependency(err)
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return writeJSON(c, http.StatusOK, map[string]string{"secret": secret, "header": "X-Tock-Signature",
		"scheme": "t=<unix seconds>,v1=<hex HMAC-SHA256 of \"<t>.<raw body>\">"})
}
