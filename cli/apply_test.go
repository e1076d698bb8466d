package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
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
