package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	tock "github.com/tockhq/tock/sdk/go"
)

// printJSON writes v indented, for scripts (-o json).
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// table writes aligned columns.
type table struct{ tw *tabwriter.Writer }

func newTable(w io.Writer, header ...string) *table {
	t := &table{tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)}
	t.row(header...)
	return t
}

func (t *table) row(cells ...string) { fmt.Fprintln(t.tw, strings.Join(cells, "\t")) }

func (t *table) flush() error { return t.tw.Flush() }

// when shows an instant in UTC to the second, "-" for none.
func when(t *time.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

// labelText shows labels as k=v,k=v in key order.
func labelText(m map[string]string) string {
	var b []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		b = append(b, k+"="+m[k])
	}
	if len(b) == 0 {
		return "-"
	}
	return strings.Join(b, ",")
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// timing says when a job runs, in one cell.
func timing(j *tock.Job) string {
	s := j.Schedule
	switch {
	case s == nil:
		return "once " + when(j.RunAt)
	case s.Cron != "":
		return "cron " + s.Cron + " " + s.Timezone
	case s.RRule != "":
		return "rrule " + s.RRule + " " + s.Timezone
	default:
		on := ""
		if s.On != nil {
			on = fmt.Sprintf(" on %v", s.On)
		}
		return "every " + s.Every + on + " at " + s.At + " " + s.Timezone
	}
}

func (a *app) printJobs(jobs []tock.Job) error {
	t := newTable(a.out, "ID", "NAME", "TYPE", "STATUS", "NEXT RUN", "KEY", "LABELS")
	for _, j := range jobs {
		t.row(j.ID, j.Name, j.Type, j.Status, when(j.NextRunAt), dash(j.Key), labelText(j.Labels))
	}
	return t.flush()
}

func (a *app) printJob(j *tock.Job) error {
	if a.output == "json" {
		return printJSON(a.out, j)
	}
	t := &table{tw: tabwriter.NewWriter(a.out, 0, 0, 2, ' ', 0)}
	t.row("id:", j.ID)
	t.row("name:", j.Name)
	t.row("type:", j.Type)
	t.row("status:", j.Status+pausedBy(j))
	t.row("key:", dash(j.Key))
	t.row("timing:", timing(j))
	t.row("next run:", when(j.NextRunAt))
	t.row("payload:", string(j.Payload))
	t.row("labels:", labelText(j.Labels))
	t.row("retries, timeout:", fmt.Sprintf("%d, %s", j.MaxRetries, j.Timeout))
	if j.Overlap != "" {
		t.row("overlap:", j.Overlap)
	}
	if len(j.SkipCalendars) > 0 {
		t.row("skip calendars:", strings.Join(j.SkipCalendars, ", "))
	}
	if j.LastRun != nil {
		r := j.LastRun
		t.row("last run:", fmt.Sprintf("%s (attempt %d, due %s) %s", r.Status, r.Attempt, when(&r.ScheduledFor), r.Error))
	}
	t.row("owner:", j.Owner)
	return t.flush()
}

func pausedBy(j *tock.Job) string {
	if j.PausedReason == "" {
		return ""
	}
	return " (" + j.PausedReason + ")"
}

func (a *app) runTable() *table {
	return newTable(a.out, "RUN", "JOB", "NAME", "TYPE", "DUE", "ATTEMPT", "STATUS", "LATE", "ERROR")
}

func runRow(t *table, r tock.Run) {
	t.row(r.ID, r.JobID, r.JobName, r.JobType, when(&r.ScheduledFor), fmt.Sprint(r.Attempt), r.Status,
		fmt.Sprintf("%dms", r.LatenessMS), oneLine(r.Error))
}

// oneLine keeps a cell on one line and short.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return dash(s)
}
