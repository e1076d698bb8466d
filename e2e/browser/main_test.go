// Package browser drives the dashboard's web pages in a real headless
// Chromium against a cluster of the real binaries.
package browser

import (
	"os"
	"testing"

	"github.com/tockhq/tock/e2e/cluster"
)

var binDir string

func TestMain(m *testing.M) { os.Exit(cluster.Main(m, &binDir)) }

// start brings up a cluster for t and stops it when t ends.
func start(t *testing.T, opts cluster.Options) *cluster.Cluster {
	t.Helper()
	return cluster.StartT(t, binDir, opts)
}
