// Package browser drives the dashboard's web pages in a real headless
// Chromium against a cluster of the real binaries.
package browser

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"testing"

	"github.com/tockhq/tock/e2e/cluster"
	"github.com/tockhq/tock/pkg/testenv"
)

var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "tock-browser-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	if err := cluster.Build(context.Background(), dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// start brings up a cluster for t and stops it when t ends; service logs are
// printed when t fails.
func start(t *testing.T, opts cluster.Options) *cluster.Cluster {
	t.Helper()
	opts.BinDir = binDir
	opts.AdminURL = testenv.DatabaseURL()
	opts.RedisURL = testenv.RedisURL()
	opts.LogDir = t.TempDir()
	opts.Logf = t.Logf
	c, err := cluster.Start(t.Context(), opts)
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
