package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	tock "github.com/tockhq/tock/sdk/go"
)

// entry is one job of a schedules file.
type entry struct {
	pos    int            // 1-based place in the file, for messages
	key    string         // the job's key: how apply finds it again
	fields map[string]any // the job as the file gives it, as JSON values
	spec   tock.JobSpec   // the same, as the body of the PUT
}

// name says which entry, for an error: its place and, when it has one, its
// name.
func (e entry) name() string {
	if n, ok := e.fields["name"].(string); ok && n != "" {
		return fmt.Sprintf("job %d (%q)", e.pos, n)
	}
	return fmt.Sprintf("job %d", e.pos)
}

// readSchedules reads a schedules file: {"jobs": [job, ...]}, every job
// with a key, no key twice, and x-... fields beside jobs for settings the
// entries share through YAML anchors. Every problem is a usage error naming
// the entry.
func readSchedules(file string, stdin io.Reader) ([]entry, error) {
	b, err := readDoc(file, stdin)
	if err != nil {
		return nil, err
	}
	shown := displayName(file)
	var doc map[string]json.RawMessage
	var jobs []json.RawMessage
	if json.Unmarshal(b, &doc) != nil || json.Unmarshal(doc["jobs"], &jobs) != nil || jobs == nil {
		return nil, usagef("%s: want a list of jobs under jobs: (see tock apply --help)", shown)
	}
	for k := range doc {
		// x- fields hold what entries share through anchors (<<: *defaults).
		if k != "jobs" && !strings.HasPrefix(k, "x-") {
			return nil, usagef("%s: unknown top-level field %q: want jobs, or x-... for shared settings", shown, k)
		}
	}
	var out []entry
	seen := map[string]int{}
	for i, raw := range jobs {
		e := entry{pos: i + 1}
		if err := json.Unmarshal(raw, &e.fields); err != nil || e.fields == nil {
			return nil, usagef("%s: job %d is not a job object", shown, e.pos)
		}
		k, ok := e.fields["key"].(string)
		switch {
		case e.fields["key"] == nil:
			return nil, usagef("%s: %s has no key: apply finds each job again by its key", shown, e.name())
		case !ok || strings.TrimSpace(k) == "":
			return nil, usagef("%s: %s: key must be a non-empty string", shown, e.name())
		}
		if _, ok := e.fields["owner"]; ok {
			return nil, usagef("%s: %s: owner is not allowed: apply manages the caller's own jobs", shown, e.name())
		}
		if prev, dup := seen[k]; dup {
			return nil, usagef("%s: key %q is given twice: by job %d and %s", shown, k, prev, e.name())
		}
		seen[k] = e.pos
		e.key = k
		if err := strict(raw, &e.spec); err != nil {
			return nil, usagef("%s: %s: %v", shown, e.name(), err)
		}
		out = append(out, e)
	}
	return out, nil
}

// The operations of a plan.
const (
	opCreate    = "create"
	opUpdate    = "update"
	opCancel    = "cancel"
	opUnchanged = "unchanged"
)

// step is what apply does, or would do, to one job.
type step struct {
	Key     string             `json:"key"`
	Op      string             `json:"action"`
	ID      string             `json:"id,omitempty"`
	Name    string             `json:"name,omitempty"`
	Changes []tock.FieldChange `json:"changes,omitempty"`
	entry   *entry             // nil for a cancel
}

// applyResult is the -o json output of apply.
type applyResult struct {
	File      string `json:"file"`
	DryRun    bool   `json:"dry_run"`
	Changed   bool   `json:"changed"`
	Created   int    `json:"created"`
	Updated   int    `json:"updated"`
	Cancelled int    `json:"cancelled"`
	Unchanged int    `json:"unchanged"`
	Jobs      []step `json:"jobs"`
}

