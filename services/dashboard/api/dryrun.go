package api

import (
	"github.com/labstack/echo/v5"

	"github.com/tockhq/tock/pkg/jobspec"
	"github.com/tockhq/tock/services/dashboard/apierr"
)

// The actions a dry run answers.
const (
	// ActionCreate: the request would create a job.
	ActionCreate = "create"
	// ActionUpdate: it would change the job, as Changes says.
	ActionUpdate = "update"
	// ActionUnchanged: the job already is as the request describes it.
	ActionUnchanged = "unchanged"
)

// DryRun is the answer of a create, patch or replace sent with
// ?dry_run=true: what the request would do, and nothing done. Changes
// lists each field that would change, old and new as views show them (a
// secret as its fingerprint); Job is the job as it would be. Current, for
// a replace whose key a finished job holds, is that job: a replace creates
// a new one, and Changes compares it with that job.
type DryRun struct {
	DryRun  bool                  `json:"dry_run"`
	Action  string                `json:"action"`
	Changes []jobspec.FieldChange `json:"changes"`
	Job     jobspec.View          `json:"job"`
	Current *jobspec.View         `json:"current,omitempty"`
}

// dryRun reads ?dry_run=: true checks a request and answers what it would
// do without doing it.
func dryRun(c *echo.Context) (bool, error) {
	switch c.QueryParam("dry_run") {
	case "", "false":
		return false, nil
	case "true":
		return true, nil
	}
	return false, apierr.Invalid("dry_run", "must be true or false")
}
