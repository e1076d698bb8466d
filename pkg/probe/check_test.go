package probe

import (
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestHealthyAsksHealthz(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(Handler(nil))
	defer srv.Close()
	if err := Healthy(t.Context(), srv.Listener.Addr().String()); err != nil {
		t.Fatalf("a serving listener is unhealthy: %v", err)
	}
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	if err := Healthy(t.Context(), "0.0.0.0:"+port); err != nil {
		t.Fatalf("an unspecified host is not asked on loopback: %v", err)
	}
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) }))
	defer down.Close()
	if err := Healthy(t.Context(), down.Listener.Addr().String()); err == nil {
		t.Fatal("a 503 is healthy")
	}
	if err := Healthy(t.Context(), "not an address"); err == nil {
		t.Fatal("a bad address is healthy")
	}
}
