package tock

import (
	"context"
	"iter"
	"net/http"
)

// DeadLettersService holds the routes over dead letters: occurrences whose
// last attempt ended permanently_failed (retries ran out, or dead-lettered
// after TOCK_MAX_DELIVERIES) that nobody replayed or purged since. A dead
// letter is named by that attempt's run id.
type DeadLettersService struct{ c *Client }

// List returns one page of the caller's dead letters (an administrator's:
// everyone's) that f matches, newest first; f's Status is not used. A page
// may be short and still have a NextCursor.
func (s *DeadLettersService) List(ctx context.Context, f RunFilter) (*DeadLetterList, error) {
	f.Status = ""
	var out DeadLetterList
	if err := s.c.do(ctx, call{method: http.MethodGet, path: "/api/v1/dead-letters", query: f.query()}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// All yields every dead letter f matches, page after page.
func (s *DeadLettersService) All(ctx context.Context, f RunFilter) iter.Seq2[Run, error] {
	return all(ctx, f.Cursor, func(ctx context.Context, cursor string) ([]Run, string, error) {
		f.Cursor = cursor
		page, err := s.List(ctx, f)
		if err != nil {
			return nil, "", err
		}
		return page.DeadLetters, page.NextCursor, nil
	})
}

// Get returns one dead letter: the attempt that ended its occurrence.
func (s *DeadLettersService) Get(ctx context.Context, id string) (*Run, error) {
	var out Run
	if err := s.c.do(ctx, call{method: http.MethodGet, path: path("/api/v1/dead-letters", id)}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Replay gives the dead letter's occurrence one more attempt, now, under
// the occurrence's own idempotency key, as Jobs.Retry does.
func (s *DeadLettersService) Replay(ctx context.Context, id string, opts ...CallOption) (*Retried, error) {
	var out Retried
	if err := s.c.do(ctx, call{method: http.MethodPost, path: path("/api/v1/dead-letters", id, "replay")}, &out, opts...); err != nil {
		return nil, err
	}
	return &out, nil
}

// Purge takes the dead letter out of the list; its run stays in its job's
// history until run retention drops it.
func (s *DeadLettersService) Purge(ctx context.Context, id string, opts ...CallOption) error {
	return s.c.do(ctx, call{method: http.MethodDelete, path: path("/api/v1/dead-letters", id)}, nil, opts...)
}

// ReplayMany replays the dead letters req names or selects, up to 10,000
// (POST /api/v1/dead-letters:replay); DryRun only counts and lists them.
// It carries an Idempotency-Key like a create, so a retried call replays
// nothing twice.
func (s *DeadLettersService) ReplayMany(ctx context.Context, req DeadLetterRequest, opts ...CallOption) (*DeadLetterResult, error) {
	return s.many(ctx, "/api/v1/dead-letters:replay", req, opts)
}

// PurgeMany purges the dead letters req names or selects, up to 10,000
// (POST /api/v1/dead-letters:purge); DryRun only counts and lists them.
func (s *DeadLettersService) PurgeMany(ctx context.Context, req DeadLetterRequest, opts ...CallOption) (*DeadLetterResult, error) {
	return s.many(ctx, "/api/v1/dead-letters:purge", req, opts)
}

func (s *DeadLettersService) many(ctx context.Context, route string, req DeadLetterRequest, opts []CallOption) (*DeadLetterResult, error) {
	var out DeadLetterResult
	if err := s.c.do(ctx, call{method: http.MethodPost, path: route, body: req, create: true}, &out, opts...); err != nil {
		return nil, err
	}
	return &out, nil
}
