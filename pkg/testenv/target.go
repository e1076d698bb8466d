package testenv

import (
	"io"
	"net/http"
	"testing"
	"time"
)

// Trickle is a target that answers status at once and then trickles its
// body, a byte every 50 ms, until the client goes away or the test ends
// (so httptest.Server.Close never waits on it): an attempt against it is
// cut by its timeout while reading the body.
func Trickle(t testing.TB, status int) http.HandlerFunc {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	return func(w http.ResponseWriter, r *http.Request) {
		flush := http.NewResponseController(w).Flush
		w.WriteHeader(status)
		_ = flush()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-r.Context().Done():
				return
			case <-release:
				return
			case <-tick.C:
				if _, err := io.WriteString(w, "."); err != nil {
					return
				}
				_ = flush()
			}
		}
	}
}
