package api

import (
	_ "embed"
	"net/http"

	"github.com/labstack/echo/v5"
)

// openapiJSON is the OpenAPI 3 description of this API. It is written by
// hand, and openapi_test.go keeps it true: every route must be in it, and
// every response the API's tests provoke must match it.
//
//go:embed openapi.json
var openapiJSON []byte

// openapiDoc serves the OpenAPI document. It needs no token, so that client
// generators and API explorers can fetch it, and it may be cached briefly:
// it changes only with a new release.
func (s *Server) openapiDoc(c *echo.Context) error {
	c.Response().Header().Set("Cache-Control", "public, max-age=300")
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, openapiJSON)
}
