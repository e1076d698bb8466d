package main

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	tock "github.com/tockhq/tock/sdk/go"
)

func (a *app) runsCmd() *cobra.Command {
	return group("runs", "Search and follow runs across jobs", a.runsListCmd(), a.runsTailCmd())
}

// runFlags are the filters of GET /api/v1/runs.
type runFlags struct {
	f            tock.RunFilter
	labels       []string
	since, until string
}

func (r *runFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&r.f.Status, "status", "", "running, completed, failed, permanently_failed, skipped, aborted or expired")
	r.registerFilters(cmd)
}

// registerFilters registers every filter but --status (dead letters have
// one status).
func (r *runFlags) registerFilters(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&r.f.Type, "type", "", "job type")
	fl.StringVar(&r.f.Job, "job", "", "one job's id")
	fl.StringArrayVar(&r.labels, "label", nil, "key=value the runs' jobs carry (repeatable)")
	fl.StringVar(&r.since, "since", "", "due at or after: RFC 3339, or a duration ago (1h, 2d)")
	fl.StringVar(&r.until, "until", "", "due before: RFC 3339, or a duration ago")
	fl.StringVarP(&r.f.Q, "query", "q", "", "text in the run's error, ignoring case")
	fl.StringVar(&r.f.Owner, "owner", "", "(admin) only this user's runs")
}

// filter builds the filter, reading the times relative to now.
func (r *runFlags) filter(now time.Time) (tock.RunFilter, error) {
	f := r.f
	var err error
	if f.Labels, err = parseLabels("label", r.labels); err != nil {
		return f, err
	}
	if f.Since, err = parseWhen("since", r.since, now); err != nil {
		return f, err
	}
	if f.Until, err = parseWhen("until", r.until, now); err != nil {
		return f, err
	}
	return f, nil
}

// parseWhen reads an RFC 3339 instant, or a duration before now.
func parseWhen(flag, s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if d, err := parseDuration(s); err == nil {
		return now.Add(-d), nil
	}
	return time.Time{}, usagef("--%s wants an RFC 3339 instant or a duration such as 1h, not %q", flag, s)
}

func (a *app) runsListCmd() *cobra.Command {
	var r runFlags
	var everything bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "Runs across your jobs, newest first",
		Example: `  tock runs list --status permanently_failed -q refused --since 24h
  tock runs list --label customer=1234 --all -o json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := r.filter(time.Now())
			if err != nil {
				return err
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			return a.printRuns(cmd.Context(), everything, c.Runs.All(cmd.Context(), f), func(ctx context.Context) ([]tock.Run, string, error) {
				page, err := c.Runs.List(ctx, f)
				if err != nil {
					return nil, "", err
				}
				return page.Runs, page.NextCursor, nil
			}, func(runs []tock.Run, next string) any { return tock.RunList{Runs: runs, NextCursor: next} })
		},
	}
	r.register(cmd)
	r.registerPaging(cmd, &everything)
	return cmd
}

// registerPaging registers --limit, --cursor and --all.
func (r *runFlags) registerPaging(cmd *cobra.Command, everything *bool) {
	cmd.Flags().IntVar(&r.f.Limit, "limit", 0, "page size, 1 to 500 (default 50)")
	cmd.Flags().StringVar(&r.f.Cursor, "cursor", "", "start at this page (a next_cursor)")
	cmd.Flags().BoolVar(everything, "all", false, "follow the pages to the last")
}

// printRuns prints one page of runs (one), or every page (all) when
// everything is set: in the run table, or as JSON shaped by asJSON.
func (a *app) printRuns(ctx context.Context, everything bool, all iter.Seq2[tock.Run, error],
	one func(context.Context) ([]tock.Run, string, error), asJSON func([]tock.Run, string) any) error {
	var runs []tock.Run
	next := ""
	if everything {
		for run, err := range all {
			if err != nil {
				return err
			}
			runs = append(runs, run)
		}
	} else {
		var err error
		if runs, next, err = one(ctx); err != nil {
			return err
		}
	}
	if a.output == "json" {
		return printJSON(a.out, asJSON(runs, next))
	}
	t := a.runTable()
	for _, run := range runs {
		runRow(t, run)
	}
	if err := t.flush(); err != nil {
		return err
	}
	if next != "" {
		fmt.Fprintf(a.errOut, "more: --cursor %s, or --all\n", next)
	}
	return nil
}

func (a *app) runsTailCmd() *cobra.Command {
	var r runFlags
	var every time.Duration
	cmd := &cobra.Command{
		Use:   "tail",
		Short: "Print runs as they start and finish, until Ctrl-C",
		Long: `tail asks for the newest runs every second (GET /api/v1/runs) and prints
each run that appears, and again when its status changes (running, then
completed or failed). When more than a page (200) came since the last
look, it follows the pages back, up to 2,000 runs, and says so beyond.
It takes the filters of runs list.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if every <= 0 {
				return usagef("--every must be positive, such as 1s")
			}
			f, err := r.filter(time.Now())
			if err != nil {
				return err
			}
			f.Limit = 200
			c, err := a.client()
			if err != nil {
				return err
			}
			return a.tail(cmd.Context(), c, f, every)
		},
	}
	r.register(cmd)
	cmd.Flags().DurationVar(&every, "every", time.Second, "how often to ask")
	return cmd
}

