package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v5"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/jobspec"
	"github.com/tockhq/tock/pkg/schedule"
	"github.com/tockhq/tock/pkg/store"
	"github.com/tockhq/tock/pkg/strictjson"
	"github.com/tockhq/tock/services/dashboard/access"
	"github.com/tockhq/tock/services/dashboard/apierr"
)

// batchRoute is the bulk create. Echo reads ":" as the start of a path
// parameter, so the route escapes it.
const batchRoute = `/api/v1/jobs\:batch`

// MaxBatchJobs is the most jobs one bulk create may hold. A default user's
// job burst derives from it (DefaultQuotas.JobBurst), so that the cap is one
// number: a batch larger than the caller's burst is refused.
const MaxBatchJobs = 10_000

// batchUnits and batchTime bound the schedule work of one bulk create, all
// its jobs together, each job also within a single create's budget. A batch
// of 10,000 daily or hourly rules needs a few hundred milliseconds.
const (
	batchUnits = 50 * schedule.RequestUnits
	batchTime  = 2 * time.Second
)

// batchRequest is the body of POST /api/v1/jobs:batch: jobs as for POST
// /api/v1/jobs, all for one owner (the caller, or the user an administrator
// names). Each job is kept raw until it is decoded on its own, so that its
// errors carry its index.
type batchRequest struct {
	Owner string            `json:"owner"`
	Jobs  []json.RawMessage `json:"jobs"`
}

// BatchCreated is the answer of a bulk create: the new jobs' ids, in the
// order the jobs were given.
type BatchCreated struct {
	Created int         `json:"created"`
	IDs     []uuid.UUID `json:"ids"`
	// Debounced counts the jobs folded into the pending job that holds
	// their debounce key (whose id they list) instead of being created.
	Debounced int `json:"debounced,omitempty"`
	// Failed lists the debounced jobs that could be neither created nor
	// folded (their id is the zero UUID); the others stand.
	Failed []ItemError `json:"failed,omitempty"`
}

// MaxBatchDebounced is the most jobs with a debounce one bulk create may
// hold: each is created or folded on its own, after the others.
const MaxBatchDebounced = 1000

// ItemError is what is wrong with one job of a bulk create.
type ItemError struct {
	Index   int    `json:"index"`
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
}

// BatchErrorBody is the 400 of a bulk create with invalid jobs: the usual
// error, and every invalid job's error. Nothing was created.
type BatchErrorBody struct {
	Error  apierr.Detail `json:"error"`
	Errors []ItemError   `json:"errors"`
}

// createBatch validates every job of a bulk create and inserts them all in
// one transaction (COPY), or none. One-off jobs due within the horizon are
// stored claimed and put in the due set after the commit in one pipeline, as
// a single create does; recurring ones are left to the loader's next round
// (TOCK_LOAD_INTERVAL) rather than loaded one by one here.
func (s *Server) createBatch(c *echo.Context) error {
	raw, err := readBody(c)
	if err != nil {
		return err
	}
	// The jobs are checked one by one below, so that an error names its job.
	req, err := readBatch(raw)
	if err != nil {
		return err
	}
	if _, err := uuid.Parse(req.Owner); req.Owner != "" && err != nil {
		return apierr.Invalid("owner", "must be a user id (a UUID)")
	}
	switch {
	case len(req.Jobs) == 0:
		return apierr.Invalid("jobs", "must hold at least one job")
	case len(req.Jobs) > MaxBatchJobs:
		return apierr.Invalid("jobs", fmt.Sprintf("holds %d jobs; at most %d go in one request", len(req.Jobs), MaxBatchJobs))
	}
	owner, err := s.owner(c, req.Owner)
	if err != nil {
		return err
	}
	now := s.clock()
	jobs := make([]*job.Job, len(req.Jobs))
	reqs := make([]*jobspec.Request, len(req.Jobs))
	var problems []ItemError
	if err := s.evaluate(c, hasSchedule(req.Jobs), func() error {
		problems = s.buildBatch(c, req.Jobs, plainText(raw), owner.ID, now, jobs, reqs)
		return c.Request().Context().Err()
	}); err != nil {
		return err
	}
	if len(problems) > 0 {
		return writeJSON(c, http.StatusBadRequest, BatchErrorBody{
			Error: apierr.Detail{Code: apierr.CodeInvalid, Field: "jobs",
				Message: fmt.Sprintf("%d of %d jobs are invalid; nothing was created", len(problems), len(jobs))},
			Errors: problems,
		})
	}
	if err := s.allowJobs(c, len(jobs)); err != nil {
		return err
	}
	// The debounced jobs go one by one after the others, each folding into
	// the pending job that holds its key (a job of this batch too).
	var plain []*job.Job
	for _, j := range jobs {
		if j.Debounce == nil {
			plain = append(plain, j)
		}
	}
	if n := len(jobs) - len(plain); n > MaxBatchDebounced {
		return apierr.Invalid("jobs", fmt.Sprintf("holds %d jobs with a debounce; at most %d go in one request", n, MaxBatchDebounced))
	}
	if len(plain) > 0 {
		create := store.Create{Audit: access.Caller(c).Audit(store.ActionJobCreate), MaxActive: s.maxActive(owner), Rates: s.rates(owner),
			MaxFlowKeys: s.quotas.MaxFlowKeys}
		if err := s.createJobs(c, plain, now, create); err != nil {
			if len(plain) == len(jobs) {
				ids := make([]uuid.UUID, len(jobs))
				for i, j := range jobs {
					ids[i] = j.ID
				}
				keepIfStored(c, err, http.StatusCreated, BatchCreated{Created: len(jobs), IDs: ids})
			}
			return createError(err)
		}
	}
	out := BatchCreated{Created: len(plain), IDs: make([]uuid.UUID, len(jobs))}
	for i, j := range jobs {
		if j.Debounce != nil {
			got, folded, err := s.debounce(c, reqs[i], j, owner, now)
			if err != nil {
				if c.Request().Context().Err() != nil {
					return err
				}
				out.Failed = append(out.Failed, itemError(i, err))
				continue
			}
			if folded {
				out.Debounced++
			} else {
				out.Created++
			}
			j = got
		}
		out.IDs[i] = j.ID
	}
	return writeJSON(c, http.StatusCreated, out)
}

