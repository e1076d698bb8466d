// The retry policy: backoff between attempts, and the retries of a Postgres
// call through an outage.

package main

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"go.uber.org/zap"
)

// retryPG retries a Postgres call with backoff until it succeeds or ctx ends:
// an outage pauses the worker rather than losing outcomes.
//
// A pooled connection that broke (Postgres restarted under it) is tried
// again at once, without backoff: the pool drops it and hands out another,
// which may be just as dead, one per pooled connection. Backing off for each
// would add a second or more per connection after Postgres is back, long
// enough for the leases of the attempts whose outcomes wait to run out and
// for another worker to run them again. A dial that fails (Postgres still
// down) backs off as any other failure.
func retryPG[T any](ctx context.Context, log *zap.Logger, f func() (T, error)) (T, error) {
	broken := 0
	for attempt := 0; ; attempt++ {
		v, err := f()
		if err == nil || ctx.Err() != nil || permanent(err) {
			return v, err
		}
		if attempt == 0 {
			log.Warn("postgres_call_failed_retrying", zap.Error(err))
		}
		if brokenConn(err) && broken < maxBrokenRetries {
			broken++
			attempt--
			continue
		}
		sleep(ctx, backoffStep(attempt))
	}
}

// maxBrokenRetries bounds the immediate retries of one call after broken
// connections: more than a worker's pool holds.
const maxBrokenRetries = 64

// brokenConn reports an error of a connection that was open and broke: the
// server went away under it (end of file, reset, closed), or told it so as
// it shut down. Not a dial that failed, nor an error Postgres answered a
// statement with.
func brokenConn(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		// admin_shutdown, crash_shutdown: the server is stopping this session.
		return pgErr.Code == "57P01" || pgErr.Code == "57P02"
	}
	var connectErr *pgconn.ConnectError
	if errors.As(err, &connectErr) {
		return false
	}
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, net.ErrClosed)
}

// bisect runs call on a batch through retryPG. When Postgres refuses the
// batch's data (permanent: one item it cannot take spoils the statement), it
// runs each half on its own, and so on down to single items, so that only
// the items Postgres refuses are left out; refuse is told of each, with its
// error. Every try calls call anew, which reads the clock anew. It returns
// what the calls returned, and whether every item was tried: false when ctx
// ended first, leaving the rest untried.
//
// One refused item in a batch of n costs about 2·log2(n) more statements,
// 16 for a full read of 256.
func bisect[T, R any](ctx context.Context, log *zap.Logger, items []T, call func([]T) ([]R, error), refuse func(T, error)) ([]R, bool) {
	out, err := retryPG(ctx, log, func() ([]R, error) { return call(items) })
	switch {
	case err == nil:
		return out, true
	case ctx.Err() != nil:
		return nil, false
	case len(items) == 1:
		refuse(items[0], err)
		return nil, true
	}
	half := len(items) / 2
	first, ok := bisect(ctx, log, items[:half], call, refuse)
	if !ok {
		return first, false
	}
	second, ok := bisect(ctx, log, items[half:], call, refuse)
	return append(first, second...), ok
}

// pgCode is the SQLSTATE of a Postgres error, or "" for another error. It
// is what the worker logs of a refusal: the message may quote the data.
func pgCode(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}

// backoff is the delay before attempt+1: exponential from the base, capped,
// with full jitter over its upper half so retries of a burst spread out.
func (w *Worker) backoff(attempt int) time.Duration {
	d := w.BackoffBase << min(attempt-1, 30)
	if d <= 0 || d > w.BackoffMax {
		d = w.BackoffMax
	}
	half := d / 2
	return half + time.Duration(rand.Int64N(int64(half)+1))
}

// permanent reports a Postgres error that retrying cannot cure: a batch
// that writes one row twice (class 21, cardinality), bad data (class 22) or
// a broken constraint (class 23). Bisecting the batch isolates it.
func permanent(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return false
	}
	class := pgErr.Code[:min(2, len(pgErr.Code))]
	return class == "21" || class == "22" || class == "23"
}

// backoffStep is the wait before retrying a Postgres or Redis call; capped at
// a second so a worker resumes within about a second of an outage's end.
func backoffStep(attempt int) time.Duration {
	return min(100*time.Millisecond<<min(attempt, 6), time.Second)
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
