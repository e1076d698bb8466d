// Dead-lettering: an entry delivered more than MaxDeliveries times without an
// outcome (Postgres refused to start it, or it took its worker down, each
// time) is recorded permanently_failed, saying why, and moved to the dead
// stream, instead of being redelivered forever. A reclaim that finds the
// attempt leased to a live worker is not a delivery without an outcome:
// resolve gives it back, so a long attempt reclaimed every visibility timeout
// while it runs is still taken over, not dead-lettered, if its worker dies.

package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/tockhq/tock/pkg/queue"
	"github.com/tockhq/tock/pkg/store"
)

// deadReason is what an attempt dead-lettered after deliveries deliveries
// says, in its run row and in the dead stream: never a payload, URL or
// secret, only what the worker knows and where to look.
func (c *Consumer) deadReason(deliveries int) string {
	return fmt.Sprintf("dead-lettered: delivered %d times without an outcome (TOCK_MAX_DELIVERIES is %d): "+
		"Postgres refused to start it or its worker died each time; see the workers' logs", deliveries, c.MaxDeliveries)
}

// deadLetter ends the attempts of overdue entries in one statement
// (store.DeadLetter; halved as starts are if Postgres refuses its data),
// moves the entries it ended to the dead stream with their reason, and
// acknowledges them. An entry whose attempt must not be ended (leased to a
// live worker, finished, of a job no longer scheduled) is settled as any
// entry not started is (resolve). One Postgres cannot even record is set
// aside all the same, saying so, and logged; while Postgres is down the
// entries stay pending. The entries' slots are the caller's to give back.
func (c *Consumer) deadLetter(ctx context.Context, q *queue.Shard, msgs []queue.Message) {
	reqs := make([]store.DeadLetter, len(msgs))
	byMember := make(map[string]queue.Message, len(msgs))
	for i, m := range msgs {
		reqs[i] = store.DeadLetter{Occurrence: m.Occurrence, DueAt: m.DueAt, Reason: c.deadReason(m.Deliveries)}
		byMember[attemptKey(m.Occurrence)] = m
	}
	var dead []queue.Message
	done, tried := bisect(ctx, c.Log, reqs, func(part []store.DeadLetter) ([]store.DeadLettered, error) {
		return c.Store.DeadLetter(ctx, part, c.Clock())
	}, func(r store.DeadLetter, err error) {
		key := attemptKey(r.Occurrence)
		m := byMember[key]
		delete(byMember, key)
		c.Log.Error("dead_letter_refused", zap.String("job_id", r.Occurrence.JobID.String()),
			zap.Time("scheduled_for", r.Occurrence.ScheduledFor), zap.Int("attempt", r.Occurrence.Attempt),
			zap.Int("deliveries", m.Deliveries), zap.String("code", pgCode(err)))
		m.Err = fmt.Errorf("%s; Postgres refused to record it (SQLSTATE %s), so its job is unchanged", r.Reason, pgCode(err))
		dead = append(dead, m)
	})
	var recurring []uuid.UUID
	for _, d := range done {
		key := attemptKey(d.Occurrence)
		m, ok := byMember[key]
		if !ok {
			continue // cannot happen: the store returns occurrences it was given
		}
		delete(byMember, key)
		c.Log.Warn("entry_dead_lettered", zap.String("job_id", d.Occurrence.JobID.String()),
			zap.Time("scheduled_for", d.Occurrence.ScheduledFor), zap.Int("attempt", d.Occurrence.Attempt),
			zap.Int("deliveries", m.Deliveries))
		m.Err = errors.New(c.deadReason(m.Deliveries))
		dead = append(dead, m)
		if d.Recurring {
			recurring = append(recurring, d.Occurrence.JobID)
		}
	}
	if len(dead) > 0 {
		// A failure leaves them pending: their next delivery finds the
		// attempt finished and acknowledges it, or dead-letters it again.
		if err := q.SetAside(ctx, dead); err != nil {
			c.Log.Warn("set_aside_failed", zap.Error(err))
		} else {
			c.Metrics.DeadLettered.Add(float64(len(dead)))
			c.settled.Signal()
		}
	}
	// A dead-lettered occurrence failed permanently: it counts towards
	// pausing a recurring job that keeps failing.
	c.pause(ctx, recurring)
	if tried && len(byMember) > 0 {
		c.resolve(ctx, q, byMember)
	}
}
