package metrics

import (
	"context"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/queue"
)

// TestGrafanaDashboard checks deployments/grafana/tock.json: well-formed,
// every panel queries something, and every tock_ metric it queries is one
// this package defines, so a rename here cannot silently blank a panel.
func TestGrafanaDashboard(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../deployments/grafana/tock.json")
	require.NoError(t, err)
	var dash struct {
		Title  string `json:"title"`
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	require.NoError(t, json.Unmarshal(b, &dash))
	require.NotEmpty(t, dash.Title)
	require.NotEmpty(t, dash.Panels)

	known := definedNames(t)
	name := regexp.MustCompile(`tock_[a-z_]+`)
	for _, p := range dash.Panels {
		require.NotEmpty(t, p.Targets, "panel %q has no query", p.Title)
		for _, tg := range p.Targets {
			require.NotEmpty(t, tg.Expr, "panel %q", p.Title)
			for _, n := range name.FindAllString(tg.Expr, -1) {
				base := n
				for _, suffix := range []string{"_bucket", "_count", "_sum"} {
					if s, ok := strings.CutSuffix(n, suffix); ok && known[s] {
						base = s
					}
				}
				require.True(t, known[base], "panel %q queries %s, which no collector defines", p.Title, n)
			}
		}
	}
}

// definedNames are the names of every metric this package defines.
func definedNames(t *testing.T) map[string]bool {
	t.Helper()
	reg := prometheus.NewRegistry()
	w := NewWorker(reg)
	NewScheduler(reg)
	a := NewAPI(reg)
	reg.MustRegister(NewQueueCollector(func(context.Context) (queue.Stats, error) { return queue.Stats{}, nil }))
	// Vectors export nothing until a series exists.
	w.Runs.WithLabelValues("ping", "completed")
	w.Duration.WithLabelValues("ping")
	a.Requests.WithLabelValues("/", "GET", "200")
	a.Duration.WithLabelValues("/", "GET")
	fams, err := reg.Gather()
	require.NoError(t, err)
	names := map[string]bool{}
	for _, f := range fams {
		names[f.GetName()] = true
	}
	return names
}
