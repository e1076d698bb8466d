package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	tock "github.com/tockhq/tock/sdk/go"
)

// A calendar is a named set of days off (dates, time ranges, RRULEs) that
// the recurring jobs naming it in skip_calendars do not run on. tock
// calendars apply makes yours match a file, as tock apply does for jobs;
// list, get and delete act on one at a time.

func (a *app) calendarsCmd() *cobra.Command {
	var owner string
	// service is the calendars the command acts on: the caller's, or with
	// --owner another user's (administrators).
	service := func(c *tock.Client) *tock.CalendarsService {
		if owner == "" {
			return c.Calendars
		}
		return c.Calendars.Of(owner)
	}
	cmd := group("calendars", "Apply, list, show and delete calendars (days off that your recurring jobs skip)",
		a.calendarApplyCmd(service), a.calendarListCmd(service), a.calendarGetCmd(service), a.calendarDeleteCmd(service))
	cmd.PersistentFlags().StringVar(&owner, "owner", "", "(admin) act on this user's calendars")
	return cmd
}

// defaultZone is a calendar's timezone when its request gives none: the
// API's default, which the comparison of calendarChanges must know.
const defaultZone = "UTC"

// calendarEntry is one calendar of a calendars file.
type calendarEntry struct {
	pos  int // 1-based place in the file, for messages
	name string
	req  tock.CalendarRequest
}

func (e calendarEntry) label() string {
	if e.name == "" {
		return fmt.Sprintf("calendar %d", e.pos)
	}
	return fmt.Sprintf("calendar %d (%q)", e.pos, e.name)
}

// readCalendars reads a calendars file: a list of calendars under
// calendars: (with x-... fields beside it for what entries share through
// YAML anchors), a list of calendars, or one calendar. Each has a name and
// the fields of PUT /api/v1/calendars/{name}; no name twice. Every problem
// is a usage error naming the entry.
func readCalendars(file string, stdin io.Reader) ([]calendarEntry, error) {
	b, err := readDoc(file, stdin)
	if err != nil {
		return nil, err
	}
	shown := displayName(file)
	want := usagef("%s: want a list of calendars under calendars:, a list of calendars, or one calendar with a name (see tock calendars apply --help)", shown)
	var items []json.RawMessage
	switch {
	case b[0] == '[':
		if json.Unmarshal(b, &items) != nil {
			return nil, want
		}
	case b[0] == '{':
		var doc map[string]json.RawMessage
		if json.Unmarshal(b, &doc) != nil {
			return nil, want
		}
		list, ok := doc["calendars"]
		if !ok {
			if _, named := doc["name"]; !named {
				return nil, want
			}
			// One calendar, the whole document.
			items = []json.RawMessage{b}
			break
		}
		if json.Unmarshal(list, &items) != nil || items == nil {
			return nil, want
		}
		for k := range doc {
			if k != "calendars" && !strings.HasPrefix(k, "x-") {
				return nil, usagef("%s: unknown top-level field %q: want calendars, or x-... for shared settings", shown, k)
			}
		}
	default:
		return nil, want
	}
	var out []calendarEntry
	seen := map[string]int{}
	for i, raw := range items {
		e := calendarEntry{pos: i + 1}
		var probe map[string]any
		if json.Unmarshal(raw, &probe) != nil || probe == nil {
			return nil, usagef("%s: %s is not a calendar object", shown, e.label())
		}
		name, ok := probe["name"].(string)
		e.name = name
		switch {
		case probe["name"] == nil:
			return nil, usagef("%s: %s has no name", shown, e.label())
		case !ok || strings.TrimSpace(name) == "":
			return nil, usagef("%s: %s: name must be a non-empty string", shown, e.label())
		}
		if prev, dup := seen[name]; dup {
			return nil, usagef("%s: name %q is given twice: by calendar %d and calendar %d", shown, name, prev, e.pos)
		}
		seen[name] = e.pos
		// The request's own fields, and the name beside them.
		var v struct {
			Name string `json:"name"`
			tock.CalendarRequest
		}
		if err := strict(raw, &v); err != nil {
			return nil, usagef("%s: %s: %v", shown, e.label(), err)
		}
		e.req = v.CalendarRequest
		out = append(out, e)
	}
	return out, nil
}

