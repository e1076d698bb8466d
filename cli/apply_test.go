package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	tock "github.com/tockhq/tock/sdk/go"
)

func TestYAMLToJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
	}{
		{"OnIsAFieldName", "notify: {on: [failed]}\nschedule: {every: week, on: mon}", `{"notify":{"on":["failed"]},"schedule":{"every":"week","on":"mon"}}`},
		{"YesAndNoAreText", "a: yes\nb: no\nc: true", `{"a":"yes","b":"no","c":true}`},
		{"DatesStayText", "run_on: 2026-12-24\nrun_at: 2026-12-24T09:00:00+01:00", `{"run_at":"2026-12-24T09:00:00+01:00","run_on":"2026-12-24"}`},
		{"LabelValuesAreStrings", "labels: {customer: 1234, vip: true, code: 007}", `{"labels":{"code":"007","customer":"1234","vip":"true"}}`},
		{"Numbers", "priority: -5\nmax_retries: 0\nx: 1.5", `{"max_retries":0,"priority":-5,"x":1.5}`},
		{"MergeKeysOwnFieldsWin", "d: &d {timeout: 10s, history: failures}\nj: {<<: *d, timeout: 5m}", `{"d":{"history":"failures","timeout":"10s"},"j":{"history":"failures","timeout":"5m"}}`},
		{"JSONIsYAML", `{"jobs": [{"key": "a"}]}`, `{"jobs":[{"key":"a"}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := yamlToJSON([]byte(tt.in))
			require.NoError(t, err)
			require.JSONEq(t, tt.want, string(got))
		})
	}
}

func TestReadSchedules(t *testing.T) {
	t.Parallel()
	read := func(t *testing.T, text string) ([]entry, error) {
		f := filepath.Join(t.TempDir(), "schedules.yaml")
		require.NoError(t, os.WriteFile(f, []byte(text), 0o600))
		return readSchedules(f, nil)
	}
	const job = "type: ping\n    payload: {url: https://example.com}\n    delay: 1h\n"

	t.Run("Entries", func(t *testing.T) {
		t.Parallel()
		es, err := read(t, "x-shared: &s {timeout: 5s}\njobs:\n  - key: a\n    name: A\n    "+job+"    <<: *s\n  - key: b\n    name: B\n    "+job)
		require.NoError(t, err)
		require.Len(t, es, 2)
		require.Equal(t, "a", es[0].key)
		require.Equal(t, "5s", es[0].spec.Timeout)
		require.Equal(t, "ping", es[1].spec.Type)
	})
	for _, tt := range []struct{ name, text, want string }{
		{"MissingKey", "jobs:\n  - key: a\n    name: A\n    " + job + "  - name: second\n    " + job, `job 2 ("second") has no key`},
		{"EmptyKey", "jobs:\n  - key: ''\n    name: A\n    " + job, `job 1 ("A"): key must be a non-empty string`},
		{"DuplicateKey", "jobs:\n  - key: a\n    name: A\n    " + job + "  - key: a\n    name: B\n    " + job, `key "a" is given twice: by job 1 and job 2 ("B")`},
		{"UnknownField", "jobs:\n  - key: a\n    name: A\n    retries: 3\n    " + job, `job 1 ("A"): json: unknown field "retries"`},
		{"Owner", "jobs:\n  - key: a\n    name: A\n    owner: someone\n    " + job, "owner is not allowed"},
		{"NoJobs", "job:\n  - key: a\n", "want a list of jobs under jobs:"},
		{"UnknownTopLevel", "jobs: []\ndefaults: {}\n", `unknown top-level field "defaults"`},
		{"NotYAML", "jobs: [\n", "read "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := read(t, tt.text)
			require.ErrorContains(t, err, tt.want)
			require.ErrorAs(t, err, new(usageError), "a mistake in the file is a usage error (exit 2)")
		})
	}
}

// serverView is the job the server shows for the entry below, every
// default filled in and normalized.
const serverView = `{
  "id": "0190c0de-0000-7000-8000-000000000001", "name": "report", "type": "webhook", "status": "scheduled",
  "payload": {"url": "https://example.com/r", "method": "POST"},
  "priority": 0, "max_retries": 3, "timeout": "10s", "retention": "2160h0m0s", "history": "all",
  "labels": {"team": "ops"}, "key": "report", "overlap": "allow", "run_at": null,
  "schedule": {"rrule": "FREQ=WEEKLY;BYDAY=MO", "timezone": "Europe/Berlin", "start_at": "2026-01-01T00:00:00.000Z",
    "misfire": "run_once", "misfire_max": 100, "dst": {"gap": "shift", "overlap": "first"}},
  "notify": {"on": ["permanently_failed"], "webhook": {"url": "https://example.com/a"}},
  "timezone": "Europe/Berlin", "next_run_at": null, "created_at": "2026-01-01T00:00:00Z",
  "updated_at": "2026-01-01T00:00:00Z", "owner": "u", "last_run": null}`

const entryYAML = `
key: report
name: report
type: webhook
schedule: {rrule: "rrule:freq=weekly;byday=mo;", timezone: Europe/Berlin}
payload: {url: "https://example.com/r", method: POST}
timeout: 10s
retention: 90d
labels: {team: ops}
notify: {on: [permanently_failed], webhook: {url: "https://example.com/a"}}
`

func TestDiffJob(t *testing.T) {
	t.Parallel()
	entryFields := func(t *testing.T, text string) map[string]any {
		b, err := yamlToJSON([]byte(text))
		require.NoError(t, err)
		var m map[string]any
		require.NoError(t, json.Unmarshal(b, &m))
		return m
	}
	view := func(t *testing.T, edit func(*tock.Job)) map[string]any {
		var j tock.Job
		require.NoError(t, json.Unmarshal([]byte(serverView), &j))
		if edit != nil {
			edit(&j)
		}
		m, err := jsonFields(&j)
		require.NoError(t, err)
		return m
	}

	t.Run("SameJobNoChange", func(t *testing.T) {
		t.Parallel()
		require.Empty(t, diffJob(withDefaults(entryFields(t, entryYAML)), view(t, nil)))
	})
	t.Run("ChangedFieldsNamed", func(t *testing.T) {
		t.Parallel()
		text := strings.Replace(entryYAML, "timeout: 10s", "timeout: 1m", 1)
		text = strings.Replace(text, "team: ops", "team: sre", 1)
		got := diffJob(withDefaults(entryFields(t, text)), view(t, nil))
		require.Equal(t, []change{
			{Field: "labels.team", Old: "ops", New: "sre"},
			{Field: "timeout", Old: "10s", New: "1m"},
		}, got)
	})
	t.Run("DriftFromDefaultsShows", func(t *testing.T) {
		t.Parallel()
		got := diffJob(withDefaults(entryFields(t, entryYAML)), view(t, func(j *tock.Job) {
			j.MaxRetries = 7
			j.Priority = 5
			j.ExpiresAfter = "15m0s"
			j.Schedule.Misfire = "skip"
		}))
		var fields []string
		for _, c := range got {
			fields = append(fields, c.String())
		}
		require.Equal(t, []string{
			`expires_after: "15m0s" → (none)`,
			"max_retries: 7 → 3",
			"priority: 5 → 0",
			`schedule.misfire: "skip" → "run_once"`,
		}, fields)
	})
	t.Run("RemovedNotifyAndLabels", func(t *testing.T) {
		t.Parallel()
		text := strings.Replace(entryYAML, "labels: {team: ops}\n", "", 1)
		text = text[:strings.Index(text, "notify:")]
		got := diffJob(withDefaults(entryFields(t, text)), view(t, nil))
		require.Len(t, got, 2, "%v", got)
		require.Equal(t, `labels.team: "ops" → (none)`, got[0].String())
		require.Equal(t, "notify", got[1].Field)
		require.Nil(t, got[1].New)
	})
	t.Run("EveryDefaults", func(t *testing.T) {
		t.Parallel()
		want := withDefaults(map[string]any{"schedule": map[string]any{"every": "Week", "on": "mon"}})
		have := map[string]any{"overlap": "allow", "max_retries": 3.0, "timeout": "30s", "history": "all", "labels": map[string]any{},
			"schedule": map[string]any{"every": "week", "on": "monday", "at": "00:00", "timezone": "UTC",
				"misfire": "run_once", "misfire_max": 100.0, "dst": map[string]any{"gap": "shift", "overlap": "first"}}}
		require.Empty(t, diffJob(want, have))
	})
}

func TestParseDuration(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"90d": "2160h0m0s", "1d12h": "36h0m0s", "2h30m": "2h30m0s", "": "0s"} {
		d, err := parseDuration(in)
		require.NoError(t, err, in)
		require.Equal(t, want, d.String(), in)
	}
}

// TestDiffHidesSecrets: a changed header value, Slack webhook URL or
// credentialed broker URL shows as changed, never by value.
func TestDiffHidesSecrets(t *testing.T) {
	want := map[string]any{"type": "webhook", "payload": map[string]any{"url": "https://example.com/a",
		"headers": map[string]any{"Authorization": "Bearer new-secret"}}}
	have := map[string]any{"type": "webhook", "payload": map[string]any{"url": "https://example.com/b",
		"headers": map[string]any{"Authorization": "Bearer old-secret"}}}
	var text []string
	for _, c := range diffJob(want, have) {
		text = append(text, c.String())
	}
	all := strings.Join(text, "\n")
	if !strings.Contains(all, "payload.headers.Authorization") || !strings.Contains(all, "example.com/b") {
		t.Fatalf("the changes are not all listed:\n%s", all)
	}
	if strings.Contains(all, "secret") {
		t.Fatalf("a header value was shown:\n%s", all)
	}
	for _, v := range []string{"amqp://user:pw@mq.example.com/", "https://hooks.slack.com/services/T/B/X"} {
		field := "payload.url"
		if strings.Contains(v, "slack") {
			field = "payload.webhook_url"
		}
		if !secret(field, v) {
			t.Fatalf("%s %s is not treated as a secret", field, v)
		}
	}
}
