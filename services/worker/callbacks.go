// Callbacks: a job's notify.callback is written with the outcome it tells,
// in the group commit's statement (store.FinishRuns), and the SLO alerts
// with the breach the scheduler records (store.ChangeSLO); both are
// delivered from there by a caller in every worker: it claims due callbacks for a lease,
// posts each on a goroutine of its own through the webhook executor (the
// same outbound rules, signed like every delivery, the same
// Idempotency-Key on every try), deletes it once its URL takes it, and
// puts it off by a backoff when the URL does not, until maxCallbackTries.
// A worker that dies mid-delivery leaves the callback to come due again
// when its lease ends: at least once. Deliveries never hold up attempts:
// they have their own bound (maxCallbacks at once, maxOwnerCallbacks of one
// owner, so one owner's dead URL cannot take every place).

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/jobtype"
	"github.com/tockhq/tock/pkg/store"
)

// Bounds of a worker's callback deliveries.
const (
	// maxCallbacks is the most delivered at once; maxOwnerCallbacks of
	// them of one owner.
	maxCallbacks      = 32
	maxOwnerCallbacks = 4
	// callbackTimeout bounds one delivery; callbackLease is how long a
	// claim holds a callback from other workers (a delivery and its
	// recording fit in it).
	callbackTimeout = 10 * time.Second
	callbackLease   = 30 * time.Second
	// callbackPoll is how often due callbacks are looked for when no
	// commit of this worker wrote one: retries, and those of other
	// workers' leases that ran out; callbackIdle while the last look found
	// none.
	callbackPoll = time.Second
	callbackIdle = 2 * time.Second
	// maxCallbackTries: a callback still refused after this many tries
	// (about 19 minutes of backoff with callbackBackoff, and the tries'
	// own time) is given up, logged and counted.
	maxCallbackTries   = 12
	callbackBackoffMax = 5 * time.Minute
)

// callbackBackoff is how long a callback waits after its tries-th failed
// delivery: 1 s, 2 s, 4 s, … up to callbackBackoffMax.
func callbackBackoff(tries int) time.Duration {
	return min(time.Second<<min(tries-1, 20), callbackBackoffMax)
}

// caller delivers the callbacks that are due.
type caller struct {
	w *Worker
	// wake is poked after a commit that wrote callbacks.
	wake chan struct{}
	mu   sync.Mutex
	// owners counts each owner's deliveries in flight.
	owners   map[uuid.UUID]int
	inflight int
	// after is where the next claim's walk over owners starts: after the
	// last owner the claim before served, so that when more owners have
	// callbacks due than there are places, each has its turn.
	after uuid.UUID
	done  sync.WaitGroup
	loop  sync.WaitGroup
}

func newCaller(w *Worker) *caller {
	return &caller{w: w, wake: make(chan struct{}, 1), owners: map[uuid.UUID]int{}}
}

// start looks for due callbacks until ctx ends; deliveries run under
// execCtx, which outlives ctx by the grace period.
func (c *caller) start(ctx, execCtx context.Context) {
	c.loop.Go(func() { c.run(ctx, execCtx) })
}

// stop waits for the loop, then for the deliveries in flight.
func (c *caller) stop() {
	c.loop.Wait()
	c.done.Wait()
}

// poke says that callbacks were written.
func (c *caller) poke() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *caller) run(ctx, execCtx context.Context) {
	t := time.NewTimer(callbackPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-c.wake:
		}
		wait := callbackPoll
		if !c.claim(ctx, execCtx) {
			wait = callbackIdle
		}
		if !t.Stop() {
			select {
			case <-t.C:
			default:
			}
		}
		t.Reset(wait)
	}
}

// claim takes as many due callbacks as there are free places, and starts
// their deliveries; it says whether any was due or in flight.
func (c *caller) claim(ctx, execCtx context.Context) bool {
	w := c.w
	c.mu.Lock()
	free := maxCallbacks - c.inflight
	inflight := make(map[uuid.UUID]int, len(c.owners))
	for o, n := range c.owners {
		inflight[o] = n
	}
	after := c.after
	c.mu.Unlock()
	if free <= 0 {
		return true
	}
	now := w.Clock()
	cbs, err := w.Store.ClaimCallbacks(ctx, now, now.Add(callbackLease), free, maxOwnerCallbacks, after, inflight)
	if err != nil {
		if ctx.Err() == nil {
			w.Log.Warn("callbacks_claim_failed", zap.Error(err))
		}
		return true
	}
	c.mu.Lock()
	switch {
	case len(cbs) == free:
		c.after = slices.MaxFunc(cbs, func(a, b store.Callback) int { return strings.Compare(a.Owner.String(), b.Owner.String()) }).Owner
	default:
		c.after = uuid.Nil // every owner with some due was served: from the first again
	}
	busy := c.inflight > 0
	c.mu.Unlock()
	if len(cbs) == 0 {
		if after != uuid.Nil {
			c.poke() // the walk started midway: the owners before it
		}
		return busy
	}
	occs := make([]job.Occurrence, len(cbs))
	for i, cb := range cbs {
		occs[i] = cb.Occurrence
	}
	// The URL and headers are the job's notify's now, its credentials
	// opened: one read for the claim.
	fetched, err := w.Store.Fetch(ctx, occs, now)
	if err != nil {
		// Left to come due again when the lease ends.
		w.Log.Warn("callbacks_fetch_failed", zap.Int("callbacks", len(cbs)), zap.Error(err))
		return true
	}
	for i, cb := range cbs {
		aj := fetched[i].Job
		c.mu.Lock()
		c.inflight++
		c.owners[cb.Owner]++
		c.mu.Unlock()
		c.done.Go(func() {
			defer c.release(cb.Owner)
			c.deliver(execCtx, cb, aj)
		})
	}
	if len(cbs) == free {
		c.poke() // more may be due
	}
	return true
}

