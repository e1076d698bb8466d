package access

import (
	"net/http"
	"slices"
	"strings"

	"github.com/labstack/echo/v5"

	"github.com/tockhq/tock/pkg/store"
	"github.com/tockhq/tock/services/dashboard/apierr"
)

// The scopes of an API key: what it may do, within what its user's role
// allows.
const (
	scopeJobsRead  = "jobs:read"  // read jobs, their next runs, preview schedules
	scopeJobsWrite = "jobs:write" // create, change and act on jobs; manage keys; the signing secret
	scopeRunsRead  = "runs:read"  // read runs, a job's and across jobs
	scopeAdmin     = "admin"      // the administrator's routes (users, keys of others, audit, system)
)

// Scopes is a set of scopes, one bit each.
type Scopes uint8

const (
	canJobsRead Scopes = 1 << iota
	canJobsWrite
	canRunsRead
	canAdmin
)

// scopeNames lists the scopes in the order they are shown.
var scopeNames = []struct {
	name string
	bit  Scopes
}{{scopeJobsRead, canJobsRead}, {scopeJobsWrite, canJobsWrite}, {scopeRunsRead, canRunsRead}, {scopeAdmin, canAdmin}}

// roleScopes is everything a role allows: a user every scope but admin.
func roleScopes(role string) Scopes {
	if role == store.RoleAdmin {
		return canJobsRead | canJobsWrite | canRunsRead | canAdmin
	}
	return canJobsRead | canJobsWrite | canRunsRead
}

// parseScopes reads a key's scopes; an unknown one is reported by index.
func parseScopes(names []string) (Scopes, int) {
	var set Scopes
	for i, n := range names {
		k := slices.IndexFunc(scopeNames, func(s struct {
			name string
			bit  Scopes
		}) bool {
			return s.name == n
		})
		if k < 0 {
			return 0, i
		}
		set |= scopeNames[k].bit
	}
	return set, -1
}

// KeyScopes is what a stored key may do: its scopes, or, for a key without
// any, everything its user's role allows; never more than the role allows,
// so a key outlives a demotion without keeping the admin scope.
func KeyScopes(k *store.Key, role string) Scopes {
	all := roleScopes(role)
	if k.Scopes == nil {
		return all
	}
	set, _ := parseScopes(k.Scopes)
	return set & all
}

// Names lists the scopes of set, as clients read and send them.
func (set Scopes) Names() []string {
	out := []string{}
	for _, s := range scopeNames {
		if set&s.bit != 0 {
			out = append(out, s.name)
		}
	}
	return out
}

func allScopeNames() []string { return (canJobsRead | canJobsWrite | canRunsRead | canAdmin).Names() }

// neededScope is the scope a route needs, from its path template and
// method; 0 for the routes every credential may use (who am I, my keys).
// The administrator's routes need the admin scope through AdminOnly and
// SelfOrAdmin: a key without it is its user's, acting as a user. A route
// this does not know needs every scope a user can have, so that a route
// added without a thought for scopes is closed to narrowed keys, not open.
func neededScope(method, path string) Scopes {
	read := method == http.MethodGet || method == http.MethodHead
	path = strings.ReplaceAll(path, `\`, "") // echo's template escapes the colon of /runs\:stats
	switch {
	case path == "/api/v1/me", path == "/api/v1/users/:id" && read, path == "/api/v1/users/:id/keys" && read:
		return 0
	case path == "/api/v1/users", path == "/api/v1/users/:id/disable", path == "/api/v1/users/:id/enable",
		path == "/api/v1/users/:id/erase", path == "/api/v1/users/:id/jobs", path == "/api/v1/audit",
		path == "/api/v1/system":
		return canAdmin // and AdminOnly, which reads the same scope
	case path == "/api/v1/users/:id" && !read:
		return canAdmin
	case path == "/api/v1/users/:id/keys", path == "/api/v1/keys/:id", path == "/api/v1/signing-secret",
		path == "/api/v1/signing-secret:rotate":
		return canJobsWrite
	case path == "/api/v1/runs", path == "/api/v1/runs:stats", path == "/api/v1/jobs/:id/runs":
		return canRunsRead
	case strings.HasPrefix(path, "/api/v1/flows"), strings.HasPrefix(path, "/api/v1/calendars"):
		// Flow keys are the limits of jobs, calendars their days off: read
		// and set with them.
		if read {
			return canJobsRead
		}
		return canJobsWrite
	case strings.HasPrefix(path, "/api/v1/dead-letters"):
		// Dead letters are runs to read, and jobs to act on.
		if read {
			return canRunsRead
		}
		return canJobsWrite
	case path == "/api/v1/schedules/preview":
		return canJobsRead
	case strings.HasPrefix(path, "/api/v1/jobs"), strings.HasPrefix(path, "/api/v1/backfills"):
		// A backfill runs a job's past occurrences: read and started with it.
		if read {
			return canJobsRead
		}
		return canJobsWrite
	}
	return canJobsRead | canJobsWrite | canRunsRead
}

// requireScope refuses, with 403 naming the scope, a request the caller's
// key does not allow.
func requireScope(c *echo.Context, p Principal) error {
	need := neededScope(c.Request().Method, c.Path())
	if need == 0 || p.Scopes&need == need {
		return nil
	}
	if need == canAdmin {
		return apierr.New(http.StatusForbidden, apierr.CodeForbidden, "", "this needs an administrator (a key with the admin scope)")
	}
	return apierr.New(http.StatusForbidden, apierr.CodeForbidden, "",
		"this key lacks the "+strings.Join(need.Names(), ", ")+" scope")
}
