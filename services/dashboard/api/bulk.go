package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v5"
	"go.uber.org/zap"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/jobspec"
	"github.com/tockhq/tock/pkg/jobtype"
	"github.com/tockhq/tock/pkg/store"
	"github.com/tockhq/tock/services/dashboard/access"
	"github.com/tockhq/tock/services/dashboard/apierr"
)

// bulkRoute is POST /api/v1/jobs:bulk; the colon is escaped as in batchRoute.
const bulkRoute = `/api/v1/jobs\:bulk`

// MaxBulkJobs is the most jobs one bulk action may change; a default user's
// job burst holds it (DefaultQuotas.JobBurst).
const MaxBulkJobs = 10_000

// Bulk actions, and what each does to one job: the single-job action's own
// rules apply, and a job they refuse is reported as skipped.
const (
	bulkPause   = "pause"
	bulkResume  = "resume"
	bulkCancel  = "cancel"
	bulkTrigger = "trigger"
	bulkRetry   = "retry"
)

var bulkActions = []string{bulkPause, bulkResume, bulkCancel, bulkTrigger, bulkRetry}

// bulkWorkers is how many jobs of one bulk action change at once: enough to
// finish 10,000 within the write timeout, few enough to leave the pool's
// other connections to other requests.
const bulkWorkers = 4

// bulkTimeout bounds the changes of one bulk action, all together. They go
// on if the client goes away, so that the answer (and the audit entry)
// describes what was done; jobs not reached in time are skipped, and say so.
const bulkTimeout = 25 * time.Second

// bulkRequest is the body of POST /api/v1/jobs:bulk: an action and either
// the jobs' ids or a filter, as for the jobs list.
type bulkRequest struct {
	Action string      `json:"action"`
	IDs    []string    `json:"ids"`
	Filter *bulkFilter `json:"filter"`
	DryRun bool        `json:"dry_run"`
}

// bulkFilter selects jobs as GET /api/v1/jobs does. Label is one
// "key=value" or a list of them, all of which must match.
type bulkFilter struct {
	Status string          `json:"status"`
	Type   string          `json:"type"`
	Label  json.RawMessage `json:"label"`
	Q      string          `json:"q"`
	Owner  string          `json:"owner"`
}

// BulkSkipped is a job a bulk action did not change, and why.
type BulkSkipped struct {
	ID     uuid.UUID `json:"id"`
	Reason string    `json:"reason"`
}

// BulkResult is the answer of a bulk action: how many jobs were selected,
// how many changed, and every one that did not. A dry run changes nothing
// and lists the selected ids instead.
type BulkResult struct {
	Action  string        `json:"action"`
	DryRun  bool          `json:"dry_run"`
	Matched int           `json:"matched"`
	Changed int           `json:"changed"`
	Skipped []BulkSkipped `json:"skipped"`
	IDs     []uuid.UUID   `json:"ids,omitempty"`
}

// bulkPlan is a checked bulk request: the ids given, or the filter to find
// them with (owner still to be resolved).
type bulkPlan struct {
	action string
	ids    []uuid.UUID
	filter *store.JobFilter
	owner  uuid.UUID // the filter's named owner; uuid.Nil when none
	dryRun bool
}

// parseBulk checks a bulk request's body; it needs nothing but the bytes,
// so it is what the fuzz target drives.
func parseBulk(raw []byte) (*bulkPlan, error) {
	var req bulkRequest
	if err := decodeRaw(raw, &req); err != nil {
		return nil, err
	}
	plan := &bulkPlan{action: req.Action, dryRun: req.DryRun}
	found := false
	for _, a := range bulkActions {
		found = found || a == req.Action
	}
	if !found {
		return nil, apierr.Invalid("action", "must be one of "+strings.Join(bulkActions, ", "))
	}
	if ids, given, err := pickIDs(req.IDs, req.Filter != nil, "job", "a job id", "per bulk action"); err != nil {
		return nil, err
	} else if given {
		plan.ids = ids
		return plan, nil
	}
	f := &store.JobFilter{}
	if v := req.Filter.Status; v != "" {
		f.Status = job.Status(v)
		if !validStatus(f.Status) {
			return nil, apierr.Invalid("filter.status", "must be one of scheduled, paused, completed, permanently_failed, cancelled, expired")
		}
	}
	if v := req.Filter.Type; v != "" {
		f.Type = job.Type(v)
		if _, ok := jobtype.Lookup(f.Type); !ok {
			return nil, apierr.Invalid("filter.type", "must be one of "+strings.Join(jobtype.Names(), ", "))
		}
	}
	if v := strings.TrimSpace(req.Filter.Q); v != "" {
		if id, err := uuid.Parse(v); err == nil {
			f.ID = id
		} else {
			f.Name = v
		}
	}
	var err error
	if f.Labels, err = bodyLabels(req.Filter.Label); err != nil {
		return nil, err
	}
	if plan.owner, err = filterOwner(req.Filter.Owner); err != nil {
		return nil, err
	}
	plan.filter = f
	return plan, nil
}

