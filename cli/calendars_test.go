package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	tock "github.com/tockhq/tock/sdk/go"
)

// calendarBody is a calendar's JSON as the server shows it.
func calendarBody(t *testing.T, name, tz string, dates []string, ranges [][2]string, rrules []string) string {
	t.Helper()
	rs := []map[string]string{}
	for _, r := range ranges {
		rs = append(rs, map[string]string{"from": r[0], "to": r[1]})
	}
	b, err := json.Marshal(map[string]any{"name": name, "timezone": tz, "dates": orEmpty(dates), "ranges": rs,
		"rrules": orEmpty(rrules), "created_at": "2026-12-01T08:00:00.000Z", "updated_at": "2026-12-02T08:00:00.000Z"})
	require.NoError(t, err)
	return string(b)
}

func TestReadCalendars(t *testing.T) {
	t.Parallel()
	read := func(t *testing.T, text string) ([]calendarEntry, error) {
		f := filepath.Join(t.TempDir(), "calendars.yaml")
		require.NoError(t, os.WriteFile(f, []byte(text), 0o600))
		return readCalendars(f, nil)
	}

	for _, tt := range []struct{ name, text string }{
		{"UnderCalendars", "x-berlin: &berlin {timezone: Europe/Berlin}\ncalendars:\n  - name: de-holidays\n    <<: *berlin\n    dates: [2026-12-25, 2026-12-26]\n    ranges: [{from: 2026-12-31T22:00:00Z, to: '2027-01-01T02:00:00+00:00'}]\n  - name: weekends\n    rrules: ['FREQ=WEEKLY;BYDAY=SA,SU']\n"},
		{"AList", "- {name: de-holidays, timezone: Europe/Berlin, dates: [2026-12-25, 2026-12-26], ranges: [{from: 2026-12-31T22:00:00Z, to: 2027-01-01T02:00:00Z}]}\n- {name: weekends, rrules: ['FREQ=WEEKLY;BYDAY=SA,SU']}\n"},
		{"JSON", `{"calendars": [{"name": "de-holidays", "timezone": "Europe/Berlin", "dates": ["2026-12-25", "2026-12-26"], "ranges": [{"from": "2026-12-31T23:00:00+01:00", "to": "2027-01-01T02:00:00Z"}]}, {"name": "weekends", "rrules": ["FREQ=WEEKLY;BYDAY=SA,SU"]}]}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			es, err := read(t, tt.text)
			require.NoError(t, err)
			require.Len(t, es, 2)
			require.Equal(t, "de-holidays", es[0].name)
			require.Equal(t, "Europe/Berlin", es[0].req.Timezone)
			require.Equal(t, []string{"2026-12-25", "2026-12-26"}, es[0].req.Dates)
			require.Len(t, es[0].req.Ranges, 1)
			require.True(t, es[0].req.Ranges[0].From.Equal(time.Date(2026, 12, 31, 22, 0, 0, 0, time.UTC)))
			require.Equal(t, "weekends", es[1].name)
			require.Empty(t, es[1].req.Timezone)
			require.Equal(t, []string{"FREQ=WEEKLY;BYDAY=SA,SU"}, es[1].req.Rrules)
		})
	}

	t.Run("TheExample", func(t *testing.T) {
		t.Parallel()
		es, err := readCalendars("../examples/calendars.yaml", nil)
		require.NoError(t, err)
		require.Len(t, es, 3)
		require.Equal(t, "de-holidays", es[0].name)
		require.Equal(t, "Europe/Berlin", es[0].req.Timezone, "merged from x-berlin")
		require.Equal(t, "FREQ=YEARLY;BYMONTH=1;BYMONTHDAY=1", es[0].req.Rrules[0], "the comment is not the rule's")
	})

	t.Run("OneCalendar", func(t *testing.T) {
		t.Parallel()
		es, err := read(t, "name: office-closed\ndates: ['2026-12-24']\n")
		require.NoError(t, err)
		require.Len(t, es, 1)
		require.Equal(t, "office-closed", es[0].name)
		require.Equal(t, []string{"2026-12-24"}, es[0].req.Dates)
	})

	for _, tt := range []struct{ name, text, want string }{
		{"MissingName", "calendars:\n  - name: a\n  - dates: [2026-12-25]\n", "calendar 2 has no name"},
		{"EmptyName", "calendars:\n  - name: ''\n", "calendar 1: name must be a non-empty string"},
		{"DuplicateName", "calendars:\n  - name: a\n  - name: a\n    dates: [2026-12-25]\n", `name "a" is given twice: by calendar 1 and calendar 2`},
		{"UnknownField", "calendars:\n  - name: a\n    holidays: [2026-12-25]\n", `calendar 1 ("a"): json: unknown field "holidays"`},
		{"Owner", "calendars:\n  - name: a\n    owner: someone\n", `calendar 1 ("a"): json: unknown field "owner"`},
		{"BadRange", "calendars:\n  - name: a\n    ranges: [{from: soon, to: 2027-01-01T00:00:00Z}]\n", `calendar 1 ("a"): parsing time "soon"`},
		{"NotACalendar", "- [a, b]\n", "calendar 1 is not a calendar object"},
		{"Misspelt", "calender:\n  - name: a\n", "want a list of calendars under calendars:"},
		{"UnknownTopLevel", "calendars: []\ndefaults: {}\n", `unknown top-level field "defaults"`},
		{"Scalar", "de-holidays\n", "want a list of calendars under calendars:"},
		{"NotYAML", "calendars: [\n", "read "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := read(t, tt.text)
			require.ErrorContains(t, err, tt.want)
			require.ErrorAs(t, err, new(usageError), "a mistake in the file is a usage error (exit 2)")
		})
	}
}

// TestCalendarChanges: a calendar matches its entry as the server keeps
// it (UTC for no zone, ranges by their start to the millisecond); any
// other difference is named with what was added and removed.
func TestCalendarChanges(t *testing.T) {
	t.Parallel()
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339Nano, s)
		require.NoError(t, err)
		return v
	}
	have := &tock.Calendar{Name: "c", Timezone: "UTC", Dates: []string{"2026-12-25", "2026-12-26"},
		Ranges: []tock.CalendarRange{{From: at("2026-12-01T00:00:00Z"), To: at("2026-12-02T00:00:00Z")},
			{From: at("2026-12-31T22:00:00Z"), To: at("2027-01-01T02:00:00.123Z")}},
		Rrules: []string{"FREQ=WEEKLY;BYDAY=SA", "FREQ=WEEKLY;BYDAY=SU"}}
	same := tock.CalendarRequest{Dates: []string{"2026-12-25", "2026-12-26"},
		Ranges: []tock.CalendarRequestRanges{{From: at("2026-12-31T23:00:00+01:00"), To: at("2027-01-01T02:00:00.123456Z")},
			{From: at("2026-12-01T00:00:00Z"), To: at("2026-12-02T00:00:00Z")}},
		Rrules: []string{"FREQ=WEEKLY;BYDAY=SA", "FREQ=WEEKLY;BYDAY=SU"}}

	t.Run("Unchanged", func(t *testing.T) {
		t.Parallel()
		changes, lines := calendarChanges(have, same)
		require.Empty(t, changes, "%v", lines)
	})
	for _, tt := range []struct {
		name  string
		edit  func(r *tock.CalendarRequest)
		field string
		line  string
	}{
		{"Timezone", func(r *tock.CalendarRequest) { r.Timezone = "Europe/Berlin" }, "timezone", `timezone: "UTC" → "Europe/Berlin"`},
		{"DatesAddedAndRemoved", func(r *tock.CalendarRequest) { r.Dates = []string{"2026-12-25", "2026-12-31"} }, "dates", "dates: +2026-12-31 -2026-12-26"},
		{"DatesEmptied", func(r *tock.CalendarRequest) { r.Dates = nil }, "dates", "dates: -2026-12-25 -2026-12-26"},
		{"DatesReordered", func(r *tock.CalendarRequest) { r.Dates = []string{"2026-12-26", "2026-12-25"} }, "dates", "dates: the same entries in another order"},
		{"RangeMoved", func(r *tock.CalendarRequest) { r.Ranges = r.Ranges[1:] }, "ranges", "ranges: -2026-12-31T22:00:00.000Z/2027-01-01T02:00:00.123Z"},
		{"RuleChanged", func(r *tock.CalendarRequest) { r.Rrules = []string{"FREQ=WEEKLY;BYDAY=SA"} }, "rrules", "rrules: -FREQ=WEEKLY;BYDAY=SU"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			want := same
			want.Ranges = append([]tock.CalendarRequestRanges{}, same.Ranges...)
			tt.edit(&want)
			changes, lines := calendarChanges(have, want)
			require.Len(t, changes, 1)
			require.Equal(t, tt.field, changes[0].Field)
			require.Equal(t, []string{tt.line}, lines)
			require.True(t, json.Valid(changes[0].Old) && json.Valid(changes[0].New))
		})
	}
}

func TestCalendarCommands(t *testing.T) {
	t.Parallel()
	setup := func(t *testing.T, answers map[string]answer) (map[string]string, *fakeBackfills) {
		f := &fakeBackfills{answers: answers}
		srv := httptest.NewServer(f)
		t.Cleanup(srv.Close)
		return map[string]string{"TOCK_URL": srv.URL, "TOCK_TOKEN": "secret-token-1234", "HOME": t.TempDir()}, f
	}
	write := func(t *testing.T, text string) string {
		f := filepath.Join(t.TempDir(), "calendars.yaml")
		require.NoError(t, os.WriteFile(f, []byte(text), 0o600))
		return f
	}
	const file = `calendars:
  - name: de-holidays
    timezone: Europe/Berlin
    dates: ["2026-12-25", "2026-12-26"]
    rrules: ["FREQ=YEARLY;BYMONTH=5;BYMONTHDAY=1"]
  - name: maintenance
    ranges: [{from: "2026-12-31T22:00:00Z", to: "2027-01-01T02:00:00Z"}]
  - name: office-closed
    timezone: Europe/Berlin
    dates: ["2026-12-24", "2026-12-31"]
`
	const path = "/api/v1/calendars/"
	// de-holidays is new, maintenance matches, office-closed differs.
	answers := func(t *testing.T) map[string]answer {
		return map[string]answer{
			"GET " + path + "maintenance": {http.StatusOK, calendarBody(t, "maintenance", "UTC", nil,
				[][2]string{{"2026-12-31T22:00:00.000Z", "2027-01-01T02:00:00.000Z"}}, nil)},
			"GET " + path + "office-closed": {http.StatusOK, calendarBody(t, "office-closed", "Europe/Berlin",
				[]string{"2026-12-24"}, nil, nil)},
			"PUT " + path + "de-holidays": {http.StatusCreated, calendarBody(t, "de-holidays", "Europe/Berlin",
				[]string{"2026-12-25", "2026-12-26"}, nil, []string{"FREQ=YEARLY;BYMONTH=5;BYMONTHDAY=1"})},
			"PUT " + path + "office-closed": {http.StatusOK, calendarBody(t, "office-closed", "Europe/Berlin",
				[]string{"2026-12-24", "2026-12-31"}, nil, nil)},
		}
	}
	puts := func(f *fakeBackfills) []string {
		var out []string
		for _, s := range f.sent {
			if strings.HasPrefix(s, "PUT ") {
				route, _, _ := strings.Cut(s, " {")
				out = append(out, route)
			}
		}
		return out
	}

	t.Run("ApplyCreatesUpdatesAndLeavesTheUnchanged", func(t *testing.T) {
		t.Parallel()
		env, f := setup(t, answers(t))
		out, errOut, code := invoke(t, env, "", "calendars", "apply", "-f", write(t, file))
		require.Equal(t, 0, code, errOut)
		require.Equal(t, `+ de-holidays: create (Europe/Berlin: 2 date(s), 0 range(s), 1 rule(s))
= maintenance: unchanged
~ office-closed: update
    dates: +2026-12-31
created de-holidays
updated office-closed
applied: 1 created, 1 updated, 1 unchanged
`, out)
		require.Equal(t, []string{"PUT " + path + "de-holidays", "PUT " + path + "office-closed"}, puts(f), "no PUT for the unchanged")
		require.Contains(t, f.sent, `PUT `+path+`de-holidays {"dates":["2026-12-25","2026-12-26"],"rrules":["FREQ=YEARLY;BYMONTH=5;BYMONTHDAY=1"],"timezone":"Europe/Berlin"}`)
	})

	t.Run("DryRunSendsNoPut", func(t *testing.T) {
		t.Parallel()
		env, f := setup(t, answers(t))
		out, errOut, code := invoke(t, env, "", "calendars", "apply", "-f", write(t, file), "--dry-run")
		require.Equal(t, 0, code, errOut)
		require.Contains(t, out, "~ office-closed: update\n    dates: +2026-12-31\n")
		require.Contains(t, out, "dry run: 1 to create, 1 to update, 1 unchanged; nothing changed\n")
		require.NotContains(t, out, "created")
		require.Empty(t, puts(f))
		require.Len(t, f.sent, 3, "one GET a calendar")
	})

	t.Run("ApplyJSON", func(t *testing.T) {
		t.Parallel()
		env, _ := setup(t, answers(t))
		out, errOut, code := invoke(t, env, "", "calendars", "apply", "-f", write(t, file), "-o", "json")
		require.Equal(t, 0, code, errOut)
		var res calendarApplyResult
		require.NoError(t, json.Unmarshal([]byte(out), &res), out)
		require.True(t, res.Changed)
		require.Equal(t, 1, res.Created)
		require.Equal(t, 1, res.Updated)
		require.Equal(t, 1, res.Unchanged)
		require.Len(t, res.Calendars, 3)
		require.Equal(t, "office-closed", res.Calendars[2].Name)
		require.Equal(t, opUpdate, res.Calendars[2].Op)
		require.Equal(t, "dates", res.Calendars[2].Changes[0].Field)
		require.JSONEq(t, `["2026-12-24","2026-12-31"]`, string(res.Calendars[2].Changes[0].New))
	})

	t.Run("NoChanges", func(t *testing.T) {
		t.Parallel()
		env, f := setup(t, answers(t))
		one := write(t, "name: maintenance\nranges: [{from: 2026-12-31T23:00:00+01:00, to: 2027-01-01T02:00:00Z}]\n")
		out, errOut, code := invoke(t, env, "", "calendars", "apply", "-f", one)
		require.Equal(t, 0, code, errOut)
		require.Equal(t, "= maintenance: unchanged\nno changes: 1 calendar(s) already match "+one+"\n", out)
		require.Empty(t, puts(f))
	})

	t.Run("RefusalNamesTheField", func(t *testing.T) {
		t.Parallel()
		a := answers(t)
		a["PUT "+path+"de-holidays"] = answer{http.StatusBadRequest, `{"error":{"code":"invalid","message":"must be a day written YYYY-MM-DD","field":"dates[1]"}}`}
		env, f := setup(t, a)
		out, errOut, code := invoke(t, env, "", "calendars", "apply", "-f", write(t, file))
		require.Equal(t, exitError, code)
		require.Contains(t, errOut, `error: apply calendar 1 ("de-holidays"): must be a day written YYYY-MM-DD (invalid)`+"\nfield: dates[1]\n")
		require.NotContains(t, out, "applied")
		require.Equal(t, []string{"PUT " + path + "de-holidays"}, puts(f), "it stops at the refusal")
	})

	t.Run("UsageMistakes", func(t *testing.T) {
		t.Parallel()
		env, f := setup(t, nil)
		for _, args := range [][]string{
			{"calendars", "apply"},
			{"calendars", "apply", "-f", write(t, "calendars:\n  - dates: [2026-12-25]\n")},
			{"calendars", "get"},
			{"calendars", "delete", "a", "b"},
			{"calendars", "list", "x"},
			{"calendars", "nope"},
		} {
			_, errOut, code := invoke(t, env, "", args...)
			require.Equal(t, exitUsage, code, "tock %v: %s", args, errOut)
		}
		require.Empty(t, f.sent, "nothing is sent for a usage mistake")
	})

	t.Run("ListGetDelete", func(t *testing.T) {
		t.Parallel()
		holidays := calendarBody(t, "de-holidays", "Europe/Berlin",
			[]string{"2026-01-01", "2026-04-03", "2026-04-06", "2026-05-01", "2026-05-14", "2026-05-25", "2026-10-03", "2026-12-25", "2026-12-26"},
			[][2]string{{"2026-12-31T22:00:00.000Z", "2027-01-01T02:00:00.000Z"}}, []string{"FREQ=YEARLY;BYMONTH=5;BYMONTHDAY=1"})
		env, f := setup(t, map[string]answer{
			"GET /api/v1/calendars":            {http.StatusOK, `{"calendars":[` + holidays + `],"next_cursor":""}`},
			"GET " + path + "de-holidays":      {http.StatusOK, holidays},
			"DELETE " + path + "de-holidays":   {http.StatusConflict, `{"error":{"code":"conflict","message":"calendar de-holidays is named by 1 job that can still run: take it out of their skip_calendars first","field":"name"}}`},
			"DELETE " + path + "office-closed": {http.StatusNoContent, ""},
		})
		out, errOut, code := invoke(t, env, "", "calendars", "list")
		require.Equal(t, 0, code, errOut)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		require.Len(t, lines, 2, "a header and one row")
		require.Regexp(t, `^NAME\s+TIMEZONE\s+DATES\s+RANGES\s+RRULES\s+UPDATED$`, lines[0])
		require.Regexp(t, `^de-holidays\s+Europe/Berlin\s+9\s+1\s+1\s+2026-12-02 08:00:00Z$`, lines[1])

		out, errOut, code = invoke(t, env, "", "calendars", "list", "-o", "json")
		require.Equal(t, 0, code, errOut)
		var list tock.CalendarList
		require.NoError(t, json.Unmarshal([]byte(out), &list))
		require.Len(t, list.Calendars, 1)

		out, errOut, code = invoke(t, env, "", "calendars", "get", "de-holidays")
		require.Equal(t, 0, code, errOut)
		require.Contains(t, out, "timezone:  Europe/Berlin\n")
		require.Contains(t, out, "dates:     2026-01-01, 2026-04-03, 2026-04-06, 2026-05-01, 2026-05-14, 2026-05-25, 2026-10-03, 2026-12-25\n"+
			"           2026-12-26\n")
		require.Contains(t, out, "ranges:    2026-12-31 22:00:00Z to 2027-01-01 02:00:00Z\n")
		require.Contains(t, out, "rrules:    FREQ=YEARLY;BYMONTH=5;BYMONTHDAY=1\n")

		_, errOut, code = invoke(t, env, "", "calendars", "delete", "de-holidays")
		require.Equal(t, exitError, code)
		require.Contains(t, errOut, "take it out of their skip_calendars first (conflict)")

		out, errOut, code = invoke(t, env, "", "calendars", "delete", "office-closed")
		require.Equal(t, 0, code, errOut)
		require.Equal(t, "deleted calendar office-closed\n", out)

		_, _, code = invoke(t, env, "", "calendars", "get", "nope")
		require.Equal(t, exitNotFound, code)
		require.Equal(t, []string{"GET /api/v1/calendars", "GET /api/v1/calendars", "GET " + path + "de-holidays",
			"DELETE " + path + "de-holidays", "DELETE " + path + "office-closed", "GET " + path + "nope"}, f.sent)
	})

	t.Run("OwnerGoesOnEveryCall", func(t *testing.T) {
		t.Parallel()
		const owner = "0193a000-0000-7000-8000-0000000000aa"
		var mu sync.Mutex
		var got []string
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, r.Method+" "+r.URL.Path+"?"+r.URL.RawQuery)
			w.Header().Set("Content-Type", "application/json")
			switch r.Method {
			case http.MethodGet:
				w.WriteHeader(http.StatusNotFound)
				w.Write([]byte(`{"error":{"code":"not_found","message":"no such calendar"}}`))
			default:
				w.WriteHeader(http.StatusCreated)
				w.Write([]byte(calendarBody(t, "a", "UTC", nil, nil, nil)))
			}
		}))
		defer srv.Close()
		env := map[string]string{"TOCK_URL": srv.URL, "TOCK_TOKEN": "secret-token-1234", "HOME": t.TempDir()}
		_, errOut, code := invoke(t, env, "", "calendars", "apply", "--owner", owner, "-f", write(t, "name: a\n"))
		require.Equal(t, 0, code, errOut)
		require.Equal(t, []string{"GET /api/v1/calendars/a?owner=" + owner, "PUT /api/v1/calendars/a?owner=" + owner}, got)
	})
}

// TestSkipCalendarFlags: jobs create names calendars with --skip-calendar,
// jobs get shows them, and preview lists what they skip between the
// occurrences that run.
func TestSkipCalendarFlags(t *testing.T) {
	t.Parallel()
	const job = `{"id":"0193a000-0000-7000-8000-000000000001","name":"report","type":"ping","status":"scheduled",
"payload":{"url":"https://example.com"},"max_retries":3,"timeout":"30s","labels":{},"run_at":null,
"schedule":{"cron":"0 9 * * 1-5","timezone":"Europe/Berlin"},"skip_calendars":["de-holidays","office-closed"],
"created_at":"2026-12-01T08:00:00.000Z","updated_at":"2026-12-01T08:00:00.000Z","owner":"u"}`
	const preview = `{"next":[{"at":"2026-12-24T09:00:00+01:00","utc":"2026-12-24T08:00:00Z"},{"at":"2026-12-28T09:00:00+01:00","utc":"2026-12-28T08:00:00Z"}],
"skipped":[{"at":"2026-12-25T09:00:00+01:00","utc":"2026-12-25T08:00:00Z","reason":"calendar de-holidays: date 2026-12-25"}]}`
	f := &fakeBackfills{answers: map[string]answer{
		"POST /api/v1/jobs":              {http.StatusCreated, job},
		"POST /api/v1/schedules/preview": {http.StatusOK, preview},
	}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	env := map[string]string{"TOCK_URL": srv.URL, "TOCK_TOKEN": "secret-token-1234", "HOME": t.TempDir()}

	out, errOut, code := invoke(t, env, "", "jobs", "create", "--name", "report", "--type", "ping", "--target", "https://example.com",
		"--cron", "0 9 * * 1-5", "--tz", "Europe/Berlin", "--skip-calendar", "de-holidays", "--skip-calendar", "office-closed")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "skip calendars:    de-holidays, office-closed\n")
	_, body, _ := strings.Cut(f.sent[0], "POST /api/v1/jobs ")
	var sent map[string]any
	require.NoError(t, json.Unmarshal([]byte(body), &sent))
	require.Equal(t, []any{"de-holidays", "office-closed"}, sent["skip_calendars"])

	out, errOut, code = invoke(t, env, "", "preview", "0 9 * * 1-5", "--tz", "Europe/Berlin", "-n", "2", "--skip-calendar", "de-holidays")
	require.Equal(t, 0, code, errOut)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 4)
	require.Regexp(t, `^AT\s+UTC\s+SKIPPED$`, lines[0])
	require.Regexp(t, `^2026-12-24 09:00:00 \+01:00 Thu\s+2026-12-24 08:00:00Z\s+-$`, lines[1])
	require.Regexp(t, `^2026-12-25 09:00:00 \+01:00 Fri\s+2026-12-25 08:00:00Z\s+calendar de-holidays: date 2026-12-25$`, lines[2])
	require.Regexp(t, `^2026-12-28 09:00:00 \+01:00 Mon\s+2026-12-28 08:00:00Z\s+-$`, lines[3])
	_, body, _ = strings.Cut(f.sent[1], "POST /api/v1/schedules/preview ")
	require.JSONEq(t, `{"n":2,"schedule":{"cron":"0 9 * * 1-5","timezone":"Europe/Berlin"},"skip_calendars":["de-holidays"]}`, body)

	out, errOut, code = invoke(t, env, "", "preview", "0 9 * * 1-5", "-o", "json", "--skip-calendar", "de-holidays")
	require.Equal(t, 0, code, errOut)
	require.JSONEq(t, preview, out)
}
