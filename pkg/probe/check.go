package probe

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"
)

// CheckCommand is the "healthcheck" argument of every service binary: a
// container image without a shell (distroless, scratch) runs
// `service healthcheck` as its health check, which asks the service's own
// /healthz on its metrics listener (TOCK_METRICS_ADDR, else defaultAddr)
// and exits 0 when it answers 200, 1 otherwise.
const CheckCommand = "healthcheck"

// RunCheck handles `service healthcheck` (args are os.Args): it returns
// false for any other command line, and otherwise exits.
func RunCheck(args []string, defaultAddr string) bool {
	if len(args) != 2 || args[1] != CheckCommand {
		return false
	}
	addr := os.Getenv("TOCK_METRICS_ADDR")
	if addr == "" {
		addr = defaultAddr
	}
	if err := Healthy(context.Background(), addr); err != nil {
		fmt.Fprintln(os.Stderr, "unhealthy:", err)
		os.Exit(1)
	}
	os.Exit(0)
	return true
}

// Healthy asks http://addr/healthz, with a listener's unspecified host
// (0.0.0.0, ::, none) asked on loopback, within 3 seconds.
func Healthy(ctx context.Context, addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("TOCK_METRICS_ADDR %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+net.JoinHostPort(host, port)+"/healthz", nil)
	if err != nil {
		return err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, res.Body)
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("/healthz answered %d", res.StatusCode)
	}
	return nil
}