// pickIDs checks that a bulk body gives ids or a filter, not both, and
// reads the ids (bulkIDs) when they are the one given.
func pickIDs(raw []string, filter bool, what, idName, per string) (ids []uuid.UUID, given bool, err error) {
	switch {
	case raw != nil && filter:
		return nil, false, apierr.Invalid("filter", "give ids or a filter, not both")
	case raw == nil && !filter:
		return nil, false, apierr.Invalid("ids", "give the "+what+"s' ids, or a filter")
	case raw == nil:
		return nil, false, nil
	}
	ids, err = bulkIDs(raw, what, idName, per)
	return ids, true, err
}

// filterOwner reads a bulk filter's owner: uuid.Nil when absent.
func filterOwner(v string) (uuid.UUID, error) {
	if v == "" {
		return uuid.Nil, nil
	}
	id, err := uuid.Parse(v)
	if err != nil {
		return uuid.Nil, apierr.Invalid("filter.owner", "is not a user id")
	}
	return id, nil
}

// bulkIDs checks the ids of a bulk body: at least one, at most
// MaxBulkJobs (413 beyond), each a UUID, duplicates counted once; what
// names the things ("job"), idName one id ("a job id") and per the call
// ("per bulk action") in the errors.
func bulkIDs(raw []string, what, idName, per string) ([]uuid.UUID, error) {
	if len(raw) == 0 {
		return nil, apierr.Invalid("ids", "must name at least one "+what)
	}
	if len(raw) > MaxBulkJobs {
		return nil, apierr.New(http.StatusRequestEntityTooLarge, apierr.CodeTooLarge, "ids",
			fmt.Sprintf("at most %d %ss %s; %d given", MaxBulkJobs, what, per, len(raw)))
	}
	ids := make([]uuid.UUID, 0, len(raw))
	seen := make(map[uuid.UUID]bool, len(raw))
	for i, s := range raw {
		id, err := uuid.Parse(s)
		if err != nil {
			return nil, apierr.Invalid(fmt.Sprintf("ids[%d]", i), "is not "+idName)
		}
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// bodyLabels reads a bulk filter's label: absent, one "key=value" or a
// list of them, errors named filter.label.
func bodyLabels(raw json.RawMessage) ([]store.Label, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var labels []string
	var one string
	if err := json.Unmarshal(raw, &one); err == nil {
		labels = []string{one}
	} else if err := json.Unmarshal(raw, &labels); err != nil {
		return nil, apierr.Invalid("filter.label", `must be "key=value" or a list of them`)
	}
	out, err := labelFilter(labels)
	var ae *apierr.Error
	if errors.As(err, &ae) {
		return nil, apierr.Invalid("filter.label", ae.Detail.Message)
	}
	return out, err
}

// bulkJobs applies one action to many jobs of the caller's: the ids given,
// or those a filter selects (at most MaxBulkJobs; more is 413). Each job
// changes as the single-job action would, in its own transaction; a job the
// action refuses (a paused job paused again, another owner's job) is
// skipped, with the reason. The whole call counts as that many job changes
// against the caller's rate, and leaves one audit entry (and, for a
// trigger, each job's job.trigger entry).
func (s *Server) bulkJobs(c *echo.Context) error {
	raw, err := readBody(c)
	if err != nil {
		return err
	}
	plan, err := parseBulk(raw)
	if err != nil {
		return err
	}
	p := access.Caller(c)
	ctx := c.Request().Context()
	ids := plan.ids
	if plan.filter != nil {
		f := *plan.filter
		f.Owner = p.Owner()
		if plan.owner != uuid.Nil {
			if !p.Admin && plan.owner != p.User {
				return apierr.New(http.StatusForbidden, apierr.CodeForbidden, "filter.owner", "only an administrator may act on another user's jobs")
			}
			if _, err := s.store.GetUser(ctx, plan.owner); err != nil {
				if errors.Is(err, job.ErrNotFound) {
					return apierr.Invalid("filter.owner", "no such user")
				}
				return apierr.Dependency(err)
			}
			f.Owner = plan.owner
		}
		if ids, err = s.store.MatchJobs(ctx, f, MaxBulkJobs); err != nil {
			if errors.Is(err, store.ErrTooBroad) {
				return apierr.Invalid("filter", err.Error())
			}
			return apierr.Dependency(err)
		}
		if len(ids) > MaxBulkJobs {
			return apierr.New(http.StatusRequestEntityTooLarge, apierr.CodeTooLarge, "filter",
				fmt.Sprintf("the filter selects more than %d jobs; narrow it, or act in several calls", MaxBulkJobs))
		}
	}
	out := BulkResult{Action: plan.action, DryRun: plan.dryRun, Matched: len(ids), Skipped: []BulkSkipped{}}
	if plan.dryRun {
		out.IDs = ids
		return writeJSON(c, http.StatusOK, out)
	}
	if len(ids) > 0 {
		if err := s.allowJobs(c, len(ids)); err != nil {
			return err
		}
	}
	changed := s.applyBulk(ctx, p, plan.action, ids, &out)
	s.auditBulk(ctx, p, plan.action, len(ids), changed)
	return writeJSON(c, http.StatusOK, out)
}

// applyBulk runs the action on each job, bulkWorkers at a time, filling in
// out's counts and skips (in the order the ids were given), and returns the
// ids it changed.
func (s *Server) applyBulk(ctx context.Context, p access.Principal, action string, ids []uuid.UUID, out *BulkResult) []uuid.UUID {
	reasons := s.eachBounded(ctx, ids, func(ctx context.Context, id uuid.UUID, now time.Time) error {
		return s.bulkOne(ctx, p, action, id, now)
	})
	var changed []uuid.UUID
	for i, r := range reasons {
		if r == "" {
			changed = append(changed, ids[i])
			continue
		}
		out.Skipped = append(out.Skipped, BulkSkipped{ID: ids[i], Reason: r})
	}
	out.Changed = len(changed)
	return changed
}

// eachBounded calls do for each id, bulkWorkers at a time, within
// bulkTimeout of a context that outlives the client (so that the answer
// and the audit entry describe what was done), and returns, in the ids'
// order, "" for each call that succeeded and why (bulkReason) for each
// that did not or was not reached in time.
func (s *Server) eachBounded(ctx context.Context, ids []uuid.UUID, do func(context.Context, uuid.UUID, time.Time) error) []string {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), bulkTimeout)
	defer cancel()
	now := s.now()
	reasons := make([]string, len(ids))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(bulkWorkers, len(ids)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if ctx.Err() != nil {
					reasons[i] = "not reached: the bulk action ran out of time"
					continue
				}
				reasons[i] = bulkReason(do(ctx, ids[i], now))
			}
		}()
	}
	for i := range ids {
		next <- i
	}
	close(next)
	wg.Wait()
	return reasons
}

