package cluster

import (
	"context"
	"fmt"
	"net/url"
	"time"
)

// WaitUntil checks cond every interval until it holds or timeout passes, and
// reports whether it held. Tests wait on it rather than sleep.
func WaitUntil(timeout, interval time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return true
		}
		if !time.Now().Before(deadline) {
			return false
		}
		time.Sleep(interval)
	}
}

// SleepUntil lets time pass until at. Tests use it only to let an instant go
// by (an old due time, an outage), never as an assertion.
func SleepUntil(ctx context.Context, at time.Time) {
	d := time.Until(at)
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// ForJob returns the deliveries of one job, in arrival order.
func ForJob(ds []Delivery, jobID string) []Delivery {
	var out []Delivery
	for _, d := range ds {
		if d.JobID == jobID {
			out = append(out, d)
		}
	}
	return out
}

// CreateJob sends POST /api/v1/jobs and wants 201.
func (a *API) CreateJob(ctx context.Context, spec any) (Job, error) {
	var j Job
	code, err := a.Do(ctx, "POST", "/api/v1/jobs", spec, &j)
	if err != nil {
		return j, err
	}
	if code != 201 {
		return j, fmt.Errorf("create job: status %d", code)
	}
	return j, nil
}

// GetJob reads one job.
func (a *API) GetJob(ctx context.Context, id string) (Job, error) {
	var j Job
	code, err := a.Do(ctx, "GET", "/api/v1/jobs/"+id, nil, &j)
	if err != nil {
		return j, err
	}
	if code != 200 {
		return j, fmt.Errorf("get job %s: status %d", id, code)
	}
	return j, nil
}

// Action sends POST /api/v1/jobs/{id}/{action} (pause, resume, trigger)
// and returns the status code.
func (a *API) Action(ctx context.Context, id, action string) (int, error) {
	return a.Do(ctx, "POST", "/api/v1/jobs/"+id+"/"+action, nil, nil)
}

// Runs reads every run of a job, newest first, following next_cursor with
// pages of pageSize runs.
func (a *API) Runs(ctx context.Context, id string, pageSize int) ([]Run, error) {
	var all []Run
	cursor := ""
	for range 10_000 {
		q := url.Values{"limit": {fmt.Sprint(pageSize)}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		var page struct {
			Runs       []Run  `json:"runs"`
			NextCursor string `json:"next_cursor"`
		}
		code, err := a.Do(ctx, "GET", "/api/v1/jobs/"+id+"/runs?"+q.Encode(), nil, &page)
		if err != nil {
			return nil, err
		}
		if code != 200 {
			return nil, fmt.Errorf("list runs of %s: status %d", id, code)
		}
		all = append(all, page.Runs...)
		if page.NextCursor == "" {
			return all, nil
		}
		cursor = page.NextCursor
	}
	return nil, fmt.Errorf("list runs of %s: too many pages", id)
}
