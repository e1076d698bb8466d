package tock

import (
	"context"
	"iter"
	"net/http"
	"net/url"
	"time"
)

// JobsService holds the routes under /api/v1/jobs.
type JobsService struct{ c *Client }

// The overlap policies of a recurring job (JobSpec.Overlap).
const (
	OverlapAllow     = "allow"
	OverlapSkip      = "skip"
	OverlapBufferOne = "buffer_one"
)

// The actions of Bulk (BulkRequest.Action).
const (
	BulkPause   = "pause"
	BulkResume  = "resume"
	BulkCancel  = "cancel"
	BulkTrigger = "trigger"
	BulkRetry   = "retry"
)

// The actions of a DryRun: what PutDryRun or UpdateDryRun would do.
const (
	DryRunCreate    = "create"
	DryRunUpdate    = "update"
	DryRunUnchanged = "unchanged"
)

// JobFilter chooses the jobs of a listing; zero fields do not filter.
type JobFilter struct {
	// Status is scheduled, paused, completed, permanently_failed, cancelled
	// or expired.
	Status string
	Type   string
	// Labels keeps the jobs that carry every one of these labels.
	Labels map[string]string
	// Q is a job id, or part of a name (ignoring case).
	Q string
	// Owner (administrators; a user may name only themself) keeps one
	// user's jobs.
	Owner string
	// Limit is the page size, 1 to 500 (default 50).
	Limit int
	// Cursor is the NextCursor of the previous page.
	Cursor string
	// AtRisk keeps the jobs whose SLO is broken now (not with Labels).
	AtRisk bool
}

func (f JobFilter) query() url.Values {
	q := query{}
	q.str("status", f.Status)
	q.str("type", f.Type)
	q.labels(f.Labels)
	q.str("q", f.Q)
	q.str("owner", f.Owner)
	q.int("limit", f.Limit)
	q.str("cursor", f.Cursor)
	if f.AtRisk {
		q.str("at_risk", "true")
	}
	return url.Values(q)
}

// Create creates a job (POST /api/v1/jobs). It carries an Idempotency-Key,
// random unless given with IdempotencyKey, the same on every retry. A
// one-off job with a Debounce whose key a job of the owner's that has not
// started holds creates nothing: Create returns that job, which took the
// spec's payload and timing.
func (s *JobsService) Create(ctx context.Context, spec JobSpec, opts ...CallOption) (*Job, error) {
	var j Job
	if err := s.c.do(ctx, call{method: http.MethodPost, path: "/api/v1/jobs", body: spec, create: true}, &j, opts...); err != nil {
		return nil, err
	}
	return &j, nil
}

// Batch creates up to 10,000 jobs in one transaction (POST
// /api/v1/jobs:batch); any invalid job refuses them all with an *Error whose
// Items say which.
func (s *JobsService) Batch(ctx context.Context, req BatchRequest, opts ...CallOption) (*BatchCreated, error) {
	var out BatchCreated
	if err := s.c.do(ctx, call{method: http.MethodPost, path: "/api/v1/jobs:batch", body: req, create: true}, &out, opts...); err != nil {
		return nil, err
	}
	return &out, nil
}

// Get returns one job.
func (s *JobsService) Get(ctx context.Context, id string) (*Job, error) {
	var j Job
	if err := s.c.do(ctx, call{method: http.MethodGet, path: path("/api/v1/jobs", id)}, &j); err != nil {
		return nil, err
	}
	return &j, nil
}

