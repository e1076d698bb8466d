package main

import (
	"context"
	"sync"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/tockhq/tock/pkg/queue"
)

// abortPoll is how often a worker looks for abort requests: an abort stops
// an attempt within about this long, plus the time the attempt takes to
// notice its context ended.
const abortPoll = 500 * time.Millisecond

// abortOverlap is how far back each poll looks again: a request is stamped
// with its dashboard's clock before it is written, so requests can land out
// of their order by as long as a request takes to write (at most a few
// seconds); those seen already are skipped.
const abortOverlap = 30 * time.Second

// abortedError is the cause an aborted attempt's context ends with.
type abortedError struct {
	req queue.AbortRequest
}

func (e *abortedError) Error() string {
	if e.req.Owner != uuid.Nil {
		return "aborted: its owner was disabled by " + e.req.Actor.String()
	}
	return "aborted by " + e.req.Actor.String()
}

// attempt is one attempt this worker is running.
type attempt struct {
	job, owner uuid.UUID
	started    time.Time
	stop       context.CancelCauseFunc
}

// attempts is the registry of the attempts a worker is running, so that an
// abort request can stop them.
type attempts struct {
	mu  sync.Mutex
	all map[*attempt]struct{}
}

func newAttempts() *attempts { return &attempts{all: map[*attempt]struct{}{}} }

func (a *attempts) add(at *attempt) {
	a.mu.Lock()
	a.all[at] = struct{}{}
	a.mu.Unlock()
}

func (a *attempts) remove(at *attempt) {
	a.mu.Lock()
	delete(a.all, at)
	a.mu.Unlock()
}

// abort stops the attempts req names that started at or before it was
// made, and returns how many.
func (a *attempts) abort(req queue.AbortRequest) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for at := range a.all {
		if at.started.After(req.At) {
			continue
		}
		if req.Job != uuid.Nil && at.job == req.Job || req.Owner != uuid.Nil && at.owner == req.Owner {
			at.stop(&abortedError{req: req})
			n++
		}
	}
	return n
}

// abortWatcher stops the attempts abort requests name.
type abortWatcher struct {
	w        *Worker
	attempts *attempts
}

// run polls for abort requests until ctx ends and stops the attempts they
// name. A request is acted on once; requests older than the worker are not
// looked at, since no attempt of this worker started before them.
func (a *abortWatcher) run(ctx context.Context) {
	c := a.w
	t := time.NewTicker(abortPoll)
	defer t.Stop()
	since := c.Clock().Add(-abortPoll)
	seen := map[queue.AbortRequest]bool{}
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		reqs, err := c.Queue.Aborts(ctx, since)
		switch {
		case err != nil && !failing && ctx.Err() == nil:
			c.Log.Warn("read_aborts_failed", zap.Error(err))
			failing = true
			continue
		case err != nil:
			continue
		}
		failing = false
		latest := since
		for _, req := range reqs {
			latest = maxTime(latest, req.At)
			if seen[req] {
				continue
			}
			seen[req] = true
			if n := a.attempts.abort(req); n > 0 {
				c.Log.Info("attempts_aborted", zap.Int("attempts", n), zap.Stringer("job_id", req.Job),
					zap.Stringer("owner", req.Owner), zap.Stringer("actor", req.Actor))
			}
		}
		// The next poll looks again from abortOverlap before the latest
		// request; what is older than that is forgotten.
		since = maxTime(since, latest.Add(-abortOverlap))
		for req := range seen {
			if req.At.Before(since) {
				delete(seen, req)
			}
		}
	}
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
