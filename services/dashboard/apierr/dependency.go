package apierr

import (
	"errors"

	"github.com/tockhq/tock/pkg/job"
)

// DependencyError marks a failure of Postgres or Redis: the request may
// succeed if retried, so it is a 503, not a 500. It keeps the failure for
// the log line the API writes; the client sees none of it.
type DependencyError struct{ Err error }

func (e *DependencyError) Error() string { return e.Err.Error() }
func (e *DependencyError) Unwrap() error { return e.Err }

// Dependency classifies an error from the store or the queue: the domain's
// sentinels pass through to be mapped to 4xx, anything else is the database
// or Redis failing.
func Dependency(err error) error {
	if err == nil || errors.Is(err, job.ErrNotFound) || errors.Is(err, job.ErrConflict) || errors.Is(err, job.ErrInvalid) {
		return err
	}
	return &DependencyError{Err: err}
}
