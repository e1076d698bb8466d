package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/labstack/echo/v5"
	"go.uber.org/zap"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/jobtype"
	"github.com/tockhq/tock/pkg/store"
	"github.com/tockhq/tock/services/dashboard/access"
	"github.com/tockhq/tock/services/dashboard/apierr"
)

// The dead-letter routes. A dead letter is an occurrence whose last attempt
// ended permanently_failed (its retries ran out, or it was dead-lettered
// after TOCK_MAX_DELIVERIES deliveries without an outcome) and that nobody
// replayed or purged since; it is named by that run's id. The colons of
// the bulk routes are escaped as in batchRoute.
const (
	deadReplayRoute = `/api/v1/dead-letters\:replay`
	deadPurgeRoute  = `/api/v1/dead-letters\:purge`
)

// Dead-letter actions.
const (
	deadReplay = "replay"
	deadPurge  = "purge"
)

// maxDeadPages bounds the pages of the run search one bulk action's filter
// reads: store.DefaultRunWalk runs each, so at most 100,000 runs looked at
// before the filter is refused as too broad.
const maxDeadPages = 20

// DeadLetterList is one page of GET /api/v1/dead-letters: runs, newest
// first; NextCursor is "" on the last page, and a page may be short, even
// empty, and still have a next one.
type DeadLetterList struct {
	DeadLetters []Run  `json:"dead_letters"`
	NextCursor  string `json:"next_cursor"`
}

// DeadLetterResult is the answer of a replay or purge of dead letters, in
// the shape of a bulk action's: how many were selected, how many changed,
// and every one that did not, with why; a dry run lists the selected ids.
type DeadLetterResult = BulkResult

// deadRequest is the body of POST /api/v1/dead-letters:replay and :purge.
type deadRequest struct {
	IDs    []string    `json:"ids"`
	Filter *deadFilter `json:"filter"`
	DryRun bool        `json:"dry_run"`
}

// deadFilter selects dead letters as GET /api/v1/dead-letters does. Label
// is one "key=value" or a list of them, all of which must match.
type deadFilter struct {
	Type  string          `json:"type"`
	Job   string          `json:"job"`
	Label json.RawMessage `json:"label"`
	Since string          `json:"since"`
	Until string          `json:"until"`
	Q     string          `json:"q"`
	Owner string          `json:"owner"`
}

// deadPlan is a checked request: the ids given, or the search to find
// them with (its owner still to be resolved against the caller).
type deadPlan struct {
	ids    []uuid.UUID
	search *store.RunSearch
	owner  uuid.UUID // the filter's named owner; uuid.Nil when none
	dryRun bool
}

