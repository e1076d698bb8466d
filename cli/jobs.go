package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	tock "github.com/tockhq/tock/sdk/go"
)

func (a *app) jobsCmd() *cobra.Command {
	return group("jobs", "List, show, create, edit and act on jobs",
		a.jobsListCmd(), a.jobsGetCmd(), a.jobsCreateCmd(), a.jobsEditCmd(),
		a.jobActionCmd("pause", "Stop a job from running until resumed"),
		a.jobActionCmd("resume", "Let a paused job run again"),
		a.jobActionCmd("trigger", "Run a job once now, besides its schedule"),
		a.jobActionCmd("cancel", "Cancel a job: a one-off that has not started, a recurring one at any time"),
		a.jobActionCmd("retry", "Run one more attempt, now, of the latest permanently failed occurrence"),
		a.jobsBackfillCmd(), a.jobsBackfillsCmd(),
	)
}

// parseLabels reads repeated key=value flags.
func parseLabels(flag string, in []string) (map[string]string, error) {
	if len(in) == 0 {
		return nil, nil
	}
	m := map[string]string{}
	for _, l := range in {
		k, v, ok := strings.Cut(l, "=")
		if !ok || k == "" {
			return nil, usagef("--%s wants key=value, not %q", flag, l)
		}
		m[k] = v
	}
	return m, nil
}

func (a *app) jobsListCmd() *cobra.Command {
	var f tock.JobFilter
	var labels []string
	var everything bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List jobs, newest first",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if f.Labels, err = parseLabels("label", labels); err != nil {
				return err
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			var jobs []tock.Job
			next := ""
			if everything {
				for j, err := range c.Jobs.All(ctx, f) {
					if err != nil {
						return err
					}
					jobs = append(jobs, j)
				}
			} else {
				page, err := c.Jobs.List(ctx, f)
				if err != nil {
					return err
				}
				jobs, next = page.Jobs, page.NextCursor
			}
			if a.output == "json" {
				return printJSON(a.out, tock.JobList{Jobs: jobs, NextCursor: next})
			}
			if err := a.printJobs(jobs); err != nil {
				return err
			}
			if next != "" {
				fmt.Fprintf(a.errOut, "more: --cursor %s, or --all\n", next)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.Status, "status", "", "scheduled, paused, completed, permanently_failed, cancelled or expired")
	fl.StringVar(&f.Type, "type", "", "job type")
	fl.StringArrayVar(&labels, "label", nil, "key=value the jobs carry (repeatable: all must match)")
	fl.StringVarP(&f.Q, "query", "q", "", "a job id, or part of a name")
	fl.StringVar(&f.Owner, "owner", "", "(admin) only this user's jobs")
	fl.BoolVar(&f.AtRisk, "at-risk", false, "only the jobs whose SLO is broken now")
	fl.IntVar(&f.Limit, "limit", 0, "page size, 1 to 500 (default 50)")
	fl.StringVar(&f.Cursor, "cursor", "", "start at this page (a next_cursor)")
	fl.BoolVar(&everything, "all", false, "follow the pages to the last")
	return cmd
}

func (a *app) jobsGetCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "get <id>",
		Short: "Show one job",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			j, err := c.Jobs.Get(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return a.printJob(j)
		},
	}
}

func (a *app) jobsCreateCmd() *cobra.Command {
	var f jobFlags
	cmd := &cobra.Command{
		Use:   "create [-f job.yaml] [flags]",
		Short: "Create a job from a file and/or flags",
		Example: `  tock jobs create --name health --type ping --target https://example.com/health --cron '*/5 * * * *'
  tock jobs create -f job.yaml --label team=ops
  tock jobs create --name order-7 --type webhook --target https://example.com/orders --payload '{"body": {"state": "paid"}}' --debounce order-7 --debounce-window 3s`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			m, err := f.fields(cmd, a.in)
			if err != nil {
				return err
			}
			var spec tock.JobSpec
			if err := remarshal(m, &spec); err != nil {
				return err
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			j, err := c.Jobs.Create(cmd.Context(), spec)
			if err != nil {
				return err
			}
			return a.printJob(j)
		},
	}
	f.register(cmd, true)
	return cmd
}

func (a *app) jobsEditCmd() *cobra.Command {
	var f jobFlags
	cmd := &cobra.Command{
		Use:   "edit <id> [-f changes.yaml] [flags]",
		Short: "Change a job's fields, keeping its id (only the fields given change)",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := f.fields(cmd, a.in)
			if err != nil {
				return err
			}
			if len(m) == 0 {
				return usagef("nothing to change: give -f or a field flag")
			}
			var p tock.JobPatch
			if err := remarshal(m, &p); err != nil {
				return err
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			j, err := c.Jobs.Update(cmd.Context(), args[0], p)
			if err != nil {
				return err
			}
			return a.printJob(j)
		},
	}
	f.register(cmd, false)
	return cmd
}

// remarshal turns fields into v strictly: an unknown field is an error.
func remarshal(fields map[string]any, v any) error {
	b, err := json.Marshal(fields)
	if err != nil {
		return err
	}
	if err := strict(b, v); err != nil {
		return fmt.Errorf("the job's fields: %w", err)
	}
	return nil
}

// jobActionCmd is one of the actions on one job by id.
func (a *app) jobActionCmd(verb, short string) *cobra.Command {
	return &cobra.Command{
		Use:   verb + " <id>",
		Short: short,
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			ctx, id := cmd.Context(), args[0]
			var out any
			switch verb {
			case "pause":
				out, err = c.Jobs.Pause(ctx, id)
			case "resume":
				out, err = c.Jobs.Resume(ctx, id)
			case "trigger":
				out, err = c.Jobs.Trigger(ctx, id)
			case "retry":
				out, err = c.Jobs.Retry(ctx, id, time.Time{})
			case "cancel":
				err = c.Jobs.Cancel(ctx, id)
				out = map[string]string{"id": id, "status": "cancelled"}
			}
			if err != nil {
				return err
			}
			if a.output == "json" {
				return printJSON(a.out, out)
			}
			switch v := out.(type) {
			case *tock.Job:
				fmt.Fprintf(a.out, "%s %s: %s\n", verb, id, v.Status)
			case *tock.Triggered:
				fmt.Fprintf(a.out, "triggered %s: occurrence due %s\n", id, when(&v.ScheduledFor))
			case *tock.Retried:
				fmt.Fprintf(a.out, "retrying %s: attempt %d of the occurrence due %s\n", id, v.Attempt, when(&v.ScheduledFor))
			default:
				fmt.Fprintf(a.out, "cancelled %s\n", id)
			}
			return nil
		},
	}
}
