package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v5"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/jobspec"
	"github.com/tockhq/tock/pkg/lifecycle"
	"github.com/tockhq/tock/pkg/queue"
	"github.com/tockhq/tock/pkg/store"
	"github.com/tockhq/tock/services/dashboard/access"
	"github.com/tockhq/tock/services/dashboard/apierr"
)

// The flow key routes. A flow key is an owner's own name for jobs that
// share limits (a job's "flow"): attempts in flight, starts per period, and
// a pause. An administrator acts on another user's keys with ?owner=.

// Flow is a flow key as the API shows it, with what it has running and
// waiting now.
type Flow struct {
	Key string `json:"key"`
	// Concurrency is the most attempts in flight at once; absent for none.
	Concurrency int `json:"concurrency,omitempty"`
	// Rate is the most starts in any window of its period, "<count>/<period>";
	// absent for none.
	Rate   string `json:"rate,omitempty"`
	Paused bool   `json:"paused"`
	// InFlight is the key's attempts in flight (running, or handed to a
	// worker to start); Waiting its due occurrences held back by its limits.
	InFlight  int64     `json:"in_flight"`
	Waiting   int64     `json:"waiting"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// FlowList is one page of GET /api/v1/flows, in key order; NextCursor is ""
// on the last page.
type FlowList struct {
	Flows      []Flow `json:"flows"`
	NextCursor string `json:"next_cursor"`
}

// flowRequest is the body of PUT /api/v1/flows/{key}: the key's limits as a
// whole (a limit left out is none) and whether it is paused.
type flowRequest struct {
	Concurrency *int    `json:"concurrency"`
	Rate        *string `json:"rate"`
	Paused      *bool   `json:"paused"`
}

var errFlowNotFound = apierr.New(http.StatusNotFound, apierr.CodeNotFound, "key", "no such flow key")

// flowOwner is whose keys the request acts on: the caller's, or for an
// administrator the user named by ?owner=.
func flowOwner(c *echo.Context) (uuid.UUID, error) { return ownerParam(c, "flow keys") }

// ownerParam is whose things (what: "flow keys", "calendars") the request
// acts on: the caller's, or for an administrator the user named by
// ?owner= (403 for anyone else naming another user).
func ownerParam(c *echo.Context, what string) (uuid.UUID, error) {
	p := access.Caller(c)
	v := c.QueryParam("owner")
	if v == "" {
		return p.User, nil
	}
	id, err := uuid.Parse(v)
	if err != nil {
		return uuid.Nil, apierr.Invalid("owner", "must be a user id")
	}
	if id != p.User && !p.Admin {
		return uuid.Nil, apierr.New(http.StatusForbidden, apierr.CodeForbidden, "owner", "only an administrator may act on another user's "+what)
	}
	return id, nil
}

// flowKey reads the {key} path parameter.
func flowKey(c *echo.Context) (string, error) {
	k, err := url.PathUnescape(c.Param("key"))
	if err != nil {
		return "", apierr.Invalid("key", "is not a valid path segment")
	}
	if err := jobspec.ValidFlowKey("key", k); err != nil {
		return "", err
	}
	return k, nil
}

// flowViews shows flows with their states, read from Redis in one round
// trip; a Redis that cannot answer shows zeros rather than failing the list.
func (s *Server) flowViews(ctx context.Context, flows []*store.Flow) []Flow {
	lanes := make([]string, len(flows))
	for i, f := range flows {
		lanes[i] = f.Lane()
	}
	var states []queue.FlowState
	if s.queue != nil {
		states, _ = s.queue.FlowStates(ctx, lanes)
	}
	out := make([]Flow, len(flows))
	for i, f := range flows {
		out[i] = Flow{Key: f.Key, Concurrency: f.Concurrency, Paused: f.Paused, CreatedAt: f.CreatedAt, UpdatedAt: f.UpdatedAt}
		if f.Rate != nil {
			out[i].Rate = f.Rate.String()
		}
		if i < len(states) {
			out[i].InFlight, out[i].Waiting = states[i].InFlight, states[i].Waiting
		}
	}
	return out
}

// listFlows pages through the owner's flow keys in key order.
func (s *Server) listFlows(c *echo.Context) error {
	owner, err := flowOwner(c)
	if err != nil {
		return err
	}
	limit, err := pageSize(c)
	if err != nil {
		return err
	}
	after := ""
	if v := c.QueryParam("cursor"); v != "" {
		b, err := cursorEncoding.DecodeString(v)
		if err != nil || jobspec.ValidFlowKey("cursor", string(b)) != nil {
			return apierr.Invalid("cursor", "is not a cursor this list gave")
		}
		after = string(b)
	}
	ctx := c.Request().Context()
	flows, err := s.store.Flows(ctx, owner, after, limit+1)
	if err != nil {
		return apierr.Dependency(err)
	}
	page := FlowList{Flows: []Flow{}}
	if len(flows) > limit {
		flows = flows[:limit]
		page.NextCursor = cursorEncoding.EncodeToString([]byte(flows[limit-1].Key))
	}
	page.Flows = append(page.Flows, s.flowViews(ctx, flows)...)
	return writeJSON(c, http.StatusOK, page)
}

// namedFlow reads the owner and the {key} of a request on one flow key.
func namedFlow(c *echo.Context) (uuid.UUID, string, error) {
	owner, err := flowOwner(c)
	if err != nil {
		return uuid.Nil, "", err
	}
	key, err := flowKey(c)
	return owner, key, err
}

// heldFlow reads the flow key a request names: 404 when its owner holds
// none of that name.
func (s *Server) heldFlow(c *echo.Context) (*store.Flow, error) {
	owner, key, err := namedFlow(c)
	if err != nil {
		return nil, err
	}
	f, err := s.store.GetFlow(c.Request().Context(), owner, key)
	if errors.Is(err, job.ErrNotFound) {
		return nil, errFlowNotFound
	}
	if err != nil {
		return nil, apierr.Dependency(err)
	}
	return f, nil
}

// getFlow shows one flow key.
func (s *Server) getFlow(c *echo.Context) error {
	f, err := s.heldFlow(c)
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, s.flowViews(c.Request().Context(), []*store.Flow{f})[0])
}

// putFlow sets a flow key's limits and pause as a whole: 201 when it
// creates the key, 200 otherwise.
func (s *Server) putFlow(c *echo.Context) error {
	owner, key, err := namedFlow(c)
	if err != nil {
		return err
	}
	var req flowRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	f := store.Flow{Owner: owner, Key: key}
	if req.Concurrency != nil {
		if *req.Concurrency < 1 || *req.Concurrency > job.MaxFlowConcurrency {
			return apierr.Invalid("concurrency", fmt.Sprintf("must be from 1 to %d", job.MaxFlowConcurrency))
		}
		f.Concurrency = *req.Concurrency
	}
	if req.Rate != nil && *req.Rate != "" {
		r, err := job.ParseRate(*req.Rate)
		if err != nil {
			return apierr.Invalid("rate", err.Error())
		}
		f.Rate = &r
	}
	if req.Paused != nil {
		f.Paused = *req.Paused
	}
	return s.storeFlow(c, f)
}

// pauseFlow and resumeFlow hold back, or let out, a key's occurrences,
// keeping its limits; 404 for a key the owner does not hold.
func (s *Server) pauseFlow(c *echo.Context) error  { return s.setFlowPaused(c, true) }
func (s *Server) resumeFlow(c *echo.Context) error { return s.setFlowPaused(c, false) }

func (s *Server) setFlowPaused(c *echo.Context, paused bool) error {
	f, err := s.heldFlow(c)
	if err != nil {
		return err
	}
	f.Paused = paused
	return s.storeFlow(c, *f)
}

// storeFlow writes f to Postgres, then to Redis for the publishers; should
// Redis refuse, the scheduler's leader writes it at its next loader round.
func (s *Server) storeFlow(c *echo.Context, f store.Flow) error {
	ctx := c.Request().Context()
	stored, created, err := s.store.PutFlow(ctx, f, s.now(), s.quotas.MaxFlowKeys, access.Caller(c).Audit(store.ActionFlowPut))
	var fe *store.FlowKeysError
	if errors.As(err, &fe) {
		return flowKeysError(fe)
	}
	if err != nil {
		return apierr.Dependency(err)
	}
	if s.queue != nil {
		rctx, cancel := lifecycle.AfterCommit(ctx)
		defer cancel()
		_ = s.queue.SetFlows(rctx, lifecycle.FlowLimits([]*store.Flow{stored}))
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	return writeJSON(c, status, s.flowViews(ctx, []*store.Flow{stored})[0])
}

// deleteFlow forgets a flow key's limits: its jobs run unlimited, and what
// waits comes out. A job that names the key creates it again, bare.
func (s *Server) deleteFlow(c *echo.Context) error {
	owner, key, err := namedFlow(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	err = s.store.DeleteFlow(ctx, owner, key, s.now(), access.Caller(c).Audit(store.ActionFlowDelete))
	if err != nil && !errors.Is(err, job.ErrNotFound) {
		return apierr.Dependency(err)
	}
	// Forgotten in Redis even when the row is gone already: a DELETE
	// repeated after Redis refused the first one finishes it.
	if s.queue != nil {
		rctx, cancel := lifecycle.AfterCommit(ctx)
		defer cancel()
		if ferr := s.queue.ForgetFlows(rctx, job.FlowLane(owner, key)); ferr != nil && err == nil {
			return apierr.Dependency(ferr)
		}
	}
	if err != nil {
		return errFlowNotFound
	}
	return c.NoContent(http.StatusNoContent)
}

func flowKeysError(e *store.FlowKeysError) error {
	return apierr.New(http.StatusTooManyRequests, apierr.CodeQuotaExceeded, "flow.key",
		fmt.Sprintf("the owner may hold at most %d flow keys (TOCK_LIMIT_MAX_FLOW_KEYS); delete unused ones with DELETE /api/v1/flows/{key}", e.Max))
}