// release gives a delivery's place back, and looks for more at once.
func (c *caller) release(owner uuid.UUID) {
	c.mu.Lock()
	c.inflight--
	if c.owners[owner]--; c.owners[owner] <= 0 {
		delete(c.owners, owner)
	}
	c.mu.Unlock()
	c.poke()
}

// deliver posts one callback, and records what became of it.
func (c *caller) deliver(ctx context.Context, cb store.Callback, aj *store.AttemptJob) {
	w, occ := c.w, cb.Occurrence
	count := func(outcome string) { w.Metrics.Callbacks.WithLabelValues(string(cb.Event), outcome).Inc() }
	if aj == nil || !aj.Notify.Durable(cb.Event) {
		// The job is gone, or no longer asks for this callback.
		if err := w.Store.CallbackDone(ctx, cb.ID); err == nil {
			count("dropped")
		}
		return
	}
	why := ""
	switch {
	case aj.SecretsErr != nil:
		why = "the job's credentials could not be opened"
		w.Log.Error("callback_secrets_unavailable", zap.String("job_id", occ.JobID.String()), zap.Error(aj.SecretsErr))
	case aj.SigningErr != nil:
		why = "the owner's signing secret could not be opened"
		w.Log.Error("callback_not_signed", zap.String("job_id", occ.JobID.String()), zap.Error(aj.SigningErr))
	}
	if why == "" {
		why = c.post(ctx, cb, aj)
		if why == "" {
			if err := w.Store.CallbackDone(ctx, cb.ID); err != nil {
				// Sent, not deleted: sent again when its lease ends, under
				// the same Idempotency-Key.
				w.Log.Warn("callback_done_failed", zap.Int64("callback", cb.ID), zap.Error(err))
			}
			count("sent")
			return
		}
	}
	if cb.Tries >= maxCallbackTries {
		w.Log.Warn("callback_abandoned", zap.String("job_id", occ.JobID.String()), zap.String("event", string(cb.Event)),
			zap.Int("tries", cb.Tries), zap.String("error", why))
		if err := w.Store.CallbackDone(ctx, cb.ID); err == nil {
			count("abandoned")
		}
		return
	}
	if err := w.Store.CallbackLater(ctx, cb.ID, w.Clock().Add(callbackBackoff(cb.Tries)), why); err != nil {
		w.Log.Warn("callback_later_failed", zap.Int64("callback", cb.ID), zap.Error(err))
	}
	count("retried")
}

// post sends cb to its job's callback URL; it returns why it was not
// taken, "" when it was.
func (c *caller) post(ctx context.Context, cb store.Callback, aj *store.AttemptJob) string {
	occ := cb.Occurrence
	var (
		t       job.Type
		payload json.RawMessage
		err     error
	)
	kind := "callback/"
	if aj.Notify.Callback != nil {
		t, payload, err = jobtype.CallbackTask(aj.Notify, cb.Body)
	} else {
		// An SLO alert to a webhook, Slack or email destination.
		kind = "alert/"
		var a jobtype.Alert
		if err = json.Unmarshal(cb.Body, &a); err == nil {
			t, payload, err = jobtype.AlertTask(aj.Notify, a)
		}
	}
	if err != nil {
		return err.Error()
	}
	task := jobtype.Task{JobID: occ.JobID, Owner: aj.Owner, Name: aj.Name, Type: t,
		ScheduledFor: occ.ScheduledFor, Attempt: occ.Attempt,
		Key:     kind + string(cb.Event) + "/" + occ.Key() + "/" + strconv.Itoa(occ.Attempt),
		Payload: payload, Timeout: callbackTimeout,
		SigningSecret: aj.SigningSecret, PreviousSigningSecret: aj.PreviousSigningSecret}
	ctx, cancel := context.WithTimeout(ctx, callbackTimeout)
	defer cancel()
	out := c.w.Runner.Execute(ctx, task)
	if out.OK {
		return ""
	}
	// The error names the answer or the failure, never the URL's
	// credentials.
	if out.StatusCode != 0 {
		return "status " + strconv.Itoa(out.StatusCode)
	}
	return out.Error
}

// callbackBody is what the callback of it's outcome carries, nil when its
// job sends none on it.
func callbackBody(it *item, status job.RunStatus, errText string) []byte {
	e := job.NotifyEvent(status)
	if !slices.Contains(job.CallbackEvents, e) || !it.job.Notify.CallbackOn(e) {
		return nil
	}
	occ := it.msg.Occurrence
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // an HTML answer keeps its size
	err := enc.Encode(jobtype.Callback{
		Alert: jobtype.Alert{Event: e, At: it.endedAt.UTC(),
			Job: jobtype.AlertJob{ID: occ.JobID, Name: it.job.Name, Type: it.job.Type},
			Run: jobtype.AlertRun{ID: it.run, ScheduledFor: occ.ScheduledFor, Attempt: occ.Attempt, Status: status, Error: errText}},
		Answer: jobtype.NewCallbackAnswer(it.out.Answer)})
	if err != nil {
		return nil
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// keepsAnswer says whether an attempt of aj keeps its target's answer: its
// notify sends a callback on one of the outcomes that carry it.
func keepsAnswer(aj *store.AttemptJob) bool {
	n := aj.Notify
	return n.CallbackOn(job.NotifyCompleted) || n.CallbackOn(job.NotifyFailed) || n.CallbackOn(job.NotifyPermanentlyFailed)
}
