package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"testing"

	"github.com/tockhq/tock/pkg/testenv"
)

// Main is the body of a test package's TestMain: it builds the service
// binaries into a temporary directory, stores its path in *binDir, runs the
// tests and removes the directory. It returns the exit code.
func Main(m *testing.M, binDir *string) int {
	dir, err := os.MkdirTemp("", "tock-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if err := Build(context.Background(), dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	*binDir = dir
	return m.Run()
}

// StartT brings up a cluster of the binaries in binDir on the test
// Postgres and Redis for t, and stops it when t ends; service logs are
// printed when t fails. Without Postgres or Redis it skips, except under
// CI=true, where it fails.
func StartT(t *testing.T, binDir string, opts Options) *Cluster {
	t.Helper()
	opts.BinDir = binDir
	opts.AdminURL = testenv.DatabaseURL()
	if opts.RedisURL == "" {
		opts.RedisURL = testenv.RedisURL()
	}
	opts.LogDir = t.TempDir()
	opts.Logf = t.Logf
	c, err := Start(t.Context(), opts)
	if err != nil {
		var ne *net.OpError
		if os.Getenv("CI") != "true" && errors.As(err, &ne) {
			t.Skipf("Postgres or Redis unavailable: %v", err)
		}
		t.Fatalf("start cluster: %v", err)
	}
	t.Cleanup(func() {
		c.Stop()
		if t.Failed() {
			for _, name := range c.Names() {
				t.Logf("--- %s log tail ---\n%s", name, c.LogTail(name, 40))
			}
		}
	})
	return c
}
