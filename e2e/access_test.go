package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/e2e/cluster"
)

// answer is one HTTP exchange with the dashboard, as a client sees it.
type answer struct {
	status int
	header http.Header
	body   []byte
}

func (a answer) decode(t *testing.T, v any) {
	t.Helper()
	require.NoError(t, json.Unmarshal(a.body, v), "body: %s", a.body)
}

// errorCode is the error.code of an error answer.
func (a answer) errorCode(t *testing.T) (code, field string) {
	t.Helper()
	var e struct {
		Error struct{ Code, Field string } `json:"error"`
	}
	a.decode(t, &e)
	return e.Error.Code, e.Error.Field
}

// call sends one request with the given bearer token ("" for none); body is
// JSON-encoded unless it is a []byte.
func call(t *testing.T, base, token, method, path string, body any) answer {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		require.NoError(t, err)
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, base+path, rd)
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return answer{status: resp.StatusCode, header: resp.Header, body: raw}
}

// TestAccess checks each access rule on the real services, with the outbound
// guard on (TOCK_ALLOW_PRIVATE_TARGETS unset): 401 without a valid key, 404
// for another user's job, 403 for a user on an admin route, 429 with
// Retry-After and recovery, 413 for an oversized body, every change in the
// audit log with its actor, and no request ever reaching a private target.
func TestAccess(t *testing.T) {
	c := start(t, cluster.Options{
		Schedulers: 1, Workers: 1,
		Env: []string{"TOCK_ALLOW_PRIVATE_TARGETS=false", "TOCK_MAX_BODY_BYTES=65536"},
	})
	base, admin := c.APIURL, c.Token
	target := cluster.NewTarget()
	defer target.Close()

	newUser := func(name string, limits map[string]any) (id, key string) {
		body := map[string]any{"name": name, "role": "user"}
		if limits != nil {
			body["limits"] = limits
		}
		a := call(t, base, admin, "POST", "/api/v1/users", body)
		require.Equal(t, 201, a.status, "%s", a.body)
		var u struct{ ID string }
		a.decode(t, &u)
		a = call(t, base, admin, "POST", "/api/v1/users/"+u.ID+"/keys", nil)
		require.Equal(t, 201, a.status, "%s", a.body)
		var k struct{ Key string }
		a.decode(t, &k)
		return u.ID, k.Key
	}
	aliceID, alice := newUser("alice", nil)
	_, bob := newUser("bob", nil)

	// Unauthenticated callers.
	_, revoked := newUser("revoked", nil)
	a := call(t, base, admin, "GET", "/api/v1/audit?action=key.create&limit=1", nil)
	var latest struct {
		Entries []struct {
			TargetID string `json:"target_id"`
		} `json:"entries"`
	}
	a.decode(t, &latest)
	require.Equal(t, 204, call(t, base, admin, "DELETE", "/api/v1/keys/"+latest.Entries[0].TargetID, nil).status)
	for name, token := range map[string]string{"no key": "", "wrong key": alice + "x", "revoked key": revoked, "unknown prefix": "tock_aaaaaaaaaaaaa_secret"} {
		a := call(t, base, token, "GET", "/api/v1/jobs", nil)
		require.Equal(t, 401, a.status, name)
		code, _ := a.errorCode(t)
		require.Equal(t, "unauthorized", code, name)
	}

	// Ownership: bob cannot see or touch alice's job.
	// A recurring job (once a year), so that the DELETE below is a cancel
	// however far the attempt the trigger starts has got: a one-off job
	// whose attempt has started answers 409, and a worker can start it
	// before the DELETE arrives.
	spec := map[string]any{"name": "alice's", "type": "ping", "schedule": map[string]any{"cron": "0 0 1 1 *"},
		"payload": map[string]any{"url": "https://example.com/"}}
	a = call(t, base, alice, "POST", "/api/v1/jobs", spec)
	require.Equal(t, 201, a.status, "%s", a.body)
	var j struct{ ID string }
	a.decode(t, &j)
	for _, r := range []struct{ method, path string }{
		{"GET", "/api/v1/jobs/" + j.ID},
		{"PATCH", "/api/v1/jobs/" + j.ID},
		{"DELETE", "/api/v1/jobs/" + j.ID},
		{"GET", "/api/v1/jobs/" + j.ID + "/runs"},
		{"POST", "/api/v1/jobs/" + j.ID + "/pause"},
	} {
		a := call(t, base, bob, r.method, r.path, map[string]any{"name": "mine now"})
		require.Equal(t, 404, a.status, "%s %s: %s", r.method, r.path, a.body)
	}
	require.Equal(t, 200, call(t, base, alice, "PATCH", "/api/v1/jobs/"+j.ID, map[string]any{"name": "alice's, renamed"}).status)

	// Roles.
	for _, r := range []struct{ method, path string }{
		{"GET", "/api/v1/users"}, {"POST", "/api/v1/users"}, {"GET", "/api/v1/audit"}, {"POST", "/api/v1/users/" + aliceID + "/disable"},
	} {
		a := call(t, base, bob, r.method, r.path, map[string]any{"name": "x", "role": "admin"})
		require.Equal(t, 403, a.status, "%s %s: %s", r.method, r.path, a.body)
	}

	// Rate limit: 600 a minute with a burst of 2.
	_, limited := newUser("limited", map[string]any{"requests_per_minute": 600, "request_burst": 2})
	var refused answer
	for range 50 {
		if refused = call(t, base, limited, "GET", "/api/v1/jobs", nil); refused.status == 429 {
			break
		}
	}
	require.Equal(t, 429, refused.status)
	code, _ := refused.errorCode(t)
	require.Equal(t, "rate_limited", code)
	require.Equal(t, "1", refused.header.Get("Retry-After"))
	require.True(t, cluster.WaitUntil(5*time.Second, 50*time.Millisecond, func() bool {
		return call(t, base, limited, "GET", "/api/v1/jobs", nil).status == 200
	}), "the limit recovers")

	// Oversized body.
	big := []byte(`{"name":"` + strings.Repeat("x", 70_000) + `","type":"ping","delay":"1h","payload":{"url":"https://example.com/"}}`)
	a = call(t, base, alice, "POST", "/api/v1/jobs", big)
	require.Equal(t, 413, a.status, "%s", a.body)

	// A private target is refused at creation, by address or by localhost.
	port := target.URL[strings.LastIndex(target.URL, ":")+1:]
	for _, u := range []string{target.URL + "/hook", "http://localhost:" + port + "/hook"} {
		a = call(t, base, alice, "POST", "/api/v1/jobs", map[string]any{"name": "ssrf", "type": "webhook", "delay": "0s", "payload": map[string]any{"url": u}})
		require.Equal(t, 400, a.status, "%s: %s", u, a.body)
		_, field := a.errorCode(t)
		require.Equal(t, "payload.url", field)
	}
	// A dashboard that lets it through (as if a name resolved privately only
	// later) still cannot make the worker call it: the worker's guard refuses
	// the address at connect time.
	open, err := c.StartProc(t.Context(), "dashboard", "dashboard-open", "TOCK_ALLOW_PRIVATE_TARGETS=true")
	require.NoError(t, err)
	openBase := "http://" + open.Addr
	a = call(t, openBase, alice, "POST", "/api/v1/jobs", map[string]any{"name": "ssrf at dial", "type": "webhook", "delay": "0s", "max_retries": 0,
		"payload": map[string]any{"url": target.URL + "/hook"}})
	require.Equal(t, 201, a.status, "%s", a.body)
	var dial struct{ ID string }
	a.decode(t, &dial)
	var runs struct {
		Runs []struct{ Status, Error string } `json:"runs"`
	}
	require.True(t, cluster.WaitUntil(20*time.Second, 100*time.Millisecond, func() bool {
		call(t, base, alice, "GET", "/api/v1/jobs/"+dial.ID+"/runs", nil).decode(t, &runs)
		return len(runs.Runs) == 1 && runs.Runs[0].Status == "permanently_failed"
	}), "the run ends permanently_failed")
	require.Contains(t, runs.Runs[0].Error, "not allowed")
	require.Zero(t, target.Count(), "the private target received no request")

	// Every other kind of change: alice's on her job, the admin's on a user.
	for _, action := range []string{"pause", "resume", "trigger"} {
		a := call(t, base, alice, "POST", "/api/v1/jobs/"+j.ID+"/"+action, nil)
		require.Less(t, a.status, 300, "%s: %s", action, a.body)
	}
	require.Equal(t, 204, call(t, base, alice, "DELETE", "/api/v1/jobs/"+j.ID, nil).status)
	carolID, _ := newUser("carol", nil)
	require.Equal(t, 200, call(t, base, admin, "PATCH", "/api/v1/users/"+carolID, map[string]any{"limits": map[string]any{"max_active_jobs": 10}}).status)
	require.Equal(t, 200, call(t, base, admin, "POST", "/api/v1/users/"+carolID+"/disable", nil).status)
	require.Equal(t, 200, call(t, base, admin, "POST", "/api/v1/users/"+carolID+"/enable", nil).status)

	// The audit log holds every action, each with its actor, and no key.
	actions := func(actor string) []string {
		a := call(t, base, admin, "GET", "/api/v1/audit?limit=500&actor="+actor, nil)
		require.Equal(t, 200, a.status, "%s", a.body)
		require.NotContains(t, string(a.body), alice, "no key in the audit log")
		var audit struct {
			Entries []struct{ Actor, Action string } `json:"entries"`
		}
		a.decode(t, &audit)
		var out []string
		for _, e := range audit.Entries {
			require.Equal(t, actor, e.Actor)
			out = append(out, e.Action)
		}
		return out
	}
	require.Equal(t, []string{"job.cancel", "job.trigger", "job.resume", "job.pause", "job.create", "job.update", "job.create"}, actions(aliceID))
	adminActions := actions("00000000-0000-0000-0000-000000000001")
	for _, want := range []string{"user.create", "key.create", "key.revoke", "user.update", "user.disable", "user.enable"} {
		require.Contains(t, adminActions, want)
	}
}
