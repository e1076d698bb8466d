package main

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	tock "github.com/tockhq/tock/sdk/go"
)

// A backfill runs the past occurrences of a recurring job that never ran:
// tock jobs backfill starts one (and may wait for it), tock jobs backfills
// lists a job's, tock backfills shows or cancels one by its id.

func (a *app) backfillsCmd() *cobra.Command {
	return group("backfills", "Show and cancel backfills (past occurrences of a job run after the fact)",
		a.backfillGetCmd(), a.backfillCancelCmd())
}

func (a *app) jobsBackfillCmd() *cobra.Command {
	var from, to, overlap string
	var wait bool
	cmd := &cobra.Command{
		Use:   "backfill <id> --from <time> --to <time>",
		Short: "Run the occurrences of a recurring job in a past range that never ran",
		Long: `backfill runs the occurrences of a scheduled recurring job whose times fall
in [--from, --to) and that never ran; those that ran already are left alone.
The scheduler queues them a few at a time, and the command returns at once
with the backfill's id, unless --wait: then it asks every second and prints
the backfill's progress until it ends, and exits 1 when any occurrence failed
or the backfill was cancelled. With -o json, --wait prints only the final
backfill (the progress goes to stderr).`,
		Example: `  tock jobs backfill 0193a... --from 2026-11-01T00:00:00Z --to 2026-11-08T00:00:00Z
  tock jobs backfill 0193a... --from 7d --to 1h --overlap skip --wait`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if from == "" || to == "" {
				return usagef("--from and --to are both required")
			}
			now := time.Now()
			var req tock.BackfillRequest
			var err error
			if req.From, err = parseWhen("from", from, now); err != nil {
				return err
			}
			if req.To, err = parseWhen("to", to, now); err != nil {
				return err
			}
			req.Overlap = overlap
			c, err := a.client()
			if err != nil {
				return err
			}
			b, err := c.Jobs.Backfill(cmd.Context(), args[0], req)
			if err != nil {
				return err
			}
			if !wait {
				return a.printBackfill(b)
			}
			return a.waitBackfill(cmd.Context(), c, b, time.Second)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&from, "from", "", "start of the range (included): RFC 3339, or a duration ago (7d, 1h)")
	fl.StringVar(&to, "to", "", "end of the range (excluded), not in the future: RFC 3339, or a duration ago")
	fl.StringVar(&overlap, "overlap", "", "allow, skip or buffer_one (default the job's own policy)")
	fl.BoolVar(&wait, "wait", false, "follow the backfill until it ends; exit 1 if any occurrence failed or it was cancelled")
	return cmd
}

// waitBackfill asks for b every interval until it is no longer running,
// printing which backfill it is, then a line each time its progress moves
// (on stderr with -o json, where stdout gets the final backfill alone), and
// returns an error when any of its occurrences failed or it was cancelled.
func (a *app) waitBackfill(ctx context.Context, c *tock.Client, b *tock.Backfill, every time.Duration) error {
	progress := a.out
	if a.output == "json" {
		progress = a.errOut
	}
	fmt.Fprintf(progress, "backfill %s of job %s: %s to %s, overlap %s\n", b.ID, b.JobID, when(&b.From), when(&b.To), dash(b.Overlap))
	tick := time.NewTicker(every)
	defer tick.Stop()
	last := ""
	for {
		if line := progressLine(b); line != last {
			fmt.Fprintln(progress, line)
			last = line
		}
		if b.Status != tock.BackfillRunning {
			break
		}
		select {
		case <-ctx.Done():
			return stoppedWaiting(b.ID, ctx.Err())
		case <-tick.C:
		}
		next, err := c.Backfills.Get(ctx, b.ID)
		switch {
		case ctx.Err() != nil:
			return stoppedWaiting(b.ID, ctx.Err())
		case err != nil:
			return err
		}
		b = next
	}
	if a.output == "json" {
		if err := printJSON(a.out, b); err != nil {
			return err
		}
	}
	switch {
	case b.Status == tock.BackfillCancelled:
		return fmt.Errorf("backfill %s was cancelled: %s", b.ID, dash(b.Reason))
	case b.Failed > 0:
		return fmt.Errorf("backfill %s: %d of %d occurrences queued failed", b.ID, b.Failed, b.Queued)
	}
	return nil
}

func stoppedWaiting(id string, err error) error {
	return fmt.Errorf("stopped waiting for backfill %s, which goes on (tock backfills get %s): %w", id, id, err)
}

// progressLine says where a backfill stands, in one line.
func progressLine(b *tock.Backfill) string {
	return fmt.Sprintf("%s: %d queued, %d completed, %d failed, %d skipped of %d (%d ran before, %d remaining)",
		b.Status, b.Queued, b.Completed, b.Failed, b.Skipped, b.Total, b.Existing, b.Remaining)
}

func (a *app) printBackfill(b *tock.Backfill) error {
	if a.output == "json" {
		return printJSON(a.out, b)
	}
	status := b.Status
	if b.Reason != "" {
		status += " (" + b.Reason + ")"
	}
	t := &table{tw: tabwriter.NewWriter(a.out, 0, 0, 2, ' ', 0)}
	t.row("id:", b.ID)
	t.row("job:", b.JobID)
	t.row("range:", when(&b.From)+" to "+when(&b.To))
	t.row("overlap:", b.Overlap)
	t.row("status:", status)
	t.row("progress:", progressLine(b))
	t.row("created:", when(&b.CreatedAt))
	t.row("finished:", when(b.FinishedAt))
	return t.flush()
}

func (a *app) jobsBackfillsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "backfills <id>",
		Short: "List a job's backfills, newest first",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			bs, err := c.Jobs.Backfills(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if a.output == "json" {
				return printJSON(a.out, tock.BackfillList{Backfills: append([]tock.Backfill{}, bs...)})
			}
			t := newTable(a.out, "ID", "FROM", "TO", "OVERLAP", "STATUS", "TOTAL", "RAN BEFORE", "QUEUED", "COMPLETED", "FAILED", "SKIPPED", "REMAINING", "CREATED")
			for _, b := range bs {
				t.row(b.ID, when(&b.From), when(&b.To), b.Overlap, b.Status, fmt.Sprint(b.Total), fmt.Sprint(b.Existing),
					fmt.Sprint(b.Queued), fmt.Sprint(b.Completed), fmt.Sprint(b.Failed), fmt.Sprint(b.Skipped),
					fmt.Sprint(b.Remaining), when(&b.CreatedAt))
			}
			return t.flush()
		},
	}
}

func (a *app) backfillGetCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "get <id>",
		Short: "Show a backfill and its progress",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			b, err := c.Backfills.Get(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return a.printBackfill(b)
		},
	}
}

func (a *app) backfillCancelCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "cancel <id>",
		Short: "Stop a running backfill: nothing more of it is queued (one running ends as it would)",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			b, err := c.Backfills.Cancel(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return a.printBackfill(b)
		},
	}
}
