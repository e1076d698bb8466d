package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// delivery is one request the target received: when, and the occurrence the
// worker said it was delivering.
type delivery struct {
	at        time.Time
	scheduled time.Time
	jobID     string
	attempt   int
}

// target is the webhook receiver the benchmark's jobs call: it answers 200 at
// once and records each request in a slice allocated ahead, so that the
// receiver's own cost stays out of the figures as far as it can.
type target struct {
	srv *http.Server
	url string

	mu         sync.Mutex
	deliveries []delivery
}

// startTarget listens on a free loopback port.
func startTarget(capacity int) (*target, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	t := &target{url: "http://" + ln.Addr().String() + "/hook", deliveries: make([]delivery, 0, capacity)}
	t.srv = &http.Server{Handler: http.HandlerFunc(t.serve), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	// Serve returns only once close shuts the server down.
	go func() { _ = t.srv.Serve(ln) }()
	return t, nil
}

func (t *target) serve(w http.ResponseWriter, r *http.Request) {
	at := time.Now()
	_, _ = io.Copy(io.Discard, r.Body)
	sched, _ := time.Parse(time.RFC3339Nano, r.Header.Get("X-Tock-Scheduled-For"))
	attempt, _ := strconv.Atoi(r.Header.Get("X-Tock-Attempt"))
	d := delivery{at: at, scheduled: sched, jobID: r.Header.Get("X-Tock-Job-Id"), attempt: attempt}
	t.mu.Lock()
	t.deliveries = append(t.deliveries, d)
	t.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

// count is the number of requests recorded since the last take.
func (t *target) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.deliveries)
}

// take returns what was recorded so far and starts a new record with room for
// capacity requests.
func (t *target) take(capacity int) []delivery {
	fresh := make([]delivery, 0, capacity)
	t.mu.Lock()
	defer t.mu.Unlock()
	out := t.deliveries
	t.deliveries = fresh
	return out
}

func (t *target) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = t.srv.Shutdown(ctx)
}
