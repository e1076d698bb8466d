package tock

import (
	"context"
	"iter"
	"net/http"
	"net/url"
	"time"
)

// RunsService holds the routes over runs across jobs: /api/v1/runs and
// /api/v1/runs:stats.
type RunsService struct{ c *Client }

// RunFilter chooses the runs of a search; zero fields do not filter.
type RunFilter struct {
	Owner  string
	Status string
	Type   string
	// Job keeps one job's runs.
	Job    string
	Labels map[string]string
	// Since and Until bound the runs' scheduled times: [Since, Until).
	Since time.Time
	Until time.Time
	// Q finds text in the run's error, ignoring case.
	Q      string
	Limit  int
	Cursor string
}

func (f RunFilter) query() url.Values {
	q := query{}
	q.str("owner", f.Owner)
	q.str("status", f.Status)
	q.str("type", f.Type)
	q.str("job", f.Job)
	q.labels(f.Labels)
	q.time("since", f.Since)
	q.time("until", f.Until)
	q.str("q", f.Q)
	q.int("limit", f.Limit)
	q.str("cursor", f.Cursor)
	return url.Values(q)
}

// List returns one page of the runs of the caller's jobs (an
// administrator's: everyone's) that f matches, newest first. A page may be
// short and still have a NextCursor.
func (s *RunsService) List(ctx context.Context, f RunFilter) (*RunList, error) {
	var out RunList
	if err := s.c.do(ctx, call{method: http.MethodGet, path: "/api/v1/runs", query: f.query()}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// All yields every run f matches, page after page.
func (s *RunsService) All(ctx context.Context, f RunFilter) iter.Seq2[Run, error] {
	return all(ctx, f.Cursor, func(ctx context.Context, cursor string) ([]Run, string, error) {
		f.Cursor = cursor
		page, err := s.List(ctx, f)
		if err != nil {
			return nil, "", err
		}
		return page.Runs, page.NextCursor, nil
	})
}

// StatsFilter chooses the window and grouping of Stats.
type StatsFilter struct {
	Owner string
	// Since and Until default to the last 24 hours; at most 31 days apart.
	Since time.Time
	Until time.Time
	// GroupBy is status (default), type or job.
	GroupBy string
}

// Stats counts runs (GET /api/v1/runs:stats).
func (s *RunsService) Stats(ctx context.Context, f StatsFilter) (*RunStats, error) {
	q := query{}
	q.str("owner", f.Owner)
	q.time("since", f.Since)
	q.time("until", f.Until)
	q.str("group_by", f.GroupBy)
	var out RunStats
	if err := s.c.do(ctx, call{method: http.MethodGet, path: "/api/v1/runs:stats", query: url.Values(q)}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
