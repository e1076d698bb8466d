// Package probe serves the health endpoints on each service's metrics listener
// (the scheduler's and worker's only one, the dashboard's beside its API):
// /healthz says the process is alive, /readyz says its dependencies answer.
// /metrics joins them on the same listener.
package probe

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// Check reports whether one dependency answers.
type Check func(ctx context.Context) error

// Handler returns the mux with /healthz and /readyz; checks are named.
func Handler(checks map[string]Check) *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		code, out := Ready(ctx, checks)
		writeJSON(w, code, out)
	})
	return mux
}

// Ready runs every check and returns the status code and body of /readyz.
func Ready(ctx context.Context, checks map[string]Check) (int, map[string]string) {
	out := map[string]string{"status": "ready"}
	code := http.StatusOK
	for name, check := range checks {
		if err := check(ctx); err != nil {
			out[name] = "unavailable"
			out["status"] = "not ready"
			code = http.StatusServiceUnavailable
		} else {
			out[name] = "ok"
		}
	}
	return code, out
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// Server serves a handler on addr until Shutdown.
type Server struct {
	srv *http.Server
	ln  net.Listener
}

// Listen binds addr now, so a port conflict fails start-up rather than later.
func Listen(addr string, h http.Handler) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	return &Server{srv: &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}, ln: ln}, nil
}

// Serve blocks until the server stops; a clean shutdown returns nil.
func (s *Server) Serve() error {
	if err := s.srv.Serve(s.ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Shutdown stops the server within ctx's deadline.
func (s *Server) Shutdown(ctx context.Context) error { return s.srv.Shutdown(ctx) }

// Profiling adds Go's pprof endpoints under /debug/pprof/ to mux, for an
// operator or the benchmark to profile a live service. Off unless TOCK_PPROF
// is set: a profile shows code paths and the heap, so it is served only on
// the metrics listener, never beside the API.
func Profiling(mux *http.ServeMux) {
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
}
