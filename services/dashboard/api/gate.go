package api

import (
	"context"
	"sync"

	"github.com/google/uuid"
	"github.com/labstack/echo/v5"

	"github.com/tockhq/tock/services/dashboard/access"
)

// userGate lets each user run one piece of costly work at a time (compiling
// and walking schedules): a user who sends a hundred expensive rules at once
// keeps one core busy, not all of them, and another user's requests find the
// rest free. Waiting ends with the request's context. Entries exist only
// while someone holds or waits for them, so the map stays as small as the
// number of users active at this instant.
type userGate struct {
	mu    sync.Mutex
	slots map[uuid.UUID]*gateSlot
}

type gateSlot struct {
	ch    chan struct{} // holds a token while someone is inside
	users int           // holders and waiters
}

func newUserGate() *userGate { return &userGate{slots: map[uuid.UUID]*gateSlot{}} }

// enter waits until user may go in, or ctx ends; the caller calls the
// returned release exactly once when done.
func (g *userGate) enter(ctx context.Context, user uuid.UUID) (release func(), err error) {
	g.mu.Lock()
	s := g.slots[user]
	if s == nil {
		s = &gateSlot{ch: make(chan struct{}, 1)}
		g.slots[user] = s
	}
	s.users++
	g.mu.Unlock()
	select {
	case s.ch <- struct{}{}:
		return func() { <-s.ch; g.leave(user, s) }, nil
	case <-ctx.Done():
		g.leave(user, s)
		return nil, ctx.Err()
	}
}

// evaluate runs f, the schedule work of the request, once the caller may:
// one at a time per user (see userGate), and only when needed is set (a job
// without a schedule costs nothing worth queueing for).
func (s *Server) evaluate(c *echo.Context, needed bool, f func() error) error {
	if !needed {
		return f()
	}
	release, err := s.evaluating.enter(c.Request().Context(), access.Caller(c).User)
	if err != nil {
		return err
	}
	defer release()
	return f()
}

func (g *userGate) leave(user uuid.UUID, s *gateSlot) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if s.users--; s.users == 0 {
		delete(g.slots, user)
	}
}
