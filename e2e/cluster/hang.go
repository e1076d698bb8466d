package cluster

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
)

// HangTarget accepts every request and answers none of them until Release:
// a target whose endpoint is down in the worst way, with the connection
// open. After Release every request, waiting or new, is answered 503 at
// once.
type HangTarget struct {
	*httptest.Server
	release  chan struct{}
	once     sync.Once
	arrived  atomic.Int64
	inFlight atomic.Int64
}

// NewHangTarget starts a HangTarget on loopback.
func NewHangTarget() *HangTarget {
	h := &HangTarget{release: make(chan struct{})}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.arrived.Add(1)
		h.inFlight.Add(1)
		defer h.inFlight.Add(-1)
		select {
		case <-h.release:
		case <-r.Context().Done():
			return
		}
		http.Error(w, "gave up", http.StatusServiceUnavailable)
	}))
	return h
}

// Release answers every waiting request and every later one with 503.
func (h *HangTarget) Release() { h.once.Do(func() { close(h.release) }) }

// Arrived is how many requests it has received; InFlight how many it holds.
func (h *HangTarget) Arrived() int64  { return h.arrived.Load() }
func (h *HangTarget) InFlight() int64 { return h.inFlight.Load() }

// Close releases every request and stops the server.
func (h *HangTarget) Close() {
	h.Release()
	h.Server.Close()
}
