package e2e

import (
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/e2e/cluster"
	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/jobspec"
	"github.com/tockhq/tock/pkg/outbound"
	"github.com/tockhq/tock/pkg/secretbox"
	tock "github.com/tockhq/tock/sdk/go"
)

// view is a job's view, field by field.
type view map[string]json.RawMessage

// TestEveryFieldRoundTrips walks every field of a job that a request sets,
// enumerated from jobspec.Fields (the one definition), with the two values
// each declares: set on create through the API and through the SDK,
// changed by PATCH, by PUT /api/v1/jobs/by-key and by tock apply -f; read
// back through GET, the list, by key, tock jobs get -o json and the SDK.
// Each time the field reads back as the server's own rules make it (the
// view a job built from the same request shows, credentials as their
// fingerprints), and a second apply of the same file changes nothing. A
// new field is covered without editing this test.
func TestEveryFieldRoundTrips(t *testing.T) {
	// The walk makes a few hundred requests as one user.
	c := start(t, cluster.Options{Schedulers: 1, Workers: 1,
		Env: []string{"TOCK_LIMIT_REQUESTS_PER_MINUTE=100000", "TOCK_LIMIT_REQUEST_BURST=10000"}})
	ctx := t.Context()
	api, ownerID, token := newUser(t, c.API(), "field-walker")
	for _, name := range []string{"de-holidays", "maintenance"} { // what skip_calendars' examples name
		code, err := api.Do(ctx, http.MethodPut, "/api/v1/calendars/"+name, map[string]any{"dates": []string{"2030-12-25"}}, nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusCreated, code)
	}
	sdk := tock.New(c.APIURL, token)
	key, err := secretbox.ParseKey(c.SecretKey)
	require.NoError(t, err)
	box, err := secretbox.New(key)
	require.NoError(t, err)
	owner := uuid.MustParse(ownerID)
	lim := jobspec.DefaultLimits
	lim.Box, lim.Targets = box, outbound.Options{AllowPrivate: true}

	get := func(path string) view {
		t.Helper()
		var v view
		code, err := api.Do(ctx, http.MethodGet, path, nil, &v)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, code, "GET %s", path)
		return v
	}
	send := func(method, path string, body map[string]any, want int) view {
		t.Helper()
		var v view
		code, err := api.Do(ctx, method, path, body, &v)
		require.NoError(t, err)
		require.Equal(t, want, code, "%s %s %v: %s", method, path, body, v)
		return v
	}
	// expect is the view of the job req makes, as the server's own rules
	// would build it (for a patch, applied to the job as it was).
	expect := func(mode jobspec.Mode, body map[string]any, cur *job.Job) *job.Job {
		t.Helper()
		r, err := jobspec.NewRequest(mode, body)
		require.NoError(t, err)
		if mode != jobspec.Patch {
			r, _, err = r.Debounced() // as the server reads a create or replace
			require.NoError(t, err)
		}
		if mode == jobspec.Create {
			j, err := r.Build(nil, owner, time.Now(), lim)
			require.NoError(t, err)
			return j
		}
		ch, err := r.Prepare(nil, cur, time.Now(), lim)
		require.NoError(t, err)
		next := *cur
		require.NoError(t, ch.Apply(&next, false))
		return &next
	}
	viewOf := func(j *job.Job) view {
		b, err := json.Marshal(jobspec.NewView(j, jobspec.ViewContext{Box: box}))
		require.NoError(t, err)
		var v view
		require.NoError(t, json.Unmarshal(b, &v))
		return v
	}

	for _, f := range jobspec.Fields {
		if !f.Input(jobspec.Create) || f.Example == "" {
			continue
		}
		t.Run(f.Name, func(t *testing.T) {
			oneOff := f.Name == "run_at" || f.Name == "delay" || f.Name == "run_on" || f.Name == "timezone" || f.Name == "debounce"
			jobKey := "walk-" + f.Name
			body := func(value string) map[string]any {
				b := map[string]any{"name": "walk " + f.Name, "type": "webhook", "key": jobKey,
					"payload": json.RawMessage(lookup(t, "payload").Example)}
				switch {
				case !oneOff:
					b["schedule"] = json.RawMessage(lookup(t, "schedule").Example)
				case f.Name == "timezone":
					b["run_at"] = time.Now().Add(24 * time.Hour).UTC().Truncate(time.Second)
				case f.Name == "run_on":
					b["timezone"] = "Europe/Berlin"
				}
				if f.Name == "key" {
					delete(b, "key")
				}
				b[f.Name] = json.RawMessage(value)
				return b
			}
			// check compares what the server shows of the field (and of
			// the run_at a delay or a date set) with what is expected.
			check := func(how string, got, want view) {
				t.Helper()
				names := []string{f.Name}
				if f.Name == "delay" || f.Name == "run_on" {
					names = []string{"run_at"}
				}
				for _, n := range names {
					g, w := got[n], want[n]
					switch {
					case f.Name == "delay":
						requireClose(t, g, w, 10*time.Second, how)
					case n == "schedule":
						require.JSONEq(t, string(noStart(t, w)), string(noStart(t, g)), "%s: schedule", how)
					case isInstant(w) && isInstant(g):
						// The same instant, however many digits of it.
						requireClose(t, g, w, 0, how)
					default:
						require.JSONEq(t, string(orNullJSON(w)), string(orNullJSON(g)), "%s: %s", how, n)
					}
				}
			}
			// readBack reads the job every way there is, and checks each
			// shows the field as GET does.
			readBack := func(how, id string) view {
				t.Helper()
				got := get("/api/v1/jobs/" + id)
				list := get("/api/v1/jobs?q=" + id)
				var page struct {
					Jobs []view `json:"jobs"`
				}
				raw, err := json.Marshal(list)
				require.NoError(t, err)
				require.NoError(t, json.Unmarshal(raw, &page))
				require.Len(t, page.Jobs, 1, "%s: the list finds it", how)
				byKey := get("/api/v1/jobs/by-key/" + url.PathEscape(keyOf(t, got)))
				cliOut := cli(t, c, token, "jobs", "get", id, "-o", "json")
				require.Equal(t, 0, cliOut.code)
				var fromCLI view
				require.NoError(t, json.Unmarshal([]byte(cliOut.out), &fromCLI))
				j, err := sdk.Jobs.Get(ctx, id)
				require.NoError(t, err)
				raw, err = json.Marshal(j)
				require.NoError(t, err)
				var fromSDK view
				require.NoError(t, json.Unmarshal(raw, &fromSDK))
				for name, other := range map[string]view{"the list": page.Jobs[0], "by key": byKey, "tock jobs get": fromCLI, "the SDK": fromSDK} {
					check(how+", read through "+name, other, got)
				}
				return got
			}

			// Set on create.
			want := expect(jobspec.Create, body(f.Example), nil)
			created := send(http.MethodPost, "/api/v1/jobs", body(f.Example), http.StatusCreated)
			check("create", created, viewOf(want))
			id := idOf(t, created)
			readBack("create", id)

			// Changed by PATCH, where a patch takes the field. The job
			// expected is the one built above, changed as the server would.
			cur := want
			if f.Input(jobspec.Patch) && f.Other != "" {
				patch := map[string]any{f.Name: json.RawMessage(f.Other)}
				switch f.Name {
				case "run_on":
					patch["timezone"] = "Europe/Berlin"
				case "timezone":
					// A zone alone is no timing: it goes with its instant.
					patch["run_at"] = created["run_at"]
				}
				want := expect(jobspec.Patch, patch, cur)
				got := send(http.MethodPatch, "/api/v1/jobs/"+id, patch, http.StatusOK)
				check("patch", got, viewOf(want))
				readBack("patch", id)
				cur = want
			}

			// Replaced by PUT by key, back to its first value, or, for a
			// field a replace cannot change (the type), repeated.
			value := f.Example
			if f.Other != "" && !f.Fixed {
				value = f.Other
			}
			put := body(value)
			putKey := jobKey
			if f.Name == "key" {
				putKey = strings.Trim(value, `"`)
			}
			delete(put, "key")
			want = expect(jobspec.Replace, put, cur)
			got := send(http.MethodPut, "/api/v1/jobs/by-key/"+url.PathEscape(putKey), put, http.StatusOK)
			check("put", got, viewOf(want))
			readBack("put", id)
			var dry tock.DryRun
			code, err := api.Do(ctx, http.MethodPut, "/api/v1/jobs/by-key/"+url.PathEscape(putKey)+"?dry_run=true", put, &dry)
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, code)
			require.Equal(t, tock.DryRunUnchanged, dry.Action, "the same PUT again changes nothing: %+v", dry.Changes)

			// tock apply -f: the field as a schedules file gives it, then
			// the same file again, which changes nothing.
			file := body(f.Example)
			file["key"] = "applied-" + f.Name
			if f.Name == "key" {
				file["key"] = "applied-key"
			}
			doc, err := json.Marshal(map[string]any{"jobs": []any{file}})
			require.NoError(t, err)
			path := filepath.Join(t.TempDir(), "schedules.json")
			require.NoError(t, os.WriteFile(path, doc, 0o600))
			require.Equal(t, 0, cli(t, c, token, "apply", "-f", path).code)
			applied, err := sdk.Jobs.GetByKey(ctx, file["key"].(string), "")
			require.NoError(t, err)
			fileWant := expect(jobspec.Create, file, nil)
			check("apply", readBack("apply", applied.ID), viewOf(fileWant))
			again := cli(t, c, token, "apply", "-f", path)
			require.Equal(t, 0, again.code)
			require.Contains(t, again.out, "no changes", "a second apply of the same file")

			// Set on create through the SDK.
			var spec tock.JobSpec
			raw, err := json.Marshal(body(f.Example))
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(raw, &spec))
			spec.Key = "sdk-" + f.Name
			if f.Name == "key" {
				spec.Key = "sdk-key"
			}
			if f.Name == "debounce" {
				// A debounce key of its own: with the applied job's, whose
				// job key differs, the create would fold into nothing (409).
				spec.Debounce.Key = "sdk-" + spec.Debounce.Key
			}
			made, err := sdk.Jobs.Create(ctx, spec)
			require.NoError(t, err)
			raw, err = json.Marshal(spec)
			require.NoError(t, err)
			var sdkBody map[string]any
			require.NoError(t, json.Unmarshal(raw, &sdkBody))
			check("the SDK's create", readBack("the SDK's create", made.ID), viewOf(expect(jobspec.Create, sdkBody, nil)))
		})
	}
}

