package api

import (
	"context"
	"net/http"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/tockhq/tock/pkg/probe"
)

// readyTimeout bounds one readiness check, so a hung dependency fails the
// probe instead of hanging it.
const readyTimeout = 2 * time.Second

// healthz says the process is alive; it checks nothing else.
func (s *Server) healthz(c *echo.Context) error {
	return writeJSON(c, http.StatusOK, map[string]string{"status": "ok"})
}

// readyz says whether Postgres and Redis answer, so a load balancer sends
// traffic only to a dashboard that can serve it.
func (s *Server) readyz(c *echo.Context) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), readyTimeout)
	defer cancel()
	status, body := probe.Ready(ctx, map[string]probe.Check{
		"startup":  s.ready,
		"postgres": s.store.Ping,
		"redis":    func(ctx context.Context) error { return s.redis.Ping(ctx).Err() },
	})
	return writeJSON(c, status, body)
}
