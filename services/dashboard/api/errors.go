package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/labstack/echo/v5"
	"go.uber.org/zap"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/services/dashboard/access"
	"github.com/tockhq/tock/services/dashboard/apierr"
)

var (
	errJobNotFound = apierr.New(http.StatusNotFound, apierr.CodeNotFound, "", "job not found")
	errTooLarge    = apierr.New(http.StatusRequestEntityTooLarge, apierr.CodeTooLarge, "", "request body is too large")
	errInternal    = apierr.New(http.StatusInternalServerError, apierr.CodeInternal, "", "internal error")
)

// toResponse maps any error a handler or echo returns onto a status and body.
// Only an error nobody classified is a 500: that is a bug.
func toResponse(err error) (int, apierr.Detail) {
	var (
		ae  *apierr.Error
		fe  *job.FieldError
		ue  *apierr.DependencyError
		mbe *http.MaxBytesError
	)
	switch {
	case errors.As(err, &ae):
		return ae.Status, ae.Detail
	case errors.As(err, &mbe):
		return errTooLarge.Status, errTooLarge.Detail
	case errors.As(err, &fe):
		return http.StatusBadRequest, apierr.Detail{Code: apierr.CodeInvalid, Message: fe.Message, Field: fe.Field}
	case errors.Is(err, job.ErrInvalid):
		return http.StatusBadRequest, apierr.Detail{Code: apierr.CodeInvalid, Message: "the request is invalid"}
	case errors.Is(err, job.ErrNotFound):
		return errJobNotFound.Status, errJobNotFound.Detail
	case errors.Is(err, job.ErrConflict):
		return http.StatusConflict, apierr.Detail{Code: apierr.CodeConflict, Message: "the job's state does not allow this request"}
	case errors.As(err, &ue):
		return http.StatusServiceUnavailable, apierr.Detail{Code: apierr.CodeUnavailable, Message: "a backing service is unavailable; retry later"}
	}
	// echo's own errors: unknown route, wrong method and the like.
	switch status := echo.StatusCode(err); status {
	case 0:
		return errInternal.Status, errInternal.Detail
	case http.StatusNotFound:
		return status, apierr.Detail{Code: apierr.CodeNotFound, Message: "no such route"}
	case http.StatusMethodNotAllowed:
		return status, apierr.Detail{Code: apierr.CodeMethodNotAllowed, Message: "method not allowed on this route"}
	case http.StatusUnauthorized:
		return access.ErrUnauthorized.Status, access.ErrUnauthorized.Detail
	case http.StatusRequestEntityTooLarge:
		return errTooLarge.Status, errTooLarge.Detail
	case http.StatusBadRequest:
		return status, apierr.Detail{Code: apierr.CodeInvalid, Message: http.StatusText(status)}
	case http.StatusServiceUnavailable:
		return status, apierr.Detail{Code: apierr.CodeUnavailable, Message: "the service is unavailable; retry later"}
	default:
		if status >= 500 {
			return errInternal.Status, errInternal.Detail
		}
		text := http.StatusText(status)
		return status, apierr.Detail{Code: strings.ReplaceAll(strings.ToLower(text), " ", "_"), Message: text}
	}
}

// handleError is echo's HTTPErrorHandler: every error response, echo's own
// included, has the apierr.Body shape. Server-side failures are logged here,
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
	_ = writeJSON(c, status, apierr.Body{Error: detail})
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
