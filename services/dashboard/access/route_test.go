package access_test

import (
	"strings"
	"testing"

	"github.com/labstack/echo/v5"
	"go.uber.org/zap"

	"github.com/tockhq/tock/services/dashboard/access"
	"github.com/tockhq/tock/services/dashboard/api"
)

// TestEveryRouteHasItsScope walks the API's routes: each one under /api/v1
// must be classified by neededScope on purpose. A route that falls through
// to the default (every user scope) fails here, so whoever adds a route
// decides which scope it needs.
func TestEveryRouteHasItsScope(t *testing.T) {
	t.Parallel()
	e, ok := api.New(api.Deps{Logger: zap.NewNop(), AdminToken: "test-admin-token-0123456789abcdef"}).Handler().(*echo.Echo)
	if !ok {
		t.Fatal("the API's handler is no longer echo's router; walk its routes another way")
	}
	n := 0
	for _, r := range e.Router().Routes() {
		if !strings.HasPrefix(r.Path, "/api/v1/") || r.Path == "/api/v1/openapi.json" || r.Path == "/api/v1/job-types" {
			continue
		}
		n++
		if got := access.NeededScope(r.Method, r.Path); got == access.EveryUserScope {
			t.Errorf("%s %s is not classified in neededScope", r.Method, r.Path)
		}
	}
	if n < 30 {
		t.Fatalf("walked %d routes; the walk is broken", n)
	}
}