// tail polls f's first page every interval until ctx ends, printing the
// runs it has not seen in their present status. The first page only sets
// the mark: like tail -f, it prints what comes after.
func (a *app) tail(ctx context.Context, c *tock.Client, f tock.RunFilter, every time.Duration) error {
	seen := map[string]string{} // run id → status last printed
	t := a.runTable()
	if a.output != "json" {
		if err := t.flush(); err != nil {
			return err
		}
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for round := 0; ; round++ {
		page, err := c.Runs.List(ctx, f)
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			return err
		}
		runs := page.Runs
		// More than a page may have come since the last look: follow the
		// pages back until one holds a run already seen, up to a bound.
		for pages := 1; round > 0 && page.NextCursor != "" && !anySeen(page.Runs, seen); pages++ {
			if pages == maxTailPages {
				fmt.Fprintf(a.errOut, "tock: more than %d new runs since the last look; the older ones are not shown\n", len(runs))
				break
			}
			g := f
			g.Cursor = page.NextCursor
			if page, err = c.Runs.List(ctx, g); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
			runs = append(runs, page.Runs...)
		}
		now := make(map[string]string, len(runs))
		// Oldest first, so the output reads in time order.
		for i := len(runs) - 1; i >= 0; i-- {
			run := runs[i]
			now[run.ID] = run.Status
			if round == 0 || seen[run.ID] == run.Status {
				continue
			}
			if a.output == "json" {
				if err := printJSON(a.out, run); err != nil {
					return err
				}
				continue
			}
			runRow(t, run)
		}
		if err := t.flush(); err != nil {
			return err
		}
		seen = now
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// maxTailPages bounds how many pages one look of tail follows back.
const maxTailPages = 10

// anySeen reports whether any of runs was seen at the last look.
func anySeen(runs []tock.Run, seen map[string]string) bool {
	for _, r := range runs {
		if _, ok := seen[r.ID]; ok {
			return true
		}
	}
	return false
}

func (a *app) previewCmd() *cobra.Command {
	var tz string
	var n int
	var skip []string
	cmd := &cobra.Command{
		Use:   "preview '<cron or RRULE>'",
		Short: "Show a schedule's next occurrences, creating nothing",
		Long: `preview shows a schedule's next occurrences, creating nothing. With
--skip-calendar, the occurrences those calendars of yours skip are not
counted among them: they are listed in between, with the calendar's reason.`,
		Example: `  tock preview '0 9 * * 1-5' --tz Europe/Berlin
  tock preview 'FREQ=MONTHLY;BYDAY=1MO;BYHOUR=9;BYMINUTE=0' --tz Europe/Berlin -n 3
  tock preview '0 9 * * 1-5' --tz Europe/Berlin --skip-calendar de-holidays`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s := &tock.Schedule{Timezone: tz}
			if expr := strings.TrimSpace(args[0]); strings.Contains(strings.ToUpper(expr), "FREQ=") {
				s.RRule = expr
			} else {
				s.Cron = expr
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			o, err := c.PreviewWithSkipped(cmd.Context(), tock.PreviewRequest{Schedule: s, N: n, SkipCalendars: skip})
			if err != nil {
				return err
			}
			if a.output == "json" {
				return printJSON(a.out, o)
			}
			return a.printOccurrences(o, len(skip) > 0)
		},
	}
	cmd.Flags().StringVar(&tz, "tz", "", "IANA time zone (default UTC)")
	cmd.Flags().IntVarP(&n, "count", "n", 10, "how many occurrences, 1 to 100")
	cmd.Flags().StringArrayVar(&skip, "skip-calendar", nil, "leave out the days of this calendar of yours (repeatable)")
	return cmd
}

// printOccurrences lists the occurrences in time order; with skipping, a
// SKIPPED column says which calendar skips an occurrence and why ("-" for
// one that runs).
func (a *app) printOccurrences(o *tock.Occurrences, skipping bool) error {
	type row struct {
		utc   time.Time
		cells []string
	}
	const local, utc = "2006-01-02 15:04:05 -07:00 Mon", "2006-01-02 15:04:05Z"
	var rows []row
	for _, u := range o.Next {
		rows = append(rows, row{u.UTC, []string{u.At.Format(local), u.UTC.UTC().Format(utc), "-"}})
	}
	for _, sk := range o.Skipped {
		rows = append(rows, row{sk.UTC, []string{sk.At.Format(local), sk.UTC.UTC().Format(utc), sk.Reason}})
	}
	slices.SortStableFunc(rows, func(x, y row) int { return x.utc.Compare(y.utc) })
	header := []string{"AT", "UTC", "SKIPPED"}
	if !skipping {
		header = header[:2]
	}
	t := newTable(a.out, header...)
	for _, r := range rows {
		t.row(r.cells[:len(header)]...)
	}
	return t.flush()
}