// calendarStep is what calendars apply does, or would do, to one calendar.
type calendarStep struct {
	Name    string             `json:"name"`
	Op      string             `json:"action"` // create, update or unchanged
	Changes []tock.FieldChange `json:"changes,omitempty"`
	lines   []string           // Changes for people, one per field
	entry   *calendarEntry
}

// calendarApplyResult is the -o json output of calendars apply.
type calendarApplyResult struct {
	File      string         `json:"file"`
	DryRun    bool           `json:"dry_run"`
	Changed   bool           `json:"changed"`
	Created   int            `json:"created"`
	Updated   int            `json:"updated"`
	Unchanged int            `json:"unchanged"`
	Calendars []calendarStep `json:"calendars"`
}

func (a *app) calendarApplyCmd(service func(*tock.Client) *tock.CalendarsService) *cobra.Command {
	var file string
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "apply -f calendars.yaml [--dry-run]",
		Short: "Make your calendars match a file: create or replace each one it lists",
		Long: `calendars apply reads a YAML or JSON file of calendars and makes the server
match it. The file holds a list under calendars: (x-... fields beside it may
hold YAML anchors the entries share), or a list of calendars, or one
calendar. Each calendar has a name and the fields of
PUT /api/v1/calendars/{name}: timezone (default UTC), dates (YYYY-MM-DD),
ranges ({from, to}, RFC 3339 instants) and rrules (such as
FREQ=YEARLY;BYMONTH=5;BYMONTHDAY=1).

It reads each calendar first (GET) and compares it with its entry as the
server keeps one (an empty timezone is UTC, ranges in order of their start
to the millisecond, dates and rules as written):

  - a name you have no calendar of is created;
  - a calendar that differs is replaced as a whole; a list the entry leaves
    out is emptied;
  - a calendar that already matches is left alone: no PUT is sent.

It prints the plan first, with the fields that change, then makes it;
--dry-run prints it and sends no PUT (the server checks the calendars only
when they are sent). Calendars the file does not name are left as they are.
A refused calendar stops the command with exit 1 and names the field at
fault (dates[1], ranges[0].to, rrules[0], timezone).`,
		Example: `  tock calendars apply -f calendars.yaml --dry-run
  tock calendars apply -f calendars.yaml
  tock calendars apply -f - -o json < calendars.json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file == "" {
				return usagef("calendars apply needs -f FILE (- for standard input)")
			}
			entries, err := readCalendars(file, a.in)
			if err != nil {
				return err
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			cals := service(c)
			ctx := cmd.Context()
			steps, err := planCalendars(ctx, cals, entries)
			if err != nil {
				return err
			}
			res := calendarApplyResult{File: displayName(file), DryRun: dryRun, Calendars: steps}
			if a.output != "json" {
				a.printCalendarPlan(steps)
			}
			if !dryRun {
				err = a.applyCalendars(ctx, cals, steps)
			}
			for _, s := range steps {
				switch s.Op {
				case opCreate:
					res.Created++
				case opUpdate:
					res.Updated++
				default:
					res.Unchanged++
				}
			}
			res.Changed = !dryRun && res.Created+res.Updated > 0
			if a.output == "json" {
				// Scripts learn what was applied before a refusal too.
				if perr := printJSON(a.out, res); perr != nil && err == nil {
					err = perr
				}
				return err
			}
			if err != nil {
				return err
			}
			switch {
			case res.Created+res.Updated == 0:
				fmt.Fprintf(a.out, "no changes: %d calendar(s) already match %s\n", len(steps), res.File)
			case dryRun:
				fmt.Fprintf(a.out, "dry run: %d to create, %d to update, %d unchanged; nothing changed\n", res.Created, res.Updated, res.Unchanged)
			default:
				fmt.Fprintf(a.out, "applied: %d created, %d updated, %d unchanged\n", res.Created, res.Updated, res.Unchanged)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&file, "file", "f", "", "the calendars file, YAML or JSON (- for standard input)")
	fl.BoolVar(&dryRun, "dry-run", false, "print the changes and send no PUT")
	return cmd
}

// planCalendars reads each entry's calendar and says what a PUT of the
// entry would change. It changes nothing.
func planCalendars(ctx context.Context, cals *tock.CalendarsService, entries []calendarEntry) ([]calendarStep, error) {
	steps := make([]calendarStep, 0, len(entries))
	for i := range entries {
		e := &entries[i]
		s := calendarStep{Name: e.name, entry: e}
		have, err := cals.Get(ctx, e.name)
		switch {
		case tock.IsNotFound(err):
			s.Op = opCreate
		case err != nil:
			return nil, fmt.Errorf("read %s: %w", e.label(), err)
		default:
			s.Changes, s.lines = calendarChanges(have, e.req)
			s.Op = opUpdate
			if len(s.Changes) == 0 {
				s.Op = opUnchanged
			}
		}
		steps = append(steps, s)
	}
	return steps, nil
}

// applyCalendars sends a PUT for each calendar to create or update, in the
// file's order, saying each as it is made.
func (a *app) applyCalendars(ctx context.Context, cals *tock.CalendarsService, steps []calendarStep) error {
	for i := range steps {
		s := &steps[i]
		if s.Op == opUnchanged {
			continue
		}
		_, created, err := cals.Put(ctx, s.Name, s.entry.req)
		if err != nil {
			return fmt.Errorf("apply %s: %w", s.entry.label(), err)
		}
		// The server's answer wins: the calendar may have been created or
		// deleted by someone else since the plan.
		done := "updated"
		s.Op = opUpdate
		if created {
			done, s.Op = "created", opCreate
		}
		if a.output != "json" {
			fmt.Fprintf(a.out, "%s %s\n", done, s.Name)
		}
	}
	return nil
}

// printCalendarPlan shows each calendar's fate: + to create, ~ to update
// with the fields that change, = unchanged.
func (a *app) printCalendarPlan(steps []calendarStep) {
	for _, s := range steps {
		switch s.Op {
		case opCreate:
			r := s.entry.req
			fmt.Fprintf(a.out, "+ %s: create (%s: %d date(s), %d range(s), %d rule(s))\n",
				s.Name, first(r.Timezone, defaultZone), len(r.Dates), len(r.Ranges), len(r.Rrules))
		case opUpdate:
			fmt.Fprintf(a.out, "~ %s: update\n", s.Name)
			for _, l := range s.lines {
				fmt.Fprintf(a.out, "    %s\n", l)
			}
		default:
			fmt.Fprintf(a.out, "= %s: unchanged\n", s.Name)
		}
	}
}

// calendarChanges says what a PUT of want would change in have, field by
// field, as the server keeps a calendar: an empty timezone is UTC (the
// API's default), ranges are kept in order of their start, in UTC, to the
// millisecond, and dates and rules as they are written. It returns the
// changes with the whole old and new values, and a line for people for
// each, which names the entries added and removed.
func calendarChanges(have *tock.Calendar, want tock.CalendarRequest) ([]tock.FieldChange, []string) {
	var changes []tock.FieldChange
	var lines []string
	add := func(field string, old, next any, line string) {
		o, _ := json.Marshal(old)
		n, _ := json.Marshal(next)
		changes = append(changes, tock.FieldChange{Field: field, Old: o, New: n})
		lines = append(lines, field+": "+line)
	}
	if tz := first(want.Timezone, defaultZone); tz != have.Timezone {
		add("timezone", have.Timezone, tz, fmt.Sprintf("%q → %q", have.Timezone, tz))
	}
	list := func(field string, old, next []string) {
		old, next = orEmpty(old), orEmpty(next)
		if !slices.Equal(old, next) {
			add(field, old, next, listDelta(old, next))
		}
	}
	list("dates", have.Dates, want.Dates)
	oldRanges := make([]string, 0, len(have.Ranges))
	for _, r := range have.Ranges {
		oldRanges = append(oldRanges, rangeText(r.From, r.To))
	}
	newRanges := make([]string, 0, len(want.Ranges))
	for _, r := range want.Ranges {
		newRanges = append(newRanges, rangeText(r.From, r.To))
	}
	// The server orders ranges by their start; either order is the same
	// calendar.
	slices.Sort(oldRanges)
	slices.Sort(newRanges)
	list("ranges", oldRanges, newRanges)
	list("rrules", have.Rrules, want.Rrules)
	return changes, lines
}

// rangeText writes a range as the server keeps it, from/to in UTC to the
// millisecond (ISO 8601's interval), which also sorts by its start.
func rangeText(from, to time.Time) string {
	const layout = "2006-01-02T15:04:05.000Z"
	return from.UTC().Truncate(time.Millisecond).Format(layout) + "/" + to.UTC().Truncate(time.Millisecond).Format(layout)
}

// listDelta names the entries of next that old lacks (+) and those of old
// that next lacks (-), each as often as it is missing.
func listDelta(old, next []string) string {
	count := map[string]int{}
	for _, s := range old {
		count[s]++
	}
	var added, removed []string
	for _, s := range next {
		if count[s] > 0 {
			count[s]--
			continue
		}
		added = append(added, "+"+s)
	}
	for _, s := range old {
		if count[s] > 0 {
			count[s]--
			removed = append(removed, "-"+s)
		}
	}
	if len(added)+len(removed) == 0 {
		return "the same entries in another order"
	}
	return strings.Join(append(added, removed...), " ")
}

func orEmpty(xs []string) []string {
	if xs == nil {
		return []string{}
	}
	return xs
}

func (a *app) calendarListCmd(service func(*tock.Client) *tock.CalendarsService) *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Short:   "Your calendars in name order, with how many dates, ranges and rules each has",
		Example: `  tock calendars list -o json`,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			cals := []tock.Calendar{}
			for cal, err := range service(c).All(cmd.Context()) {
				if err != nil {
					return err
				}
				cals = append(cals, cal)
			}
			if a.output == "json" {
				return printJSON(a.out, tock.CalendarList{Calendars: cals})
			}
			t := newTable(a.out, "NAME", "TIMEZONE", "DATES", "RANGES", "RRULES", "UPDATED")
			for _, cal := range cals {
				t.row(cal.Name, cal.Timezone, fmt.Sprint(len(cal.Dates)), fmt.Sprint(len(cal.Ranges)), fmt.Sprint(len(cal.Rrules)), when(&cal.UpdatedAt))
			}
			return t.flush()
		},
	}
}

func (a *app) calendarGetCmd(service func(*tock.Client) *tock.CalendarsService) *cobra.Command {
	return &cobra.Command{
		Use:   "get <name>",
		Short: "Show one calendar: its dates, ranges and rules",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			cal, err := service(c).Get(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if a.output == "json" {
				return printJSON(a.out, cal)
			}
			return a.printCalendar(cal)
		},
	}
}

// printCalendar shows a calendar a field a row; long lists go on over the
// rows below, a few entries a row.
func (a *app) printCalendar(cal *tock.Calendar) error {
	t := &table{tw: tabwriter.NewWriter(a.out, 0, 0, 2, ' ', 0)}
	rows := func(label string, items []string, per int) {
		if len(items) == 0 {
			t.row(label, "-")
			return
		}
		for chunk := range slices.Chunk(items, per) {
			t.row(label, strings.Join(chunk, ", "))
			label = ""
		}
	}
	t.row("name:", cal.Name)
	t.row("timezone:", cal.Timezone)
	rows("dates:", cal.Dates, 8)
	var ranges []string
	for _, r := range cal.Ranges {
		ranges = append(ranges, when(&r.From)+" to "+when(&r.To))
	}
	rows("ranges:", ranges, 1)
	rows("rrules:", cal.Rrules, 1)
	t.row("created:", when(&cal.CreatedAt))
	t.row("updated:", when(&cal.UpdatedAt))
	return t.flush()
}

func (a *app) calendarDeleteCmd(service func(*tock.Client) *tock.CalendarsService) *cobra.Command {
	return &cobra.Command{
		Use:   "delete <name>",
		Short: "Delete a calendar (refused while a job that can still run names it in skip_calendars)",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			if err := service(c).Delete(cmd.Context(), args[0]); err != nil {
				return err
			}
			if a.output == "json" {
				return printJSON(a.out, map[string]string{"name": args[0], "status": "deleted"})
			}
			fmt.Fprintf(a.out, "deleted calendar %s\n", args[0])
			return nil
		},
	}
}
