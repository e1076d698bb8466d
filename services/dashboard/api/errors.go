package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/labstack/echo/v5"
	"go.uber.org/zap"

	"github.com/tockhq/tock/pkg/job"
)

// Error codes of the "error.code" field. Clients branch on these, not on the
// message, so they never change once shipped.
const (
	CodeInvalid          = "invalid"
	CodeUnauthorized     = "unauthorized"
	CodeForbidden        = "forbidden"
	CodeNotFound         = "not_found"
	CodeMethodNotAllowed = "method_not_allowed"
	CodeConflict         = "conflict"
	// CodeIdempotencyKeyReused: an Idempotency-Key was sent before with a
	// different request (422).
	CodeIdempotencyKeyReused = "idempotency_key_reused"
	CodeTooLarge             = "too_large"
	CodeRateLimited          = "rate_limited"
	CodeQuotaExceeded        = "quota_exceeded"
	CodeUnavailable          = "unavailable"
	CodeInternal             = "internal"
)

// ErrorBody is the JSON of every error response:
// {"error": {"code": "...", "message": "...", "field": "..."}}.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail says what went wrong; Field names the offending input, if any.
type ErrorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
}

// apiError is an error that already knows its response.
type apiError struct {
	status int
	detail ErrorDetail
}

func (e *apiError) Error() string { return e.detail.Code + ": " + e.detail.Message }

func newError(status int, code, field, message string) *apiError {
	return &apiError{status: status, detail: ErrorDetail{Code: code, Message: message, Field: field}}
}

func invalid(field, message string) *apiError {
	return newError(http.StatusBadRequest, CodeInvalid, field, message)
}

var (
	errUnauthorized = newError(http.StatusUnauthorized, CodeUnauthorized, "", "a valid bearer token is required")
	errJobNotFound  = newError(http.StatusNotFound, CodeNotFound, "", "job not found")
	errTooLarge     = newError(http.StatusRequestEntityTooLarge, CodeTooLarge, "", "request body is too large")
	errInternal     = newError(http.StatusInternalServerError, CodeInternal, "", "internal error")
)

// unavailableError marks a failure of Postgres or Redis: the request may
// succeed if retried, so it is a 503, not a 500.
type unavailableError struct{ err error }

func (e *unavailableError) Error() string { return e.err.Error() }
func (e *unavailableError) Unwrap() error { return e.err }

// dependency classifies an error from the store or the queue: the domain's
// sentinels pass through to be mapped to 4xx, anything else is the database
// or Redis failing.
func dependency(err error) error {
	if err == nil || errors.Is(err, job.ErrNotFound) || errors.Is(err, job.ErrConflict) || errors.Is(err, job.ErrInvalid) {
		return err
	}
	return &unavailableError{err: err}
}

// toResponse maps any error a handler or echo returns onto a status and body.
// Only an error nobody classified is a 500: that is a bug.
func toResponse(err error) (int, ErrorDetail) {
	var (
		ae  *apiError
		fe  *job.FieldError
		ue  *unavailableError
		mbe *http.MaxBytesError
	)
	switch {
	case errors.As(err, &ae):
		return ae.status, ae.detail
	case errors.As(err, &mbe):
		return errTooLarge.status, errTooLarge.detail
	case errors.As(err, &fe):
		return http.StatusBadRequest, ErrorDetail{Code: CodeInvalid, Message: fe.Message, Field: fe.Field}
	case errors.Is(err, job.ErrInvalid):
		return http.StatusBadRequest, ErrorDetail{Code: CodeInvalid, Message: "the request is invalid"}
	case errors.Is(err, job.ErrNotFound):
		return errJobNotFound.status, errJobNotFound.detail
	case errors.Is(err, job.ErrConflict):
		return http.StatusConflict, ErrorDetail{Code: CodeConflict, Message: "the job's state does not allow this request"}
	case errors.As(err, &ue):
		return http.StatusServiceUnavailable, ErrorDetail{Code: CodeUnavailable, Message: "a backing service is unavailable; retry later"}
	}
	// echo's own errors: unknown route, wrong method and the like.
	switch status := echo.StatusCode(err); status {
	case 0:
		return errInternal.status, errInternal.detail
	case http.StatusNotFound:
		return status, ErrorDetail{Code: CodeNotFound, Message: "no such route"}
	case http.StatusMethodNotAllowed:
		return status, ErrorDetail{Code: CodeMethodNotAllowed, Message: "method not allowed on this route"}
	case http.StatusUnauthorized:
		return errUnauthorized.status, errUnauthorized.detail
	case http.StatusRequestEntityTooLarge:
		return errTooLarge.status, errTooLarge.detail
	case http.StatusBadRequest:
		return status, ErrorDetail{Code: CodeInvalid, Message: http.StatusText(status)}
	case http.StatusServiceUnavailable:
		return status, ErrorDetail{Code: CodeUnavailable, Message: "the service is unavailable; retry later"}
	default:
		if status >= 500 {
			return errInternal.status, errInternal.detail
		}
		text := http.StatusText(status)
		return status, ErrorDetail{Code: strings.ReplaceAll(strings.ToLower(text), " ", "_"), Message: text}
	}
}

// handleError is echo's HTTPErrorHandler: every error response, echo's own
// included, has the ErrorBody shape. Server-side failures are logged here,
// once; client errors are not.
func (s *Server) handleError(c *echo.Context, err error) {
	if resp, _ := echo.UnwrapResponse(c.Response()); resp != nil && resp.Committed {
		return
	}
	status, detail := toResponse(err)
	if status >= 500 {
		fields := []zap.Field{zap.String("route", c.Path()), zap.Int("status", status), zap.Error(err)}
		switch {
		case c.Request().Context().Err() != nil:
			s.log.Debug("request_abandoned", fields...)
		case status == http.StatusServiceUnavailable:
			s.log.Warn("dependency_unavailable", fields...)
		default:
			s.log.Error("request_failed", fields...)
		}
	}
	if c.Request().Method == http.MethodHead {
		_ = c.NoContent(status)
		return
	}
	_ = writeJSON(c, status, ErrorBody{Error: detail})
}

// writeJSON writes v as the response. The encoding is done before the status
// is sent, so a value that cannot be encoded still gets a proper 500.
func writeJSON(c *echo.Context, status int, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return c.JSONBlob(status, b)
}
