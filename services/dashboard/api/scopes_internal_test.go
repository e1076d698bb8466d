package api

import (
	"strings"
	"testing"

	"go.uber.org/zap"
)

// TestEveryRouteHasItsScope walks the API's routes: each one under /api/v1
// must be classified by neededScope on purpose. A route that falls through
// to the default (every user scope) fails here, so whoever adds a route
// decides which scope it needs.
func TestEveryRouteHasItsScope(t *testing.T) {
	s := New(Deps{Logger: zap.NewNop(), AdminToken: "test-admin-token-0123456789abcdef"})
	all := canJobsRead | canJobsWrite | canRunsRead
	n := 0
	for _, r := range s.echo.Router().Routes() {
		if !strings.HasPrefix(r.Path, "/api/v1/") || r.Path == "/api/v1/openapi.json" || r.Path == "/api/v1/job-types" {
			continue
		}
		n++
		if got := neededScope(r.Method, r.Path); got == all {
			t.Errorf("%s %s is not classified in neededScope", r.Method, r.Path)
		}
	}
	if n < 30 {
		t.Fatalf("walked %d routes; the walk is broken", n)
	}
}
