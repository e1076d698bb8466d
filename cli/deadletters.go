package main

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	tock "github.com/tockhq/tock/sdk/go"
)

func (a *app) deadLettersCmd() *cobra.Command {
	return group("dead-letters", "List, show, replay and purge dead letters (occurrences that failed for good)",
		a.deadListCmd(), a.deadShowCmd(), a.deadActCmd("replay"), a.deadActCmd("purge"))
}

func (a *app) deadListCmd() *cobra.Command {
	var r runFlags
	var everything bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "Your dead letters, newest first",
		Long: `A dead letter is an occurrence whose last attempt ended permanently_failed
(its retries ran out, or it was dead-lettered after TOCK_MAX_DELIVERIES
deliveries without an outcome) and that nobody replayed or purged since. Its
id (the RUN column) is that attempt's run id.`,
		Example: `  tock dead-letters list --since 24h -q "status 500"
  tock dead-letters list --label customer=1234 --all -o json`,
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
			return a.printRuns(cmd.Context(), everything, c.DeadLetters.All(cmd.Context(), f), func(ctx context.Context) ([]tock.Run, string, error) {
				page, err := c.DeadLetters.List(ctx, f)
				if err != nil {
					return nil, "", err
				}
				return page.DeadLetters, page.NextCursor, nil
			}, func(runs []tock.Run, next string) any {
				return tock.DeadLetterList{DeadLetters: runs, NextCursor: next}
			})
		},
	}
	r.registerFilters(cmd)
	r.registerPaging(cmd, &everything)
	return cmd
}

func (a *app) deadShowCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "show ID",
		Short: "One dead letter: the attempt that ended it, its error and output",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			r, err := c.DeadLetters.Get(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if a.output == "json" {
				return printJSON(a.out, r)
			}
			t := &table{tw: tabwriter.NewWriter(a.out, 0, 0, 2, ' ', 0)}
			t.row("dead letter:", r.ID)
			t.row("job:", r.JobID+" "+r.JobName+" ("+r.JobType+")")
			t.row("occurrence due:", when(&r.ScheduledFor))
			t.row("attempt:", fmt.Sprint(r.Attempt))
			t.row("finished:", when(r.FinishedAt))
			t.row("error:", dash(r.Error))
			t.row("output:", dash(r.Output))
			return t.flush()
		},
	}
}

// deadActCmd is replay or purge: of the ids given, or of every dead letter
// the filters select (--all-matching), with --dry-run.
func (a *app) deadActCmd(action string) *cobra.Command {
	var r runFlags
	var matching, dryRun bool
	short := map[string]string{
		"replay": "Run one more attempt, now, of each dead letter's occurrence",
		"purge":  "Take dead letters out of the list (their runs stay in the jobs' histories)",
	}[action]
	cmd := &cobra.Command{
		Use:   action + " [ID...]",
		Short: short,
		Example: fmt.Sprintf(`  tock dead-letters %[1]s 01a2...
  tock dead-letters %[1]s --all-matching --type webhook --since 24h --dry-run`, action),
		RunE: func(cmd *cobra.Command, args []string) error {
			if (len(args) == 0) == !matching {
				return usagef("give dead letters' ids, or --all-matching with filters, not both")
			}
			var req tock.DeadLetterRequest
			req.DryRun = dryRun
			if matching {
				f, err := r.filter(time.Now())
				if err != nil {
					return err
				}
				df := tock.DeadLetterFilter{Type: f.Type, Job: f.Job, Q: f.Q, Owner: f.Owner}
				for k, v := range f.Labels {
					df.Labels = append(df.Labels, k+"="+v)
				}
				if !f.Since.IsZero() {
					df.Since = &f.Since
				}
				if !f.Until.IsZero() {
					df.Until = &f.Until
				}
				req.Filter = &df
			} else {
				req.IDs = args
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			var out *tock.DeadLetterResult
			if action == "replay" {
				out, err = c.DeadLetters.ReplayMany(cmd.Context(), req)
			} else {
				out, err = c.DeadLetters.PurgeMany(cmd.Context(), req)
			}
			if err != nil {
				return err
			}
			if a.output == "json" {
				return printJSON(a.out, out)
			}
			if out.DryRun {
				fmt.Fprintf(a.out, "would %s %d dead letters (dry run)\n", action, out.Matched)
				for _, id := range out.IDs {
					fmt.Fprintln(a.out, id)
				}
			} else {
				fmt.Fprintf(a.out, "%s: %d of %d dead letters\n", map[string]string{"replay": "replayed", "purge": "purged"}[action], out.Changed, out.Matched)
			}
			for _, s := range out.Skipped {
				fmt.Fprintf(a.errOut, "skipped %s: %s\n", s.ID, s.Reason)
			}
			return nil
		},
	}
	r.registerFilters(cmd)
	cmd.Flags().BoolVar(&matching, "all-matching", false, "act on every dead letter the filters select (up to 10,000)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "count and list what would change; change nothing")
	return cmd
}
