package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
)

// errOverBudget says the run finished and lost nothing, but some process
// spent more CPU per job than the budget allows; the figures were still
// written.
var errOverBudget = errors.New("CPU per job over budget")

// budget is the most CPU per job, in µs, that each process may spend in each
// phase of a run, read from the file -budget names (bench/budget.json). It
// bounds CPU per job rather than wall time because this machine's speed
// drifts by ±30 % from minute to minute while a job's CPU barely moves, so CI
// can hold the hot path to a bound without failing at random.
type budget struct {
	path  string
	quick bool                          // the figures are for -quick's sizes
	usMax map[string]map[string]float64 // phase → process → µs per job
}

// budgetFile is the file's shape. About is for people: what the figures
// are and how to refresh them.
type budgetFile struct {
	About    []string                      `json:"about"`
	Quick    *bool                         `json:"quick"`
	UsPerJob map[string]map[string]float64 `json:"us_per_job"`
}

// budgetProcesses are the processes a budget bounds, in the order its table
// lists them, each with where a run's results hold its CPU per job in a
// phase (ok false when the run did not measure it).
var budgetProcesses = []struct {
	name    string
	measure func(r *results, phase string) (usPerJob float64, ok bool)
}{
	{"dashboard", serviceCPU("dashboard")},
	{"scheduler", serviceCPU("scheduler")},
	{"worker", serviceCPU("worker")},
	{"postgres", storeCPU(pgCPUKey)},
	{"redis", storeCPU(redisCPUKey)},
}

// serviceCPU reads a service's CPU from results.CPU, which holds seconds per
// 1,000 jobs: ×1,000 is µs per job.
func serviceCPU(service string) func(*results, string) (float64, bool) {
	return func(r *results, phase string) (float64, bool) {
		v, ok := r.CPU[phase][service]
		return v * 1000, ok
	}
}

// storeCPU reads a store's CPU from results.StoreCost, already µs per job.
func storeCPU(key string) func(*results, string) (float64, bool) {
	return func(r *results, phase string) (float64, bool) {
		v, ok := r.StoreCost[phase][key]
		return v, ok
	}
}

// loadBudget reads and checks a budget file: it must bound every process in
// every phase, with positive figures, and name nothing else. Every problem
// is reported together.
func loadBudget(path string) (*budget, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read budget: %w", err)
	}
	var f budgetFile
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("budget %s: %w", path, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("budget %s: data after the JSON object", path)
	}
	var problems []string
	if f.Quick == nil {
		problems = append(problems, `no "quick" (true when the figures are for -quick's sizes)`)
	}
	processes := make([]string, len(budgetProcesses))
	for i, p := range budgetProcesses {
		processes[i] = p.name
	}
	for phase, byProcess := range f.UsPerJob {
		if !slices.Contains(costPhases, phase) {
			problems = append(problems, fmt.Sprintf("unknown phase %q (want %s)", phase, strings.Join(costPhases, ", ")))
			continue
		}
		for process, us := range byProcess {
			switch {
			case !slices.Contains(processes, process):
				problems = append(problems, fmt.Sprintf("%s: unknown process %q (want %s)", phase, process, strings.Join(processes, ", ")))
			case !(us > 0):
				problems = append(problems, fmt.Sprintf("%s/%s: %v µs per job, want more than 0", phase, process, us))
			}
		}
	}
	for _, phase := range costPhases {
		byProcess, ok := f.UsPerJob[phase]
		if !ok {
			problems = append(problems, fmt.Sprintf("no budget for phase %s", phase))
			continue
		}
		for _, process := range processes {
			if _, ok := byProcess[process]; !ok {
				problems = append(problems, fmt.Sprintf("no budget for %s/%s", phase, process))
			}
		}
	}
	if len(problems) > 0 {
		slices.Sort(problems)
		return nil, fmt.Errorf("budget %s: %s", path, strings.Join(problems, "; "))
	}
	return &budget{path: path, quick: *f.Quick, usMax: f.UsPerJob}, nil
}

// budgetRow is one budgeted figure against what a run measured.
type budgetRow struct {
	figure   string // phase/process
	measured float64
	ok       bool // measured: false when the run could not read it
	max      float64
}

func (r budgetRow) over() bool { return r.ok && r.measured > r.max }

// check compares every budgeted figure with what the run measured, in the
// order of the phases and the processes.
func (b *budget) check(r *results) []budgetRow {
	var rows []budgetRow
	for _, phase := range costPhases {
		for _, p := range budgetProcesses {
			v, ok := p.measure(r, phase)
			rows = append(rows, budgetRow{figure: phase + "/" + p.name, measured: v, ok: ok, max: b.usMax[phase][p.name]})
		}
	}
	return rows
}

// overBudget is errOverBudget naming every figure over its budget, or nil.
func (b *budget) overBudget(rows []budgetRow) error {
	var over []string
	for _, r := range rows {
		if r.over() {
			over = append(over, fmt.Sprintf("%s %.1f µs > %g µs (%.2fx)", r.figure, r.measured, r.max, r.measured/r.max))
		}
	}
	if len(over) == 0 {
		return nil
	}
	return fmt.Errorf("%w (%s): %s", errOverBudget, b.path, strings.Join(over, ", "))
}

// print writes the comparison as a table: every figure, measured, budget,
// their ratio, and whether it passed, went over or was not measured.
func (b *budget) print(out io.Writer, rows []budgetRow) {
	fmt.Fprintf(out, "\nCPU per job against %s (µs)\n", b.path)
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "figure\tmeasured\tbudget\tratio\t")
	for _, r := range rows {
		measured, ratio, verdict := "-", "-", "skipped: not measured"
		if r.ok {
			measured, ratio, verdict = fmt.Sprintf("%.1f", r.measured), fmt.Sprintf("%.2f", r.measured/r.max), "ok"
			if r.over() {
				verdict = "OVER"
			}
		}
		fmt.Fprintf(w, "%s\t%s\t%g\t%s\t%s\n", r.figure, measured, r.max, ratio, verdict)
	}
	_ = w.Flush()
}