// buildBatch validates every job of a bulk create into jobs and returns
// what is wrong with them. Each job's schedule has the budget of a single
// create, and the batch as a whole batchUnits and batchTime: a batch of
// rules that each pass, but together would hold a core for seconds, is
// refused job by job once it runs out.
// Each job's text is checked (checkText) unless the whole body's is plain.
func (s *Server) buildBatch(c *echo.Context, raws []json.RawMessage, plain bool, owner uuid.UUID, now time.Time, jobs []*job.Job, reqs []*jobspec.Request) []ItemError {
	var problems []ItemError
	ctx := c.Request().Context()
	total := schedule.NewBudget(ctx, batchUnits, batchTime)
	for i, raw := range raws {
		req, err := decodeBatchJob(raw, plain)
		if err == nil {
			req, _, err = req.Debounced()
		}
		if err == nil {
			reqs[i] = req
			units := min(schedule.RequestUnits, total.Left())
			b := schedule.NewBudget(ctx, units, min(schedule.RequestTime, total.Remaining()))
			jobs[i], err = req.Build(b, owner, now, s.limits)
			total.Spend(units - b.Left())
			if err != nil && (total.Left() == 0 || total.Remaining() == 0) && req.Schedules() {
				err = apierr.Invalid("schedule", fmt.Sprintf("the batch's schedules together need more than the %s of work a batch may use; send recurring jobs in smaller batches", batchTime))
			}
		}
		if ctx.Err() != nil {
			return problems
		}
		if err != nil {
			problems = append(problems, itemError(i, err))
		}
	}
	return problems
}

// decodeBatchJob reads one job of a bulk create, part of a body read as
// well-formed JSON: its fields as for POST /api/v1/jobs, without an owner
// of its own (the batch has one). plain says its text needs no check (see
// plainText).
func decodeBatchJob(raw []byte, plain bool) (*jobspec.Request, error) {
	if !plain {
		if err := checkText(raw); err != nil {
			return nil, err
		}
	}
	return jobspec.DecodePart(raw, jobspec.Create)
}

// readBatch reads the body of a bulk create. The usual body, an object
// with "jobs" and perhaps "owner", each once and spelled so, is split
// where it stands after one check of its syntax: each job is a slice of
// raw, not a copy. Any other body is decoded strictly (decodeStrict),
// whose result and errors are the API's.
func readBatch(raw []byte) (batchRequest, error) {
	if req, ok := splitBatch(raw); ok {
		return req, nil
	}
	var req batchRequest
	err := decodeStrict(raw, &req)
	return req, err
}

// splitBatch is readBatch's fast path: false for any body it does not
// read exactly as decodeStrict would.
func splitBatch(raw []byte) (batchRequest, bool) {
	var req batchRequest
	members, err := strictjson.Object(raw)
	if err != nil {
		return req, false
	}
	var owner, jobs bool
	for _, m := range members {
		k, plain := m.Plain()
		switch {
		case !plain:
			return req, false
		case string(k) == "owner" && !owner:
			owner = true
			if json.Unmarshal(m.Value, &req.Owner) != nil {
				return req, false
			}
		case string(k) == "jobs" && !jobs:
			jobs = true
			if string(m.Value) == "null" {
				continue
			}
			if req.Jobs, plain = strictjson.Elements(m.Value); !plain {
				return req, false
			}
		default:
			return req, false
		}
	}
	return req, true
}

// hasSchedule reports whether any job of a batch may carry a schedule: only
// then does building it wait for the caller's turn at schedule work.
func hasSchedule(raws []json.RawMessage) bool {
	for _, raw := range raws {
		if bytes.Contains(raw, []byte(`"schedule"`)) {
			return true
		}
	}
	return false
}

// itemError says what is wrong with job i, with the field when known.
func itemError(i int, err error) ItemError {
	var ae *apierr.Error
	var fe *job.FieldError
	switch {
	case errors.As(err, &ae):
		return ItemError{Index: i, Field: ae.Detail.Field, Message: ae.Detail.Message}
	case errors.As(err, &fe):
		return ItemError{Index: i, Field: fe.Field, Message: fe.Message}
	}
	return ItemError{Index: i, Message: "job " + strconv.Itoa(i) + " is invalid"}
}
