package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/e2e/cluster"
	tock "github.com/tockhq/tock/sdk/go"
)

var (
	cliOnce sync.Once
	cliPath string
	cliErr  error
)

// tockCLI builds the tock command line into the directory of the service
// binaries, once per test binary, the way cluster.Build builds them.
func tockCLI(t *testing.T) string {
	t.Helper()
	cliOnce.Do(func() {
		cliPath = filepath.Join(binDir, "tock")
		out, err := exec.Command("go", "build", "-o", cliPath, "github.com/tockhq/tock/cli").CombinedOutput()
		if err != nil {
			cliErr = errors.New("build the tock CLI: " + err.Error() + "\n" + string(out))
		}
	})
	require.NoError(t, cliErr)
	return cliPath
}

// cliRun is one run of the CLI: its output and exit code.
type cliRun struct {
	out, err string
	code     int
}

// cli runs the tock command line against the cluster as the holder of
// token, with an empty config directory, and fails the test if a token
// shows in its output.
func cli(t *testing.T, c *cluster.Cluster, token string, args ...string) cliRun {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), tockCLI(t), args...)
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "TOCK_URL="+c.APIURL, "TOCK_TOKEN="+token, "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := cliRun{out: stdout.String(), err: stderr.String()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		r.code = exit.ExitCode()
	case err != nil:
		t.Fatalf("run tock %v: %v", args, err)
	}
	for _, secret := range []string{token, c.Token} {
		require.NotContains(t, r.out+r.err, secret, "tock %v printed a token", args)
	}
	t.Logf("tock %s → %d\n%s%s", strings.Join(args, " "), r.code, r.out, r.err)
	return r
}