func (a *app) applyCmd() *cobra.Command {
	var file string
	var dryRun, prune bool
	cmd := &cobra.Command{
		Use:   "apply -f schedules.yaml [--dry-run] [--prune]",
		Short: "Make your keyed jobs match a schedules file (schedules as code)",
		Long: `apply reads a YAML or JSON file listing jobs under jobs:, each with a key,
and makes the server match it:

  - a key no live job of yours holds is created;
  - a job whose definition differs from its entry is replaced in place
    (PUT /api/v1/jobs/by-key/{key}: same id); a field the entry leaves out
    goes back to its default;
  - a job that already matches is left alone: no request changes it;

The server says what differs (a dry run of the same PUT), field by field,
with its own defaults and rules; a secret (a header value, a Slack URL's
token, a broker password) shows as its fingerprint, which changes with its
value and never reveals it.
  - with --prune, your keyed jobs that can still run and that the file does
    not name are cancelled.

It prints the changes first, field by field, then makes them; --dry-run
prints them and changes nothing. Applying the same file twice changes
nothing the second time ("no changes").

Every entry needs a key; a key given twice is an error. The fields are those
of POST /api/v1/jobs (see docs/cli.md).`,
		Example: `  tock apply -f schedules.yaml --dry-run
  tock apply -f schedules.yaml --prune
  tock apply -f schedules.yaml -o json | jq '.jobs[] | select(.action != "unchanged")'`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file == "" {
				return usagef("apply needs -f FILE (- for standard input)")
			}
			entries, err := readSchedules(file, a.in)
			if err != nil {
				return err
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			steps, err := plan(ctx, c, entries, prune)
			if err != nil {
				return err
			}
			res := applyResult{File: displayName(file), DryRun: dryRun, Jobs: steps}
			if a.output != "json" {
				a.printPlan(steps)
			}
			if !dryRun {
				err = a.execute(ctx, c, steps)
			}
			for _, s := range steps {
				switch s.Op {
				case opCreate:
					res.Created++
				case opUpdate:
					res.Updated++
				case opCancel:
					res.Cancelled++
				default:
					res.Unchanged++
				}
			}
			res.Changed = !dryRun && res.Created+res.Updated+res.Cancelled > 0
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
			a.printSummary(res)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&file, "file", "f", "", "the schedules file, YAML or JSON (- for standard input)")
	fl.BoolVar(&dryRun, "dry-run", false, "print the changes and make none")
	fl.BoolVar(&prune, "prune", false, "also cancel your keyed jobs that the file does not name")
	return cmd
}

// plan asks the server, for each entry, what a PUT of it would do (a dry
// run: PUT /api/v1/jobs/by-key/{key}?dry_run=true), and with prune lists
// the caller's other keyed live jobs for cancelling. It changes nothing.
// The server decides what differs, with its own defaults and rules: the
// command line copies none of them.
func plan(ctx context.Context, c *tock.Client, entries []entry, prune bool) ([]step, error) {
	var steps []step
	var problems []string
	for i := range entries {
		e := &entries[i]
		s := step{Key: e.key, Name: e.spec.Name, entry: e}
		dry, err := c.Jobs.PutDryRun(ctx, e.key, e.spec)
		var te *tock.Error
		switch {
		case errors.As(err, &te) && te.Status == http.StatusConflict && te.Field == "type":
			problems = append(problems, fmt.Sprintf("key %q: %s; cancel the job that holds it or give the entry a new key", e.key, te.Message))
			continue
		case err != nil:
			return nil, fmt.Errorf("check %s, key %q: %w", e.name(), e.key, err)
		}
		s.Changes = dry.Changes
		switch dry.Action {
		case tock.DryRunUpdate:
			s.Op, s.ID = opUpdate, dry.Job.ID
		case tock.DryRunUnchanged:
			s.Op, s.ID = opUnchanged, dry.Job.ID
		default:
			s.Op, s.Changes = opCreate, nil
			if dry.Current != nil && len(dry.Changes) == 0 {
				// A finished job the entry still describes has run its
				// course: it is not created again.
				s.Op, s.ID = opUnchanged, dry.Current.ID
			}
		}
		steps = append(steps, s)
	}
	if len(problems) > 0 {
		return nil, errors.New(strings.Join(problems, "\n"))
	}
	if !prune {
		return steps, nil
	}
	named := map[string]bool{}
	for _, e := range entries {
		named[e.key] = true
	}
	me, err := c.Me(ctx)
	if err != nil {
		return nil, fmt.Errorf("find who you are, for --prune: %w", err)
	}
	var stale []step
	// The jobs that can still run are scheduled or paused.
	for _, status := range []string{"scheduled", "paused"} {
		for j, err := range c.Jobs.All(ctx, tock.JobFilter{Status: status, Owner: me.ID, Limit: 500}) {
			if err != nil {
				return nil, fmt.Errorf("list your %s jobs, for --prune: %w", status, err)
			}
			if j.Key != "" && !named[j.Key] {
				stale = append(stale, step{Key: j.Key, Op: opCancel, ID: j.ID, Name: j.Name})
			}
		}
	}
	slices.SortFunc(stale, func(x, y step) int { return strings.Compare(x.Key, y.Key) })
	return append(steps, stale...), nil
}

// execute makes the planned changes in the file's order, then the
// cancellations, saying each as it is made.
func (a *app) execute(ctx context.Context, c *tock.Client, steps []step) error {
	for i := range steps {
		s := &steps[i]
		switch s.Op {
		case opCreate, opUpdate:
			j, created, err := c.Jobs.Put(ctx, s.Key, s.entry.spec)
			if err != nil {
				return fmt.Errorf("apply %s, key %q: %w", s.entry.name(), s.Key, err)
			}
			s.ID = j.ID
			// The server's answer wins: the job may have been created or
			// cancelled by someone else since the plan.
			done := "updated"
			s.Op = opUpdate
			if created {
				done, s.Op = "created", opCreate
			}
			if a.output != "json" {
				fmt.Fprintf(a.out, "%s %s: %s\n", done, s.Key, j.ID)
			}
		case opCancel:
			err := c.Jobs.Cancel(ctx, s.ID)
			if tock.IsNotFound(err) {
				err = nil // gone since the plan: nothing to cancel
			}
			if err != nil {
				return fmt.Errorf("cancel key %q (%s): %w", s.Key, s.ID, err)
			}
			if a.output != "json" {
				fmt.Fprintf(a.out, "cancelled %s: %s\n", s.Key, s.ID)
			}
		}
	}
	return nil
}

// printPlan shows what apply changes: + to create, ~ to update with the
// fields that change, - to cancel.
func (a *app) printPlan(steps []step) {
	for _, s := range steps {
		switch s.Op {
		case opCreate:
			fmt.Fprintf(a.out, "+ %s: create %s job %q\n", s.Key, s.entry.spec.Type, s.Name)
		case opUpdate:
			fmt.Fprintf(a.out, "~ %s: update %s\n", s.Key, s.ID)
			for _, ch := range s.Changes {
				fmt.Fprintf(a.out, "    %s: %s → %s\n", ch.Field, shown(ch.Old), shown(ch.New))
			}
		case opCancel:
			fmt.Fprintf(a.out, "- %s: cancel %s %q (not in the file)\n", s.Key, s.ID, s.Name)
		}
	}
}

func (a *app) printSummary(r applyResult) {
	total := len(r.Jobs)
	switch {
	case r.Created+r.Updated+r.Cancelled == 0:
		fmt.Fprintf(a.out, "no changes: %d job(s) already match %s\n", total, r.File)
	case r.DryRun:
		fmt.Fprintf(a.out, "dry run: %d to create, %d to update, %d to cancel, %d unchanged; nothing changed\n",
			r.Created, r.Updated, r.Cancelled, r.Unchanged)
	default:
		fmt.Fprintf(a.out, "applied: %d created, %d updated, %d cancelled, %d unchanged\n",
			r.Created, r.Updated, r.Cancelled, r.Unchanged)
	}
}
