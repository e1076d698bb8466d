package cluster

import (
	"context"
	"net/http"
	"net/http/httptest"
	"time"
)

// NewSlowTarget is NewTarget with one more path: /slow records the delivery on
// arrival, like every other path, then answers 200 only after delay. Its
// attempts stay in flight long enough for a fault to strike in the middle.
func NewSlowTarget(delay time.Duration) *Target {
	t := &Target{notify: make(chan struct{}, 1)}
	t.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			w = &delayedWriter{ResponseWriter: w, ctx: r.Context(), delay: delay}
		}
		t.serve(w, r)
	}))
	return t
}

// delayedWriter holds the answer back: the first header or body write waits
// for delay, or until the caller gives up.
type delayedWriter struct {
	http.ResponseWriter
	ctx    context.Context
	delay  time.Duration
	waited bool
}

func (d *delayedWriter) wait() {
	if d.waited {
		return
	}
	d.waited = true
	t := time.NewTimer(d.delay)
	defer t.Stop()
	select {
	case <-d.ctx.Done():
	case <-t.C:
	}
}

func (d *delayedWriter) WriteHeader(code int) {
	d.wait()
	d.ResponseWriter.WriteHeader(code)
}

func (d *delayedWriter) Write(b []byte) (int, error) {
	d.wait()
	return d.ResponseWriter.Write(b)
}
