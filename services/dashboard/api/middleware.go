package api

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net/http"
	"runtime/debug"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v5"
	"go.uber.org/zap"

	"github.com/tockhq/tock/pkg/store"
)

// principal is who a request acts for.
type principal struct {
	user  uuid.UUID
	admin bool
}

// scope is the owner to filter queries by: an administrator sees every owner.
func (p principal) scope() uuid.UUID {
	if p.admin {
		return store.AnyOwner
	}
	return p.user
}

const principalKey = "tock.principal"

func caller(c *echo.Context) principal {
	p, _ := c.Get(principalKey).(principal)
	return p
}

// authenticate admits a request carrying "Authorization: Bearer <token>" with
// the admin token. Both sides are hashed before the constant-time compare so
// that neither the content nor the length of the token leaks through timing.
func (s *Server) authenticate(next echo.HandlerFunc) echo.HandlerFunc {
	want := sha256.Sum256(s.token)
	return func(c *echo.Context) error {
		scheme, token, _ := strings.Cut(c.Request().Header.Get("Authorization"), " ")
		token = strings.TrimSpace(token)
		got := sha256.Sum256([]byte(token))
		ok := len(s.token) > 0 && token != "" && strings.EqualFold(scheme, "Bearer") &&
			subtle.ConstantTimeCompare(got[:], want[:]) == 1
		if !ok {
			c.Response().Header().Set("WWW-Authenticate", `Bearer realm="tock"`)
			return errUnauthorized
		}
		c.Set(principalKey, principal{user: AdminID, admin: true})
		return next(c)
	}
}

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
		if req.ContentLength > s.maxBody {
			return errTooLarge
		}
		if req.Body != nil && req.Body != http.NoBody {
			req.Body = http.MaxBytesReader(c.Response(), req.Body, s.maxBody)
		}
		return next(c)
	}
}

// whenReady answers 503 while the service is still preparing (Postgres not
// migrated yet), rather than failing requests half-way.
func (s *Server) whenReady(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c *echo.Context) error {
		if err := s.ready(c.Request().Context()); err != nil {
			return newError(http.StatusServiceUnavailable, CodeUnavailable, "", "tock is starting; try again shortly")
		}
		return next(c)
	}
}
