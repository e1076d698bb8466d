package tock

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// Error is an answer of the API that is not a success: its HTTP status and
// the body's {"error": {"code", "message", "field"}}. Field names the
// offending input of a 400. Find it with errors.As, or ask with IsNotFound
// and its siblings.
type Error struct {
	Status  int
	Code    string
	Message string
	Field   string
	// Items lists the invalid jobs of a POST /api/v1/jobs:batch refused with
	// 400, one per job.
	Items []ItemError
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "tock: %d", e.Status)
	if e.Code != "" {
		fmt.Fprintf(&b, " %s", e.Code)
	}
	if e.Message != "" {
		fmt.Fprintf(&b, ": %s", e.Message)
	}
	if e.Field != "" {
		fmt.Fprintf(&b, " (field %s)", e.Field)
	}
	return b.String()
}

// newError reads an error answer; a body that is not the API's error shape
// (a proxy's page, say) leaves Code empty and its start in Message.
func newError(resp *http.Response, body []byte) *Error {
	// A refused batch's body (BatchInvalid) is every error body's (Error)
	// with the invalid jobs added, so one decode reads either.
	var wire batchInvalid
	e := &Error{Status: resp.StatusCode}
	if json.Unmarshal(body, &wire) == nil && wire.Error.Code != "" {
		e.Code, e.Message, e.Field, e.Items = wire.Error.Code, wire.Error.Message, wire.Error.Field, wire.Errors
		return e
	}
	msg := strings.TrimSpace(string(body))
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	if msg == "" {
		msg = http.StatusText(resp.StatusCode)
	}
	e.Message = msg
	return e
}

// status returns the HTTP status of err's *Error, or 0.
func status(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Status
	}
	return 0
}

// IsNotFound reports a 404: no such job, run, user or key, or one of
// another user.
func IsNotFound(err error) bool { return status(err) == http.StatusNotFound }

// IsInvalid reports a 400: the request was refused as it is; the *Error's
// Field names the input at fault.
func IsInvalid(err error) bool { return status(err) == http.StatusBadRequest }

// IsConflict reports a 409: the job's state does not allow the action, or a
// live job already holds the key.
func IsConflict(err error) bool { return status(err) == http.StatusConflict }

// IsUnauthorized reports a 401: the token is missing, unknown or revoked.
func IsUnauthorized(err error) bool { return status(err) == http.StatusUnauthorized }

// IsForbidden reports a 403: the route needs an administrator.
func IsForbidden(err error) bool { return status(err) == http.StatusForbidden }

// IsRateLimited reports a 429 that outlasted the client's retries, or a
// quota (code "quota_exceeded"), which no retry helps.
func IsRateLimited(err error) bool { return status(err) == http.StatusTooManyRequests }