// TestCLIApply drives `tock apply -f` on the real services as a user: the
// first apply creates, the same file again changes nothing at all (no PUT:
// same generation, no audit entry), an edited file is shown and applied in
// place, --dry-run changes nothing, --prune cancels what the file dropped
// and only the caller's keyed jobs; examples/schedules.yaml applies as it
// is. It also checks -o json, and the exit codes 2 (usage) and 3 (not
// found).
func TestCLIApply(t *testing.T) {
	c := start(t, cluster.Options{})
	ctx := t.Context()
	api := c.API()
	_, userID, token := newUser(t, api, "schedules-bot")
	sdk := tock.New(c.APIURL, token)
	admin := tock.New(c.APIURL, c.Token)
	db, err := pgx.Connect(ctx, c.DatabaseURL)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close(context.Background()) })

	dir := t.TempDir()
	write := func(name, text string) string {
		f := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(f, []byte(text), 0o600))
		return f
	}
	// state is what must not move when nothing changes: each key's job id,
	// generation and audit entries.
	type jobState struct {
		ID         string
		Generation int64
		Audit      int
	}
	state := func(keys ...string) map[string]jobState {
		out := map[string]jobState{}
		for _, k := range keys {
			j, err := sdk.Jobs.GetByKey(ctx, k, "")
			require.NoError(t, err, "key %s", k)
			var s jobState
			s.ID = j.ID
			require.NoError(t, db.QueryRow(ctx, `SELECT generation FROM jobs WHERE id = $1`, j.ID).Scan(&s.Generation))
			audit, err := admin.Audit(ctx, tock.AuditFilter{Job: j.ID, Limit: 500})
			require.NoError(t, err)
			s.Audit = len(audit.Entries)
			out[k] = s
		}
		return out
	}

	const v1 = `
jobs:
  - key: standup
    name: standup reminder
    type: webhook
    schedule: {cron: "0 9 * * 1-5", timezone: Europe/Berlin}
    payload: {url: "https://example.com/hooks/standup", method: POST, body: {text: hi}}
  - key: ping
    name: hourly ping
    type: ping
    schedule: {rrule: "freq=hourly;byminute=5"}
    payload: {url: "https://example.com/healthz"}
    labels: {team: ops, customer: 1234}
    overlap: skip
  - key: weekly
    name: weekly cleanup
    type: webhook
    schedule: {every: week, on: sun, at: "02:00"}
    payload: {url: "https://example.com/jobs/cleanup"}
    timeout: 5m
    retention: 30d
    expires_after: 15m
    notify:
      on: [permanently_failed, recovered]
      webhook: {url: "https://example.com/alerts"}
`
	f1 := write("v1.yaml", v1)
	keys := []string{"standup", "ping", "weekly"}

	// An administrator's keyed job: another caller's, which --prune never touches.
	example := cli(t, c, c.Token, "apply", "-f", "../examples/schedules.yaml")
	require.Equal(t, 0, example.code, example.err)
	require.Equal(t, 0, cli(t, c, c.Token, "apply", "-f", "../examples/schedules.yaml").code)
	require.Contains(t, cli(t, c, c.Token, "apply", "-f", "../examples/schedules.yaml").out, "no changes")

	t.Run("FirstApplyCreates", func(t *testing.T) {
		r := cli(t, c, token, "apply", "-f", f1)
		require.Equal(t, 0, r.code, r.err)
		for _, k := range keys {
			require.Contains(t, r.out, "+ "+k+": create")
			require.Contains(t, r.out, "created "+k+": ")
		}
		require.Contains(t, r.out, "applied: 3 created, 0 updated, 0 cancelled, 0 unchanged")
	})
	before := state(keys...)

	t.Run("SecondApplyChangesNothing", func(t *testing.T) {
		r := cli(t, c, token, "apply", "-f", f1)
		require.Equal(t, 0, r.code, r.err)
		require.Contains(t, r.out, "no changes: 3 job(s) already match")
		require.NotContains(t, r.out, "updated")
		require.Equal(t, before, state(keys...), "same ids, generations and audit")
	})

	t.Run("JSONOutput", func(t *testing.T) {
		r := cli(t, c, token, "apply", "-f", f1, "-o", "json")
		require.Equal(t, 0, r.code, r.err)
		var res struct {
			Changed   bool `json:"changed"`
			Unchanged int  `json:"unchanged"`
			Jobs      []struct {
				Key    string `json:"key"`
				Action string `json:"action"`
				ID     string `json:"id"`
			} `json:"jobs"`
		}
		require.NoError(t, json.Unmarshal([]byte(r.out), &res), r.out)
		require.False(t, res.Changed)
		require.Equal(t, 3, res.Unchanged)
		require.Len(t, res.Jobs, 3)
		require.Equal(t, before["ping"].ID, res.Jobs[1].ID)
	})

	v2 := strings.Replace(v1, `cron: "0 9 * * 1-5"`, `cron: "30 9 * * 1-5"`, 1)
	v2 = strings.Replace(v2, "team: ops", "team: sre", 1)
	f2 := write("v2.yaml", v2)

	t.Run("DryRunChangesNothing", func(t *testing.T) {
		r := cli(t, c, token, "apply", "-f", f2, "--dry-run")
		require.Equal(t, 0, r.code, r.err)
		require.Contains(t, r.out, "~ standup: update "+before["standup"].ID)
		require.Contains(t, r.out, `schedule.cron: "0 9 * * 1-5" → "30 9 * * 1-5"`)
		require.Contains(t, r.out, `labels.team: "ops" → "sre"`)
		require.Contains(t, r.out, "dry run: 0 to create, 2 to update, 0 to cancel, 1 unchanged; nothing changed")
		require.Equal(t, before, state(keys...))
	})

	t.Run("EditAppliesInPlace", func(t *testing.T) {
		r := cli(t, c, token, "apply", "-f", f2)
		require.Equal(t, 0, r.code, r.err)
		require.Contains(t, r.out, "updated standup: "+before["standup"].ID)
		require.Contains(t, r.out, "updated ping: "+before["ping"].ID)
		after := state(keys...)
		for _, k := range keys {
			require.Equal(t, before[k].ID, after[k].ID, "key %s keeps its id", k)
		}
		require.Greater(t, after["standup"].Generation, before["standup"].Generation)
		require.Equal(t, before["weekly"], after["weekly"], "the unchanged entry is not sent")
		j, err := sdk.Jobs.GetByKey(ctx, "standup", "")
		require.NoError(t, err)
		require.Equal(t, "30 9 * * 1-5", j.Schedule.Cron)
		require.Contains(t, cli(t, c, token, "apply", "-f", f2).out, "no changes")
	})

	t.Run("DriftGoesBack", func(t *testing.T) {
		// A change made elsewhere to a field the file leaves at its default.
		j, err := sdk.Jobs.GetByKey(ctx, "weekly", "")
		require.NoError(t, err)
		seven := 7
		_, err = sdk.Jobs.Update(ctx, j.ID, tock.JobPatch{MaxRetries: &seven})
		require.NoError(t, err)
		r := cli(t, c, token, "apply", "-f", f2)
		require.Equal(t, 0, r.code, r.err)
		require.Contains(t, r.out, "max_retries: 7 → 3")
		j, err = sdk.Jobs.GetByKey(ctx, "weekly", "")
		require.NoError(t, err)
		require.Equal(t, 3, j.MaxRetries)
	})

	// v3 drops the weekly job.
	v3 := v2[:strings.Index(v2, "  - key: weekly")]
	f3 := write("v3.yaml", v3)

	t.Run("Prune", func(t *testing.T) {
		weekly := state("weekly")["weekly"].ID
		r := cli(t, c, token, "apply", "-f", f3, "--prune", "--dry-run")
		require.Equal(t, 0, r.code, r.err)
		require.Contains(t, r.out, "- weekly: cancel "+weekly)
		require.Contains(t, r.out, "nothing changed")
		j, err := sdk.Jobs.Get(ctx, weekly)
		require.NoError(t, err)
		require.Equal(t, "scheduled", j.Status)

		// Without --prune the job the file dropped stays.
		r = cli(t, c, token, "apply", "-f", f3)
		require.Contains(t, r.out, "no changes: 2 job(s)")

		r = cli(t, c, token, "apply", "-f", f3, "--prune")
		require.Equal(t, 0, r.code, r.err)
		require.Contains(t, r.out, "cancelled weekly: "+weekly)
		j, err = sdk.Jobs.Get(ctx, weekly)
		require.NoError(t, err)
		require.Equal(t, "cancelled", j.Status)
		require.Contains(t, cli(t, c, token, "apply", "-f", f3, "--prune").out, "no changes: 2 job(s)")

		// Back in the file, the cancelled job is created again, under a new id.
		r = cli(t, c, token, "apply", "-f", f2)
		require.Equal(t, 0, r.code, r.err)
		require.Contains(t, r.out, "+ weekly: create")
		j, err = sdk.Jobs.GetByKey(ctx, "weekly", "")
		require.NoError(t, err)
		require.Equal(t, "scheduled", j.Status)
		require.NotEqual(t, weekly, j.ID)
		r = cli(t, c, token, "apply", "-f", f3, "--prune")
		require.Contains(t, r.out, "cancelled weekly: "+j.ID)

		// The administrator's keyed jobs are not the user's to prune.
		for j, err := range admin.Jobs.All(ctx, tock.JobFilter{Q: ""}) {
			require.NoError(t, err)
			if j.Owner != userID {
				require.Equal(t, "scheduled", j.Status, "job %s of %s", j.Key, j.Owner)
			}
		}
	})

	t.Run("ExitCodes", func(t *testing.T) {
		r := cli(t, c, token, "jobs", "get", "0190c0de-0000-7000-8000-000000000000")
		require.Equal(t, 3, r.code)
		require.Contains(t, r.err, "not_found")
		require.Equal(t, 3, cli(t, c, token, "jobs", "cancel", "0190c0de-0000-7000-8000-000000000000").code)
		require.Equal(t, 2, cli(t, c, token, "apply", "--no-such-flag").code)
		require.Equal(t, 2, cli(t, c, token, "apply").code)
		require.Equal(t, 2, cli(t, c, token, "jobs", "get").code)
		require.Equal(t, 2, cli(t, c, token, "jobs", "list", "-o", "yaml").code)

		noKey := write("nokey.yaml", "jobs:\n  - key: a\n    name: a\n    type: ping\n    delay: 1h\n    payload: {url: https://example.com}\n  - name: the nameless\n    type: ping\n    delay: 1h\n    payload: {url: https://example.com}\n")
		r = cli(t, c, token, "apply", "-f", noKey)
		require.Equal(t, 2, r.code)
		require.Contains(t, r.err, `job 2 ("the nameless") has no key`)

		dup := write("dup.yaml", "jobs:\n  - {key: a, name: a, type: ping, delay: 1h, payload: {url: https://example.com}}\n  - {key: a, name: b, type: ping, delay: 1h, payload: {url: https://example.com}}\n")
		r = cli(t, c, token, "apply", "-f", dup)
		require.Equal(t, 2, r.code)
		require.Contains(t, r.err, `key "a" is given twice`)

		// The server's refusal, with the field at fault; exit 1.
		bad := write("bad.yaml", "jobs:\n  - {key: bad, name: bad, type: ping, schedule: {cron: 'not a cron'}, payload: {url: https://example.com}}\n")
		r = cli(t, c, token, "apply", "-f", bad)
		require.Equal(t, 1, r.code)
		require.Contains(t, r.err, "field: schedule.cron")
	})

	t.Run("JobsCommands", func(t *testing.T) {
		id := before["ping"].ID
		r := cli(t, c, token, "jobs", "get", id, "-o", "json")
		require.Equal(t, 0, r.code, r.err)
		var j tock.Job
		require.NoError(t, json.Unmarshal([]byte(r.out), &j))
		require.Equal(t, "ping", j.Key)
		r = cli(t, c, token, "jobs", "list", "--label", "team=sre", "-o", "json")
		require.Equal(t, 0, r.code, r.err)
		var list tock.JobList
		require.NoError(t, json.Unmarshal([]byte(r.out), &list))
		require.Len(t, list.Jobs, 1)
		require.Equal(t, id, list.Jobs[0].ID)
		require.Equal(t, 0, cli(t, c, token, "jobs", "pause", id).code)
		require.Equal(t, 0, cli(t, c, token, "jobs", "resume", id).code)
		r = cli(t, c, token, "preview", "0 9 * * 1-5", "--tz", "Europe/Berlin", "-n", "3")
		require.Equal(t, 0, r.code, r.err)
		require.Len(t, strings.Split(strings.TrimSpace(r.out), "\n"), 4, "a header and three rows")
	})
}

