package cluster

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"time"
)

// Delivery is one request a Target received.
type Delivery struct {
	JobID          string
	IdempotencyKey string
	ScheduledFor   time.Time
	// Nominal is X-Tock-Nominal-Time: a jittered occurrence's time before
	// its jitter; zero when the request carried none.
	Nominal time.Time
	Attempt int
	// Backfill is X-Tock-Backfill: a backfill queued the occurrence.
	Backfill bool
	Path     string
	At       time.Time
	// TraceParent is the W3C traceparent the request carried: the attempt's
	// span when the worker traces, empty otherwise.
	TraceParent string
}

// Target is a local HTTP server that records every delivery (a ledger) and
// answers by path: /fail answers 500, /hang never answers within a job's
// timeout, /answers-in-300ms answers 200 after 300 ms, anything else 200 at once.
type Target struct {
	*httptest.Server
	mu         sync.Mutex
	deliveries []Delivery
	notify     chan struct{}
}

// NewTarget starts a Target on loopback.
func NewTarget() *Target {
	t := &Target{notify: make(chan struct{}, 1)}
	t.Server = httptest.NewServer(http.HandlerFunc(t.serve))
	return t
}

func (t *Target) serve(w http.ResponseWriter, r *http.Request) {
	at := time.Now()
	_, _ = io.Copy(io.Discard, r.Body)
	sched, _ := time.Parse(time.RFC3339Nano, r.Header.Get("X-Tock-Scheduled-For"))
	nominal, _ := time.Parse(time.RFC3339Nano, r.Header.Get("X-Tock-Nominal-Time"))
	attempt, _ := strconv.Atoi(r.Header.Get("X-Tock-Attempt"))
	d := Delivery{JobID: r.Header.Get("X-Tock-Job-Id"), IdempotencyKey: r.Header.Get("Idempotency-Key"),
		ScheduledFor: sched, Nominal: nominal, Attempt: attempt, Backfill: r.Header.Get("X-Tock-Backfill") == "true", Path: r.URL.Path, At: at, TraceParent: r.Header.Get("traceparent")}
	t.mu.Lock()
	t.deliveries = append(t.deliveries, d)
	t.mu.Unlock()
	select {
	case t.notify <- struct{}{}:
	default:
	}
	switch r.URL.Path {
	case "/fail":
		http.Error(w, "target says no", http.StatusInternalServerError)
	case "/answers-in-300ms":
		time.Sleep(300 * time.Millisecond)
		w.WriteHeader(http.StatusOK)
	case "/hang":
		select {
		case <-r.Context().Done():
		case <-time.After(time.Minute):
		}
	default:
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(`{"ok":true}`))
	}
}

// Deliveries returns a copy of the ledger.
func (t *Target) Deliveries() []Delivery {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]Delivery(nil), t.deliveries...)
}

// WaitFor waits until cond holds on the ledger or timeout passes. It checks
// at most every 50 ms: each check copies the ledger, and checking on every
// delivery would steal the CPU of the services being measured.
func (t *Target) WaitFor(timeout time.Duration, cond func([]Delivery) bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if cond(t.Deliveries()) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		select {
		case <-t.notify:
		case <-time.After(time.Until(deadline)):
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Count is the number of deliveries so far, without copying the ledger.
func (t *Target) Count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.deliveries)
}
