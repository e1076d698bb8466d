package tock

import (
	"context"
	"net/http"
)

// BackfillsService holds the routes under /api/v1/backfills: the progress
// of a backfill that Jobs.Backfill started, and its cancellation. A
// backfill is named by its own id, whichever job it backfills.
type BackfillsService struct{ c *Client }

// The statuses of a backfill (Backfill.Status): running until every
// occurrence of its range was queued and ended, or it was cancelled.
const (
	BackfillRunning   = "running"
	BackfillCompleted = "completed"
	BackfillCancelled = "cancelled"
)

// Get returns one backfill with its progress.
func (s *BackfillsService) Get(ctx context.Context, id string) (*Backfill, error) {
	var out Backfill
	if err := s.c.do(ctx, call{method: http.MethodGet, path: path("/api/v1/backfills", id)}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Cancel stops a running backfill: nothing more of it is queued and none
// of its occurrences starts afterwards (one running ends as it would). It
// returns the backfill, cancelled; one cancelled already comes back as it
// is, and one that completed is a conflict (IsConflict).
func (s *BackfillsService) Cancel(ctx context.Context, id string, opts ...CallOption) (*Backfill, error) {
	var out Backfill
	if err := s.c.do(ctx, call{method: http.MethodDelete, path: path("/api/v1/backfills", id)}, &out, opts...); err != nil {
		return nil, err
	}
	return &out, nil
}
