package tock

import (
	"context"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"
)

// retryPolicy says when and after how long an answer is worth asking for
// again: a 429 (rate limited, nothing done) always, a 503 (unavailable) when
// the request is safe to repeat, a 409 with Retry-After (its Idempotency-Key
// still held by an earlier try) always, at most attempts tries in all.
type retryPolicy struct {
	attempts int
	base     time.Duration
	max      time.Duration
	// sleep waits d or until ctx ends; tests replace it.
	sleep func(ctx context.Context, d time.Duration) error
}

func defaultRetry() retryPolicy {
	return retryPolicy{attempts: 5, base: 250 * time.Millisecond, max: 10 * time.Second, sleep: sleepCtx}
}

// next says whether to try again after resp, the answer to try number
// attempt, and how long to wait first.
func (p retryPolicy) next(attempt int, resp *http.Response, safe bool) (time.Duration, bool) {
	if attempt >= p.attempts {
		return 0, false
	}
	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
	case resp.StatusCode == http.StatusServiceUnavailable && safe:
	case resp.StatusCode == http.StatusConflict && resp.Header.Get("Retry-After") != "":
		// The same Idempotency-Key's first request is still being
		// answered (or settled after an outage): this one did not run.
	default:
		return 0, false
	}
	if d, ok := retryAfter(resp.Header.Get("Retry-After"), time.Now()); ok {
		return min(d, p.max), true
	}
	return p.backoff(attempt), true
}

// backoff is base doubled for each earlier try, capped at max, with up to a
// quarter of it added at random so that clients refused together do not come
// back together.
func (p retryPolicy) backoff(attempt int) time.Duration {
	d := p.base
	for i := 1; i < attempt && d < p.max; i++ {
		d *= 2
	}
	d = min(d, p.max)
	if d >= 4 {
		d += rand.N(d / 4)
	}
	return d
}

// retryAfter reads a Retry-After header: seconds, or an HTTP date.
func retryAfter(v string, now time.Time) (time.Duration, bool) {
	if v == "" {
		return 0, false
	}
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		return time.Duration(s) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
