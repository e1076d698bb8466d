package main

import (
	"fmt"
	"strconv"
	"text/tabwriter"

	"github.com/spf13/cobra"

	tock "github.com/tockhq/tock/sdk/go"
)

func (a *app) flowsCmd() *cobra.Command {
	return group("flows", "List, show, set, pause, resume and delete flow keys (your own limits shared by a key's jobs)",
		a.flowListCmd(), a.flowShowCmd(), a.flowSetCmd(), a.flowActCmd("pause"), a.flowActCmd("resume"), a.flowDeleteCmd())
}

func (a *app) printFlows(flows []tock.Flow) error {
	t := &table{tw: tabwriter.NewWriter(a.out, 0, 0, 2, ' ', 0)}
	t.row("KEY", "CONCURRENCY", "RATE", "PAUSED", "IN FLIGHT", "WAITING")
	for _, f := range flows {
		conc := "-"
		if f.Concurrency > 0 {
			conc = strconv.Itoa(f.Concurrency)
		}
		t.row(f.Key, conc, dash(f.Rate), strconv.FormatBool(f.Paused), strconv.FormatInt(f.InFlight, 10), strconv.FormatInt(f.Waiting, 10))
	}
	return t.flush()
}

func (a *app) flowListCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Short:   "Your flow keys with their limits and what each has in flight and waiting",
		Example: `  tock flows list -o json`,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			var flows []tock.Flow
			for f, err := range c.Flows.All(cmd.Context()) {
				if err != nil {
					return err
				}
				flows = append(flows, f)
			}
			if a.output == "json" {
				return printJSON(a.out, tock.FlowList{Flows: append([]tock.Flow{}, flows...)})
			}
			return a.printFlows(flows)
		},
	}
}

func (a *app) flowShowCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "show KEY",
		Short: "One flow key",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			f, err := c.Flows.Get(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if a.output == "json" {
				return printJSON(a.out, f)
			}
			return a.printFlows([]tock.Flow{*f})
		},
	}
}

func (a *app) flowSetCmd() *cobra.Command {
	var req tock.FlowRequest
	cmd := &cobra.Command{
		Use:   "set KEY",
		Short: "Set a flow key's limits as a whole (a limit not given is none)",
		Example: `  tock flows set customer-42 --concurrency 3
  tock flows set sms-provider --rate 50/1s`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			f, err := c.Flows.Put(cmd.Context(), args[0], req)
			if err != nil {
				return err
			}
			if a.output == "json" {
				return printJSON(a.out, f)
			}
			return a.printFlows([]tock.Flow{*f})
		},
	}
	cmd.Flags().IntVar(&req.Concurrency, "concurrency", 0, "at most this many attempts in flight at once (0: no limit)")
	cmd.Flags().StringVar(&req.Rate, "rate", "", "at most COUNT starts in any PERIOD, as COUNT/PERIOD: 50/1s, 1000/1h")
	cmd.Flags().BoolVar(&req.Paused, "paused", false, "hold back everything that comes due")
	return cmd
}

func (a *app) flowActCmd(action string) *cobra.Command {
	short := map[string]string{
		"pause":  "Hold back everything of the key that comes due (attempts running go on)",
		"resume": "Let the key's waiting occurrences out, in due order",
	}[action]
	return &cobra.Command{
		Use:   action + " KEY",
		Short: short,
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			var f *tock.Flow
			if action == "pause" {
				f, err = c.Flows.Pause(cmd.Context(), args[0])
			} else {
				f, err = c.Flows.Resume(cmd.Context(), args[0])
			}
			if err != nil {
				return err
			}
			if a.output == "json" {
				return printJSON(a.out, f)
			}
			return a.printFlows([]tock.Flow{*f})
		},
	}
}

func (a *app) flowDeleteCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "delete KEY",
		Short: "Drop a flow key's limits: its jobs run without them, and what waits comes out",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			if err := c.Flows.Delete(cmd.Context(), args[0]); err != nil {
				return err
			}
			fmt.Fprintf(a.out, "deleted flow key %s\n", args[0])
			return nil
		},
	}
}