// bulkOne applies action to one job, unaudited (the call's one entry says
// it all), except a trigger: it adds an occurrence, whose idempotency key
// only the trigger's own entry records, so it is audited as the single-job
// trigger is, job.trigger by the caller.
func (s *Server) bulkOne(ctx context.Context, p access.Principal, action string, id uuid.UUID, now time.Time) error {
	owner := p.Owner()
	var refused error
	edit := func(e store.Edit) error {
		_, err := s.jobs.Edit(ctx, owner, id, now, func(j *job.Job, started bool) error {
			refused = e(j, started)
			return refused
		}, store.Update{Rates: s.ratesOf(p)})
		if refused != nil && errors.Is(err, job.ErrConflict) {
			return refused
		}
		return err
	}
	switch action {
	case bulkPause:
		return edit(jobspec.Pause)
	case bulkResume:
		return edit(jobspec.Resume(now))
	case bulkCancel:
		return s.jobs.Cancel(ctx, owner, id, now, store.Audit{})
	case bulkTrigger:
		_, err := s.jobs.Trigger(ctx, owner, id, now, p.Audit(store.ActionJobTrigger))
		return err
	default:
		_, err := s.jobs.Retry(ctx, owner, id, time.Time{}, now, store.Audit{})
		return err
	}
}