// TestCLIBackfill drives the backfill commands on the real services: tock
// jobs backfill --wait follows three past occurrences of an hourly job until
// they completed and exits 0, each delivered once as a backfill; jobs
// backfills lists it, backfills get shows it, cancelling it once completed
// is refused (exit 1), and a range in the future is refused with its field.
func TestCLIBackfill(t *testing.T) {
	c := start(t, cluster.Options{Schedulers: 1, Workers: 1})
	target := cluster.NewTarget()
	defer target.Close()
	ctx := t.Context()
	_, _, token := newUser(t, c.API(), "backfiller")
	j, err := tock.New(c.APIURL, token).Jobs.Create(ctx, tock.JobSpec{Name: "hourly", Type: "webhook",
		Schedule: &tock.Schedule{Cron: "0 * * * *"}, Payload: tock.WebhookPayload{URL: target.URL + "/hourly"}})
	require.NoError(t, err)
	from := time.Now().UTC().Truncate(24 * time.Hour).Add(-24 * time.Hour)
	to := from.Add(3 * time.Hour)

	r := cli(t, c, token, "jobs", "backfill", j.ID, "--from", from.Format(time.RFC3339), "--to", to.Format(time.RFC3339), "--wait")
	require.Equal(t, 0, r.code, r.err)
	require.Contains(t, r.out, "running: 0 queued")
	require.Contains(t, r.out, "completed: 3 queued, 3 completed, 0 failed, 0 skipped of 3 (0 ran before, 0 remaining)")
	ds := cluster.ForJob(target.Deliveries(), j.ID)
	require.Len(t, ds, 3)
	for _, d := range ds {
		require.True(t, d.Backfill, "X-Tock-Backfill")
		require.True(t, !d.ScheduledFor.Before(from) && d.ScheduledFor.Before(to), "due %s", d.ScheduledFor)
	}

	r = cli(t, c, token, "jobs", "backfills", j.ID, "-o", "json")
	require.Equal(t, 0, r.code, r.err)
	var list tock.BackfillList
	require.NoError(t, json.Unmarshal([]byte(r.out), &list))
	require.Len(t, list.Backfills, 1)
	id := list.Backfills[0].ID
	require.Contains(t, cli(t, c, token, "backfills", "get", id).out, "status:    completed\n")

	r = cli(t, c, token, "backfills", "cancel", id)
	require.Equal(t, 1, r.code)
	require.Contains(t, r.err, "completed already")
	require.Equal(t, 3, cli(t, c, token, "backfills", "get", "0190c0de-0000-7000-8000-000000000000").code)

	r = cli(t, c, token, "jobs", "backfill", j.ID, "--from", from.Format(time.RFC3339), "--to", time.Now().Add(time.Hour).Format(time.RFC3339))
	require.Equal(t, 1, r.code)
	require.Contains(t, r.err, "field: to")
}

