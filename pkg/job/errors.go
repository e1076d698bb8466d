package job

import (
	"errors"
	"fmt"
)

// Sentinel errors shared by every layer. The store translates driver errors into
// them once, at its boundary; the dashboard maps them to HTTP status codes.
var (
	// ErrNotFound: the job or run does not exist, or belongs to someone else.
	ErrNotFound = errors.New("not found")
	// ErrConflict: the request is valid but the job's state forbids it, such as
	// deleting a one-off job that has already started.
	ErrConflict = errors.New("conflict")
	// ErrInvalid: the input is malformed; a *FieldError says which field.
	ErrInvalid = errors.New("invalid")
)

// FieldError names the input field that failed validation, so clients can show
// the message next to it. It matches ErrInvalid with errors.Is.
type FieldError struct {
	Field   string
	Message string
}

func (e *FieldError) Error() string { return fmt.Sprintf("%s: %s", e.Field, e.Message) }

// Is reports that every FieldError is an ErrInvalid.
func (e *FieldError) Is(target error) bool { return target == ErrInvalid }

func invalid(field, format string, args ...any) error {
	return &FieldError{Field: field, Message: fmt.Sprintf(format, args...)}
}