// bulkReason says why a job was skipped, in the single-job action's own
// words; "" for a job that changed.
func bulkReason(err error) string {
	var fe *job.FieldError
	var re *store.RateError
	var cr *store.CancelRefused
	switch {
	case err == nil:
		return ""
	case errors.Is(err, job.ErrNotFound):
		return "not found"
	case errors.As(err, &re):
		return rateMessage(re)
	case errors.As(err, &cr):
		return cr.Error()
	case errors.As(err, &fe):
		return fe.Error()
	case errors.Is(err, job.ErrConflict):
		msg := err.Error()
		if i := strings.Index(msg, job.ErrConflict.Error()+": "); i >= 0 {
			msg = msg[i+len(job.ErrConflict.Error())+2:]
		}
		return msg
	}
	return "failed: a backing service is unavailable"
}

// auditBulk writes the call's one audit entry: the action, how many jobs it
// selected, and the ids it changed. The changes are many transactions, so
// the entry follows them; a failure to write it is logged.
func (s *Server) auditBulk(ctx context.Context, p access.Principal, action string, matched int, changed []uuid.UUID) {
	if changed == nil {
		changed = []uuid.UUID{}
	}
	raw, _ := json.Marshal(map[string]any{"action": action, "matched": matched, "changed": len(changed), "ids": changed})
	e := store.AuditEntry{At: s.now(), Actor: p.User, Action: store.ActionJobBulk, TargetType: store.TargetBulk,
		TargetID: job.NewID(), Change: raw}
	if err := s.store.RecordAudit(context.WithoutCancel(ctx), e); err != nil {
		s.log.Error("audit_failed", zap.String("action", e.Action), zap.Int("jobs", len(changed)), zap.Error(err))
	}
}

// countsRoute is GET /api/v1/jobs:counts; the colon is escaped as in
// batchRoute.
const countsRoute = `/api/v1/jobs\:counts`

// JobCounts is the answer of GET /api/v1/jobs:counts: how many of the
// caller's jobs (an administrator's: everyone's, or owner's) are in each
// status, every status present.
type JobCounts struct {
	Counts map[job.Status]int64 `json:"counts"`
	Total  int64                `json:"total"`
}

// countJobs counts the caller's jobs by status, for the dashboard's totals.
// Counting reads every job of the owner, so it is bounded by
// store.CountTimeout: beyond, 503 would mislead, so it is a 400 asking to
// narrow it to one owner.
func (s *Server) countJobs(c *echo.Context) error {
	owner := access.Caller(c).Owner()
	if o, named, err := queryOwner(c); err != nil {
		return err
	} else if named {
		owner = o
	}
	counts, err := s.store.CountJobs(c.Request().Context(), owner)
	if err != nil {
		if errors.Is(err, store.ErrTooBroad) {
			return apierr.Invalid("owner", "too many jobs to count at once; name one owner")
		}
		return apierr.Dependency(err)
	}
	out := JobCounts{Counts: map[job.Status]int64{}}
	for _, st := range []job.Status{job.StatusScheduled, job.StatusPaused, job.StatusCompleted, job.StatusPermanentlyFailed, job.StatusCancelled, job.StatusExpired} {
		out.Counts[st] = counts[string(st)]
		out.Total += counts[string(st)]
	}
	return writeJSON(c, http.StatusOK, out)
}
