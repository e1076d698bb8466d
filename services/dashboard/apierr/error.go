// Package apierr is the one shape of the dashboard API's error answers,
// {"error": {"code", "message", "field"}}, and the codes clients branch on.
// It is a package of its own so that api and the packages api builds on
// (guard, which hardens requests, and access, which authenticates them)
// answer in that one shape without importing api.
package apierr

import "net/http"

// Codes of the "error.code" field. Clients branch on these, not on the
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

// Body is the JSON of every error response:
// {"error": {"code": "...", "message": "...", "field": "..."}}.
type Body struct {
	Error Detail `json:"error"`
}

// Detail says what went wrong; Field names the offending input, if any.
type Detail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
}

// Error is an error that already knows its response: the API's error
// handler sends its Status and Detail as they are, whichever package made
// it.
type Error struct {
	Status int
	Detail Detail
}

func (e *Error) Error() string { return e.Detail.Code + ": " + e.Detail.Message }

// New is the error answered with status and a Detail of code, field and
// message.
func New(status int, code, field, message string) *Error {
	return &Error{Status: status, Detail: Detail{Code: code, Message: message, Field: field}}
}

// Invalid is the 400 of an input that breaks a rule: field names it, and
// message says what it must be.
func Invalid(field, message string) *Error {
	return New(http.StatusBadRequest, CodeInvalid, field, message)
}