// List returns one page of jobs, newest first.
func (s *JobsService) List(ctx context.Context, f JobFilter) (*JobList, error) {
	var out JobList
	if err := s.c.do(ctx, call{method: http.MethodGet, path: "/api/v1/jobs", query: f.query()}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// All yields every job f matches, page after page, from f.Cursor on.
func (s *JobsService) All(ctx context.Context, f JobFilter) iter.Seq2[Job, error] {
	return all(ctx, f.Cursor, func(ctx context.Context, cursor string) ([]Job, string, error) {
		f.Cursor = cursor
		page, err := s.List(ctx, f)
		if err != nil {
			return nil, "", err
		}
		return page.Jobs, page.NextCursor, nil
	})
}

// Update changes the fields p sets, keeping the job's id (PATCH).
func (s *JobsService) Update(ctx context.Context, id string, p JobPatch, opts ...CallOption) (*Job, error) {
	var j Job
	if err := s.c.do(ctx, call{method: http.MethodPatch, path: path("/api/v1/jobs", id), body: p}, &j, opts...); err != nil {
		return nil, err
	}
	return &j, nil
}

// Cancel cancels a job (DELETE): a one-off job that has not started, a
// recurring job at any time.
func (s *JobsService) Cancel(ctx context.Context, id string, opts ...CallOption) error {
	return s.c.do(ctx, call{method: http.MethodDelete, path: path("/api/v1/jobs", id)}, nil, opts...)
}

// Purge removes a finished job now, with its runs and labels
// (DELETE ?purge=true); a job that can still run is a conflict.
func (s *JobsService) Purge(ctx context.Context, id string, opts ...CallOption) error {
	return s.c.do(ctx, call{method: http.MethodDelete, path: path("/api/v1/jobs", id), query: url.Values{"purge": {"true"}}}, nil, opts...)
}

// Pause stops a job from running until Resume.
func (s *JobsService) Pause(ctx context.Context, id string, opts ...CallOption) (*Job, error) {
	return s.action(ctx, id, "pause", opts)
}

// Resume lets a paused job run again.
func (s *JobsService) Resume(ctx context.Context, id string, opts ...CallOption) (*Job, error) {
	return s.action(ctx, id, "resume", opts)
}

func (s *JobsService) action(ctx context.Context, id, verb string, opts []CallOption) (*Job, error) {
	var j Job
	if err := s.c.do(ctx, call{method: http.MethodPost, path: path("/api/v1/jobs", id, verb)}, &j, opts...); err != nil {
		return nil, err
	}
	return &j, nil
}

// Trigger runs the job once now, besides its schedule.
func (s *JobsService) Trigger(ctx context.Context, id string, opts ...CallOption) (*Triggered, error) {
	var out Triggered
	if err := s.c.do(ctx, call{method: http.MethodPost, path: path("/api/v1/jobs", id, "trigger")}, &out, opts...); err != nil {
		return nil, err
	}
	return &out, nil
}

// Retry queues one more attempt, now, of a permanently failed occurrence:
// the one due at scheduledFor, or the latest when it is zero.
func (s *JobsService) Retry(ctx context.Context, id string, scheduledFor time.Time, opts ...CallOption) (*Retried, error) {
	var body retryRequest
	if !scheduledFor.IsZero() {
		body.ScheduledFor = &scheduledFor
	}
	var out Retried
	if err := s.c.do(ctx, call{method: http.MethodPost, path: path("/api/v1/jobs", id, "retry"), body: body}, &out, opts...); err != nil {
		return nil, err
	}
	return &out, nil
}

// Abort stops the job's running attempts, recorded aborted and never
// retried; a one-off job is cancelled with them.
func (s *JobsService) Abort(ctx context.Context, id string, opts ...CallOption) (*Aborted, error) {
	var out Aborted
	if err := s.c.do(ctx, call{method: http.MethodPost, path: path("/api/v1/jobs", id, "abort")}, &out, opts...); err != nil {
		return nil, err
	}
	return &out, nil
}

// Backfill runs the occurrences of a scheduled recurring job whose nominal
// times fall in the past range [req.From, req.To) and that never ran (POST
// /api/v1/jobs/{id}/backfill); the scheduler queues them a few at a time.
// It returns at once with the backfill running: follow it with
// Backfills.Get, stop it with Backfills.Cancel. It carries an
// Idempotency-Key like a create, so a retried call starts one backfill.
func (s *JobsService) Backfill(ctx context.Context, id string, req BackfillRequest, opts ...CallOption) (*Backfill, error) {
	var out Backfill
	if err := s.c.do(ctx, call{method: http.MethodPost, path: path("/api/v1/jobs", id, "backfill"), body: req, create: true}, &out, opts...); err != nil {
		return nil, err
	}
	return &out, nil
}

// Backfills returns the job's backfills, newest first (one bounded list,
// not pages).
func (s *JobsService) Backfills(ctx context.Context, id string) ([]Backfill, error) {
	var out BackfillList
	if err := s.c.do(ctx, call{method: http.MethodGet, path: path("/api/v1/jobs", id, "backfills")}, &out); err != nil {
		return nil, err
	}
	return out.Backfills, nil
}

// Next returns up to n (1 to 100; 0 for the server's 10) coming
// occurrences of the job; those its calendars skip are left out
// (NextWithSkipped lists them too).
func (s *JobsService) Next(ctx context.Context, id string, n int) ([]Upcoming, error) {
	out, err := s.NextWithSkipped(ctx, id, n)
	if err != nil {
		return nil, err
	}
	return out.Next, nil
}

// NextWithSkipped is Next with the occurrences before the last of them
// that the job's calendars (SkipCalendars) skip, and why.
func (s *JobsService) NextWithSkipped(ctx context.Context, id string, n int) (*Occurrences, error) {
	q := query{}
	q.int("n", n)
	var out upcomingList
	if err := s.c.do(ctx, call{method: http.MethodGet, path: path("/api/v1/jobs", id, "next"), query: url.Values(q)}, &out); err != nil {
		return nil, err
	}
	return occurrences(out), nil
}

// Runs returns one page of the job's attempts, newest first; limit 0 is the
// server's default.
func (s *JobsService) Runs(ctx context.Context, id string, limit int, cursor string) (*RunList, error) {
	q := query{}
	q.int("limit", limit)
	q.str("cursor", cursor)
	var out RunList
	if err := s.c.do(ctx, call{method: http.MethodGet, path: path("/api/v1/jobs", id, "runs"), query: url.Values(q)}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// AllRuns yields every attempt of the job, newest first.
func (s *JobsService) AllRuns(ctx context.Context, id string) iter.Seq2[Run, error] {
	return all(ctx, "", func(ctx context.Context, cursor string) ([]Run, string, error) {
		page, err := s.Runs(ctx, id, 0, cursor)
		if err != nil {
			return nil, "", err
		}
		return page.Runs, page.NextCursor, nil
	})
}

// Put creates the job spec describes under key (created true), or replaces
// the definition of the live job that holds the key in place, keeping its id
// (PUT /api/v1/jobs/by-key/{key}). spec.Key may be empty or must equal key.
func (s *JobsService) Put(ctx context.Context, key string, spec JobSpec, opts ...CallOption) (job *Job, created bool, err error) {
	var j Job
	var code int
	rq := call{method: http.MethodPut, path: path("/api/v1/jobs/by-key", key), body: spec, create: true, status: &code}
	if err := s.c.do(ctx, rq, &j, opts...); err != nil {
		return nil, false, err
	}
	return &j, code == http.StatusCreated, nil
}

// PutDryRun asks what Put would do, and does nothing (PUT
// /api/v1/jobs/by-key/{key}?dry_run=true): create, update (with the
// fields that would change, a secret as its fingerprint) or unchanged. A
// request Put would refuse is refused the same way.
func (s *JobsService) PutDryRun(ctx context.Context, key string, spec JobSpec) (*DryRun, error) {
	var out DryRun
	rq := call{method: http.MethodPut, path: path("/api/v1/jobs/by-key", key), body: spec, readOnly: true,
		query: url.Values{"dry_run": {"true"}}}
	if err := s.c.do(ctx, rq, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// UpdateDryRun asks what Update would change, and changes nothing.
func (s *JobsService) UpdateDryRun(ctx context.Context, id string, p JobPatch) (*DryRun, error) {
	var out DryRun
	rq := call{method: http.MethodPatch, path: path("/api/v1/jobs", id), body: p, readOnly: true,
		query: url.Values{"dry_run": {"true"}}}
	if err := s.c.do(ctx, rq, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// GetByKey returns the caller's live job that holds key; owner
// (administrators) looks among another user's jobs.
func (s *JobsService) GetByKey(ctx context.Context, key, owner string) (*Job, error) {
	q := query{}
	q.str("owner", owner)
	var j Job
	if err := s.c.do(ctx, call{method: http.MethodGet, path: path("/api/v1/jobs/by-key", key), query: url.Values(q)}, &j); err != nil {
		return nil, err
	}
	return &j, nil
}

// CancelByKey cancels the live job that holds key.
func (s *JobsService) CancelByKey(ctx context.Context, key, owner string, opts ...CallOption) error {
	q := query{}
	q.str("owner", owner)
	return s.c.do(ctx, call{method: http.MethodDelete, path: path("/api/v1/jobs/by-key", key), query: url.Values(q)}, nil, opts...)
}

// Bulk applies one action to many jobs (POST /api/v1/jobs:bulk). It carries
// an Idempotency-Key like a create, so a retried bulk changes nothing twice.
func (s *JobsService) Bulk(ctx context.Context, req BulkRequest, opts ...CallOption) (*BulkResult, error) {
	var out BulkResult
	if err := s.c.do(ctx, call{method: http.MethodPost, path: "/api/v1/jobs:bulk", body: req, create: true}, &out, opts...); err != nil {
		return nil, err
	}
	return &out, nil
}

// Counts counts the caller's jobs by status (GET /api/v1/jobs:counts);
// owner (administrators) counts one user's. A count that cannot finish
// within the server's 3 s is an *Error asking to name an owner.
func (s *JobsService) Counts(ctx context.Context, owner string) (*JobCounts, error) {
	q := query{}
	q.str("owner", owner)
	var out JobCounts
	if err := s.c.do(ctx, call{method: http.MethodGet, path: "/api/v1/jobs:counts", query: url.Values(q)}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