// TestCLICalendars drives the calendar commands on the real services as a
// user: tock calendars apply creates examples/calendars.yaml's calendars,
// the same file again sends no PUT (the calendars' updated_at stays), an
// edit is shown by --dry-run without being made and then made in place; a
// recurring job created with --skip-calendar names them, and preview
// --skip-calendar lists what a calendar skips; list and get show them;
// delete is refused (409, exit 1) while the job can still run and done once
// it is cancelled; a refused calendar exits 1 naming its field.
func TestCLICalendars(t *testing.T) {
	c := start(t, cluster.Options{})
	ctx := t.Context()
	_, _, token := newUser(t, c.API(), "calendar-keeper")
	sdk := tock.New(c.APIURL, token)
	const example = "../examples/calendars.yaml"
	names := []string{"de-holidays", "weekends", "maintenance"}
	updated := func() map[string]time.Time {
		out := map[string]time.Time{}
		for cal, err := range sdk.Calendars.All(ctx) {
			require.NoError(t, err)
			out[cal.Name] = cal.UpdatedAt
		}
		return out
	}

	r := cli(t, c, token, "calendars", "apply", "-f", example)
	require.Equal(t, 0, r.code, r.err)
	for _, n := range names {
		require.Contains(t, r.out, "+ "+n+": create")
		require.Contains(t, r.out, "created "+n+"\n")
	}
	require.Contains(t, r.out, "applied: 3 created, 0 updated, 0 unchanged")
	before := updated()
	require.Len(t, before, 3)

	r = cli(t, c, token, "calendars", "apply", "-f", example)
	require.Equal(t, 0, r.code, r.err)
	require.Contains(t, r.out, "no changes: 3 calendar(s) already match "+example)
	require.Equal(t, before, updated(), "an unchanged calendar is not sent")

	dir := t.TempDir()
	write := func(name, text string) string {
		f := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(f, []byte(text), 0o600))
		return f
	}
	b, err := os.ReadFile(example)
	require.NoError(t, err)
	edited := write("edited.yaml", strings.Replace(string(b), `"2027-05-17"`, `"2027-05-18"`, 1))
	r = cli(t, c, token, "calendars", "apply", "-f", edited, "--dry-run")
	require.Equal(t, 0, r.code, r.err)
	require.Contains(t, r.out, "~ de-holidays: update\n    dates: +2027-05-18 -2027-05-17\n")
	require.Contains(t, r.out, "dry run: 0 to create, 1 to update, 2 unchanged; nothing changed")
	require.Equal(t, before, updated(), "a dry run sends no PUT")
	r = cli(t, c, token, "calendars", "apply", "-f", edited)
	require.Equal(t, 0, r.code, r.err)
	require.Contains(t, r.out, "updated de-holidays\n")
	cal, err := sdk.Calendars.Get(ctx, "de-holidays")
	require.NoError(t, err)
	require.Contains(t, cal.Dates, "2027-05-18")
	require.Equal(t, before["weekends"], updated()["weekends"])

	// A recurring job that skips weekends and the holidays.
	r = cli(t, c, token, "jobs", "create", "--name", "daily report", "--type", "ping", "--target", c.APIURL+"/healthz",
		"--cron", "0 9 * * *", "--tz", "Europe/Berlin", "--skip-calendar", "weekends", "--skip-calendar", "de-holidays", "-o", "json")
	require.Equal(t, 0, r.code, r.err)
	var j tock.Job
	require.NoError(t, json.Unmarshal([]byte(r.out), &j))
	require.Equal(t, []string{"weekends", "de-holidays"}, j.SkipCalendars)
	require.Contains(t, cli(t, c, token, "jobs", "get", j.ID).out, "skip calendars:    weekends, de-holidays\n")
	next, err := sdk.Jobs.NextWithSkipped(ctx, j.ID, 7)
	require.NoError(t, err)
	require.Len(t, next.Next, 7)
	require.NotEmpty(t, next.Skipped, "seven weekdays run over a weekend")
	for _, u := range next.Next {
		require.NotContains(t, []time.Weekday{time.Saturday, time.Sunday}, u.UTC.Weekday(), "%s", u.UTC)
	}

	r = cli(t, c, token, "preview", "0 9 * * *", "--tz", "Europe/Berlin", "-n", "7", "--skip-calendar", "weekends")
	require.Equal(t, 0, r.code, r.err)
	require.Regexp(t, `(?m)^AT\s+UTC\s+SKIPPED$`, r.out)
	require.Regexp(t, `(?m) Sat\s+\S+ \S+\s+calendar weekends: rule "FREQ=WEEKLY;BYDAY=SA,SU" on `, r.out)

	r = cli(t, c, token, "calendars", "list", "-o", "json")
	require.Equal(t, 0, r.code, r.err)
	var list tock.CalendarList
	require.NoError(t, json.Unmarshal([]byte(r.out), &list))
	var listed []string
	for _, cal := range list.Calendars {
		listed = append(listed, cal.Name)
	}
	require.Equal(t, []string{"de-holidays", "maintenance", "weekends"}, listed, "in name order")
	r = cli(t, c, token, "calendars", "get", "maintenance")
	require.Equal(t, 0, r.code, r.err)
	require.Contains(t, r.out, "ranges:    2026-12-31 22:00:00Z to 2027-01-01 02:00:00Z\n")

	r = cli(t, c, token, "calendars", "delete", "weekends")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.err, "(conflict)")
	require.Contains(t, r.err, "skip_calendars")
	require.Equal(t, 0, cli(t, c, token, "calendars", "delete", "maintenance").code, "no job names it")
	require.Equal(t, 3, cli(t, c, token, "calendars", "get", "maintenance").code)
	require.Equal(t, 0, cli(t, c, token, "jobs", "cancel", j.ID).code)
	r = cli(t, c, token, "calendars", "delete", "weekends")
	require.Equal(t, 0, r.code, r.err)
	require.Contains(t, r.out, "deleted calendar weekends")

	bad := write("bad.yaml", "calendars:\n  - name: office-closed\n    dates: [\"2026-12-24\", \"24.12.2026\"]\n")
	r = cli(t, c, token, "calendars", "apply", "-f", bad)
	require.Equal(t, 1, r.code)
	require.Contains(t, r.err, "field: dates[1]")
	require.Equal(t, 3, cli(t, c, token, "calendars", "get", "office-closed").code, "a refused calendar is not stored")
}

// newUser adds a user with a key as the admin, returning the user's API
// client, id and key.
func newUser(t *testing.T, admin *cluster.API, name string) (*cluster.API, string, string) {
	t.Helper()
	api, id, err := admin.User(t.Context(), name, nil)
	require.NoError(t, err)
	return api, id, api.Token
}