func lookup(t *testing.T, name string) *jobspec.Field {
	f, ok := jobspec.Lookup(name)
	require.True(t, ok, name)
	return f
}

func idOf(t *testing.T, v view) string {
	var id string
	require.NoError(t, json.Unmarshal(v["id"], &id))
	return id
}

func keyOf(t *testing.T, v view) string {
	var k string
	require.NoError(t, json.Unmarshal(v["key"], &k))
	return k
}

// requireClose checks two instants (JSON strings) are within d.
func requireClose(t *testing.T, a, b json.RawMessage, d time.Duration, how string) {
	t.Helper()
	var x, y time.Time
	require.NoError(t, json.Unmarshal(a, &x), "%s: %s", how, a)
	require.NoError(t, json.Unmarshal(b, &y), "%s: %s", how, b)
	require.WithinDuration(t, y, x, d, how)
}

// noStart is a schedule without its start_at, which is the moment of the
// request when a request leaves it out.
func noStart(t *testing.T, raw json.RawMessage) json.RawMessage {
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	delete(m, "start_at")
	out, err := json.Marshal(m)
	require.NoError(t, err)
	return out
}

func orNullJSON(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("null")
	}
	return b
}

// isInstant reports whether v is a JSON string holding an RFC 3339 time.
func isInstant(v json.RawMessage) bool {
	var s string
	if json.Unmarshal(v, &s) != nil {
		return false
	}
	_, err := time.Parse(time.RFC3339Nano, s)
	return err == nil
}
