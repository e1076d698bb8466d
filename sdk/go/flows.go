package tock

import (
	"context"
	"iter"
	"net/http"
	"net/url"
	"strconv"
)

// FlowsService holds the routes over flow keys: an owner's own limits on
// attempts in flight and starts per period, shared by every job whose
// flow names the key, with pause and resume.
type FlowsService struct{ c *Client }

// List returns one page of the caller's flow keys in key order, each with
// what it has in flight and waiting now; cursor is "" for the first page.
func (s *FlowsService) List(ctx context.Context, limit int, cursor string) (*FlowList, error) {
	q := url.Values{}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	var out FlowList
	if err := s.c.do(ctx, call{method: http.MethodGet, path: "/api/v1/flows", query: q}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// All yields every flow key of the caller's, page after page.
func (s *FlowsService) All(ctx context.Context) iter.Seq2[Flow, error] {
	return all(ctx, "", func(ctx context.Context, cursor string) ([]Flow, string, error) {
		page, err := s.List(ctx, 0, cursor)
		if err != nil {
			return nil, "", err
		}
		return page.Flows, page.NextCursor, nil
	})
}

// Get returns one flow key.
func (s *FlowsService) Get(ctx context.Context, key string) (*Flow, error) {
	var out Flow
	if err := s.c.do(ctx, call{method: http.MethodGet, path: path("/api/v1/flows", key)}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Put sets a flow key's limits and pause as a whole (a limit left zero is
// none), creating the key if new.
func (s *FlowsService) Put(ctx context.Context, key string, req FlowRequest, opts ...CallOption) (*Flow, error) {
	var out Flow
	if err := s.c.do(ctx, call{method: http.MethodPut, path: path("/api/v1/flows", key), body: req}, &out, opts...); err != nil {
		return nil, err
	}
	return &out, nil
}

// Pause holds back everything of the key that comes due; attempts already
// running go on.
func (s *FlowsService) Pause(ctx context.Context, key string, opts ...CallOption) (*Flow, error) {
	return s.action(ctx, key, "pause", opts)
}

// Resume lets the key's waiting occurrences out, in due order.
func (s *FlowsService) Resume(ctx context.Context, key string, opts ...CallOption) (*Flow, error) {
	return s.action(ctx, key, "resume", opts)
}

func (s *FlowsService) action(ctx context.Context, key, action string, opts []CallOption) (*Flow, error) {
	var out Flow
	if err := s.c.do(ctx, call{method: http.MethodPost, path: path("/api/v1/flows", key, action)}, &out, opts...); err != nil {
		return nil, err
	}
	return &out, nil
}

// Delete drops a flow key's limits: its jobs run without them, and what
// waits comes out at once.
func (s *FlowsService) Delete(ctx context.Context, key string, opts ...CallOption) error {
	return s.c.do(ctx, call{method: http.MethodDelete, path: path("/api/v1/flows", key)}, nil, opts...)
}