// parseDead checks a replay or purge body; it needs nothing but the bytes,
// so it is what the fuzz target drives.
func parseDead(raw []byte) (*deadPlan, error) {
	var req deadRequest
	if err := decodeRaw(raw, &req); err != nil {
		return nil, err
	}
	plan := &deadPlan{dryRun: req.DryRun}
	if ids, given, err := pickIDs(req.IDs, req.Filter != nil, "dead letter", "a dead letter's id (a UUID)", "per call"); err != nil {
		return nil, err
	} else if given {
		plan.ids = ids
		return plan, nil
	}
	f := &store.RunSearch{Status: job.RunPermanentlyFailed, Dead: true}
	if v := req.Filter.Type; v != "" {
		f.Type = job.Type(v)
		if _, ok := jobtype.Lookup(f.Type); !ok {
			return nil, apierr.Invalid("filter.type", "must be one of "+strings.Join(jobtype.Names(), ", "))
		}
	}
	if v := req.Filter.Job; v != "" {
		id, err := uuid.Parse(v)
		if err != nil {
			return nil, apierr.Invalid("filter.job", "must be a job id (a UUID)")
		}
		f.JobID = id
	}
	var err error
	if f.Labels, err = bodyLabels(req.Filter.Label); err != nil {
		return nil, err
	}
	for _, t := range []struct {
		field, v string
		to       *time.Time
	}{{"filter.since", req.Filter.Since, &f.Since}, {"filter.until", req.Filter.Until, &f.Until}} {
		if t.v == "" {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, t.v)
		if err != nil {
			return nil, apierr.Invalid(t.field, "must be an RFC 3339 time, such as 2030-01-02T15:04:05Z")
		}
		*t.to = at.UTC()
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && !f.Until.After(f.Since) {
		return nil, apierr.Invalid("filter.until", "must be after since")
	}
	if f.Error = strings.TrimSpace(req.Filter.Q); utf8.RuneCountInString(f.Error) > MaxRunQuery {
		return nil, apierr.Invalid("filter.q", "is at most 200 characters")
	}
	if plan.owner, err = filterOwner(req.Filter.Owner); err != nil {
		return nil, err
	}
	plan.search = f
	return plan, nil
}

// listDeadLetters pages through the caller's dead letters (an
// administrator's: everyone's, or one owner's with ?owner=), newest first,
// with the filters of GET /api/v1/runs but status.
func (s *Server) listDeadLetters(c *echo.Context) error {
	if v := c.QueryParam("status"); v != "" && v != string(job.RunPermanentlyFailed) {
		return apierr.Invalid("status", "dead letters are permanently_failed runs; leave status out")
	}
	f, limit, err := s.runSearch(c, false)
	if err != nil {
		return err
	}
	f.Status, f.Dead, f.Limit = job.RunPermanentlyFailed, true, limit+1
	runs, resume, err := s.store.SearchRuns(c.Request().Context(), f)
	if err != nil {
		return apierr.Dependency(err)
	}
	var out DeadLetterList
	out.DeadLetters, out.NextCursor = foundPage(runs, limit, resume)
	return writeJSON(c, http.StatusOK, out)
}

// errDeadLetterNotFound is the 404 of a dead letter that is not the
// caller's, or no longer one.
var errDeadLetterNotFound = apierr.New(http.StatusNotFound, apierr.CodeNotFound, "",
	"no such dead letter: the id is unknown, another user's, or was replayed or purged")

// deadLetterID reads the :id of a dead-letter route.
func deadLetterID(c *echo.Context) (uuid.UUID, error) {
	id, err := uuid.Parse(c.Param("id"))
	if err != nil {
		return uuid.Nil, errDeadLetterNotFound
	}
	return id, nil
}

// getDeadLetter shows one dead letter: the attempt that ended it, its
// error and output, and its job's name and type.
func (s *Server) getDeadLetter(c *echo.Context) error {
	id, err := deadLetterID(c)
	if err != nil {
		return err
	}
	run, err := s.store.GetDeadLetter(c.Request().Context(), access.Caller(c).Owner(), id)
	if errors.Is(err, job.ErrNotFound) {
		return errDeadLetterNotFound
	}
	if err != nil {
		return apierr.Dependency(err)
	}
	return writeJSON(c, http.StatusOK, foundRunView(&run))
}

// replayDeadLetter gives one dead letter's occurrence one more attempt,
// now, as POST /api/v1/jobs/{id}/retry does for that occurrence: 202 with
// the attempt and its idempotency key.
func (s *Server) replayDeadLetter(c *echo.Context) error {
	id, err := deadLetterID(c)
	if err != nil {
		return err
	}
	p := access.Caller(c)
	ctx := c.Request().Context()
	found, err := s.store.DeadLetters(ctx, p.Owner(), []uuid.UUID{id})
	if err != nil {
		return apierr.Dependency(err)
	}
	if len(found) == 0 {
		return errDeadLetterNotFound
	}
	if err := s.allowJobs(c, 1); err != nil {
		return err
	}
	d := found[0]
	occ, err := s.jobs.Retry(ctx, p.Owner(), d.JobID, d.ScheduledFor, s.now(), p.Audit(store.ActionJobRetry))
	if err != nil {
		return editError(err, errors.Unwrap(err))
	}
	return writeJSON(c, http.StatusAccepted, Retried{JobID: occ.JobID, ScheduledFor: Time{occ.ScheduledFor}, Attempt: occ.Attempt, IdempotencyKey: occ.Key()})
}

// purgeDeadLetter takes one dead letter out of the list: 204. The run
// stays in its job's history until run retention drops it.
func (s *Server) purgeDeadLetter(c *echo.Context) error {
	id, err := deadLetterID(c)
	if err != nil {
		return err
	}
	p := access.Caller(c)
	purged, err := s.store.PurgeDeadLetters(c.Request().Context(), p.Owner(), []uuid.UUID{id})
	if err != nil {
		return apierr.Dependency(err)
	}
	if len(purged) == 0 {
		return errDeadLetterNotFound
	}
	s.auditDead(c, p, deadPurge, 1, purged)
	return c.NoContent(http.StatusNoContent)
}

// replayDeadLetters and purgeDeadLetters act on many dead letters: the
// ids given, or those a filter selects (at most MaxBulkJobs; more is 413).
func (s *Server) replayDeadLetters(c *echo.Context) error { return s.actOnDead(c, deadReplay) }
func (s *Server) purgeDeadLetters(c *echo.Context) error  { return s.actOnDead(c, deadPurge) }

// actOnDead replays or purges the dead letters a request selects. An id
// that is not one of the caller's dead letters is skipped as not found; a
// replay refused (the job was cancelled, a recurring job is paused) is
// skipped with the reason. A replay counts as that many job changes
// against the caller's rate. The call leaves one audit entry.
func (s *Server) actOnDead(c *echo.Context, action string) error {
	raw, err := readBody(c)
	if err != nil {
		return err
	}
	plan, err := parseDead(raw)
	if err != nil {
		return err
	}
	p := access.Caller(c)
	ctx := c.Request().Context()
	owner := p.Owner()
	var ids []uuid.UUID
	var found []store.DeadLetter
	if plan.search != nil {
		if plan.owner != uuid.Nil {
			if !p.Admin && plan.owner != p.User {
				return apierr.New(http.StatusForbidden, apierr.CodeForbidden, "filter.owner", "only an administrator may act on another user's dead letters")
			}
			owner = plan.owner
		}
		if found, err = s.matchDead(c, *plan.search, owner); err != nil {
			return err
		}
		for _, d := range found {
			ids = append(ids, d.RunID)
		}
	} else {
		ids = plan.ids
		if found, err = s.store.DeadLetters(ctx, owner, ids); err != nil {
			return apierr.Dependency(err)
		}
	}
	out := DeadLetterResult{Action: action, DryRun: plan.dryRun, Matched: len(found), Skipped: []BulkSkipped{}}
	byID := make(map[uuid.UUID]store.DeadLetter, len(found))
	for _, d := range found {
		byID[d.RunID] = d
	}
	if plan.dryRun {
		out.IDs = []uuid.UUID{}
		for _, id := range ids {
			if _, ok := byID[id]; ok {
				out.IDs = append(out.IDs, id)
			} else {
				out.Skipped = append(out.Skipped, BulkSkipped{ID: id, Reason: "not found"})
			}
		}
		return writeJSON(c, http.StatusOK, out)
	}
	reasons := make(map[uuid.UUID]string, len(ids))
	switch action {
	case deadPurge:
		purged, err := s.store.PurgeDeadLetters(ctx, owner, ids)
		if err != nil {
			return apierr.Dependency(err)
		}
		for _, id := range purged {
			reasons[id] = ""
		}
	default:
		if len(found) > 0 {
			if err := s.allowJobs(c, len(found)); err != nil {
				return err
			}
		}
		s.replayAll(ctx, p, found, reasons)
	}
	var changed []uuid.UUID
	for _, id := range ids {
		r, ok := reasons[id]
		switch {
		case !ok:
			out.Skipped = append(out.Skipped, BulkSkipped{ID: id, Reason: "not found"})
		case r != "":
			out.Skipped = append(out.Skipped, BulkSkipped{ID: id, Reason: r})
		default:
			changed = append(changed, id)
		}
	}
	out.Changed = len(changed)
	s.auditDead(c, p, action, len(found), changed)
	return writeJSON(c, http.StatusOK, out)
}

// matchDead finds the dead letters search selects for owner, newest first,
// at most MaxBulkJobs: more is 413, and a filter that needed more than
// maxDeadPages walks is refused as too broad.
func (s *Server) matchDead(c *echo.Context, f store.RunSearch, owner uuid.UUID) ([]store.DeadLetter, error) {
	f.Owner, f.Now, f.Limit = owner, s.clock(), MaxBulkJobs+1
	var out []store.DeadLetter
	for range maxDeadPages {
		runs, resume, err := s.store.SearchRuns(c.Request().Context(), f)
		if err != nil {
			return nil, apierr.Dependency(err)
		}
		for _, r := range runs {
			out = append(out, store.DeadLetter{RunID: r.ID, JobID: r.JobID, Owner: r.Owner, ScheduledFor: r.ScheduledFor, Attempt: r.Attempt})
		}
		if len(out) > MaxBulkJobs {
			return nil, apierr.New(http.StatusRequestEntityTooLarge, apierr.CodeTooLarge, "filter",
				fmt.Sprintf("the filter selects more than %d dead letters; narrow it, or act in several calls", MaxBulkJobs))
		}
		if resume == nil {
			return out, nil
		}
		f.Before, f.Limit = resume, MaxBulkJobs+1-len(out)
	}
	return nil, apierr.Invalid("filter", "the filter looks at too many runs; narrow it by job, type or time")
}

// replayAll retries each dead letter's occurrence, bulkWorkers at a time,
// recording in reasons "" for each replayed and why for each refused.
func (s *Server) replayAll(ctx context.Context, p access.Principal, found []store.DeadLetter, reasons map[uuid.UUID]string) {
	ids := make([]uuid.UUID, len(found))
	byRun := make(map[uuid.UUID]store.DeadLetter, len(found))
	for i, d := range found {
		ids[i], byRun[d.RunID] = d.RunID, d
	}
	got := s.eachBounded(ctx, ids, func(ctx context.Context, id uuid.UUID, now time.Time) error {
		d := byRun[id]
		_, err := s.jobs.Retry(ctx, p.Owner(), d.JobID, d.ScheduledFor, now, store.Audit{})
		return err
	})
	for i, r := range got {
		reasons[ids[i]] = r
	}
}

// auditDead writes a dead-letter action's one audit entry: the action, how
// many it selected, and the run ids it changed. A failure is logged.
func (s *Server) auditDead(c *echo.Context, p access.Principal, action string, matched int, changed []uuid.UUID) {
	if changed == nil {
		changed = []uuid.UUID{}
	}
	raw, _ := json.Marshal(map[string]any{"action": action, "matched": matched, "changed": len(changed), "ids": changed})
	e := store.AuditEntry{At: s.now(), Actor: p.User, Action: store.ActionDeadLetters, TargetType: store.TargetBulk,
		TargetID: job.NewID(), Change: raw}
	if err := s.store.RecordAudit(context.WithoutCancel(c.Request().Context()), e); err != nil {
		s.log.Error("audit_failed", zap.String("action", e.Action), zap.Int("dead_letters", len(changed)), zap.Error(err))
	}
}
