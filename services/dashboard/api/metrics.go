package api

import (
	"strconv"
	"time"

	"github.com/labstack/echo/v5"
)

// unmatchedRoute labels requests that matched no route, whatever their path:
// a scan of random paths must not create a series per path.
const unmatchedRoute = "unmatched"

// knownMethods are the methods labelled as sent; any other is "other", for
// the same reason.
var knownMethods = map[string]bool{
	"GET": true, "HEAD": true, "POST": true, "PUT": true, "PATCH": true, "DELETE": true, "OPTIONS": true,
}

// countRequests counts each request and times it, by route pattern
// (/api/v1/jobs/:id, never the path with its id), method and the status sent.
// It runs outside logRequests, which has already turned any error into the
// response, so the code counted is the code the client got. Without metrics
// (Deps.Metrics nil, as in tests) it does nothing.
func (s *Server) countRequests(next echo.HandlerFunc) echo.HandlerFunc {
	m := s.metrics
	if m == nil {
		return next
	}
	return func(c *echo.Context) error {
		start := time.Now()
		err := next(c)
		_, status := echo.ResolveResponseStatus(c.Response(), err)
		route := c.Path()
		if route == "" {
			route = unmatchedRoute
		}
		method := c.Request().Method
		if !knownMethods[method] {
			method = "other"
		}
		m.Requests.WithLabelValues(route, method, strconv.Itoa(status)).Inc()
		m.Duration.WithLabelValues(route, method).Observe(time.Since(start).Seconds())
		return err
	}
}
