package api

import (
	"fmt"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/labstack/echo/v5"
	"go.uber.org/zap"

	"github.com/tockhq/tock/services/dashboard/apierr"
)

// logRequests logs one line per request once its error, if any, has been
// turned into a response, so the status logged is the status sent. It logs
// the route pattern, never headers: the token must not reach a log line.
func (s *Server) logRequests(next echo.HandlerFunc) echo.HandlerFunc {
	log := s.log.Named("http")
	return func(c *echo.Context) error {
		start := time.Now()
		if err := next(c); err != nil {
			s.handleError(c, err)
		}
		_, status := echo.ResolveResponseStatus(c.Response(), nil)
		route := c.Path()
		if route == "" {
			route = c.Request().URL.Path // no route matched
		}
		log.Info("request",
			zap.String("method", c.Request().Method),
			zap.String("route", route),
			zap.Int("status", status),
			zap.Int64("duration_ms", time.Since(start).Milliseconds()))
		return nil
	}
}

// recoverPanics turns a panic in a handler into a 500, logged with its stack,
// instead of a dropped connection.
func (s *Server) recoverPanics(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c *echo.Context) (err error) {
		defer func() {
			if r := recover(); r != nil {
				if r == http.ErrAbortHandler {
					panic(r)
				}
				s.log.Error("handler_panic", zap.String("route", c.Path()),
					zap.String("panic", fmt.Sprint(r)), zap.ByteString("stack", debug.Stack()))
				err = errInternal
			}
		}()
		return next(c)
	}
}

// limitBody caps every request body at MaxBodyBytes: a declared length over
// the cap is refused before anything is read, and a body without a declared
// length fails its read at the cap (see decodeJSON).
func (s *Server) limitBody(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c *echo.Context) error {
		req := c.Request()
		limit := s.maxBody
		if c.Path() == batchRoute || c.Path() == bulkRoute {
			limit = s.maxBatchBody
		}
		if req.ContentLength > limit {
			return errTooLarge
		}
		if req.Body != nil && req.Body != http.NoBody {
			req.Body = http.MaxBytesReader(c.Response(), req.Body, limit)
		}
		return next(c)
	}
}

// whenReady answers 503 while the service is still preparing (Postgres not
// migrated yet), rather than failing requests half-way.
func (s *Server) whenReady(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c *echo.Context) error {
		if err := s.ready(c.Request().Context()); err != nil {
			return apierr.New(http.StatusServiceUnavailable, apierr.CodeUnavailable, "", "tock is starting; try again shortly")
		}
		return next(c)
	}
}
