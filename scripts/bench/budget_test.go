package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// budgetJSON is a budget file allowing us µs per job to every process in
// every phase, after edit has changed its parsed form.
func budgetJSON(t *testing.T, us float64, edit func(f map[string]any)) string {
	t.Helper()
	perJob := map[string]any{}
	for _, phase := range costPhases {
		byProcess := map[string]any{}
		for _, p := range budgetProcesses {
			byProcess[p.name] = us
		}
		perJob[phase] = byProcess
	}
	f := map[string]any{"about": []string{"test"}, "quick": true, "us_per_job": perJob}
	if edit != nil {
		edit(f)
	}
	b, err := json.Marshal(f)
	require.NoError(t, err)
	return string(b)
}

// writeBudget writes body to a budget file of the test's own.
func writeBudget(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "budget.json")
	require.NoError(t, os.WriteFile(path, []byte(body), 0o644))
	return path
}

// measured is a run's results in which every process spent us µs per job in
// every phase.
func measured(us float64) *results {
	r := &results{CPU: map[string]map[string]float64{}, StoreCost: map[string]map[string]float64{}}
	for _, phase := range costPhases {
		r.CPU[phase] = map[string]float64{"dashboard": us / 1000, "scheduler": us / 1000, "worker": us / 1000}
		r.StoreCost[phase] = map[string]float64{pgCPUKey: us, walKey: 1000, redisCPUKey: us}
	}
	return r
}

func TestBudgetCheck(t *testing.T) {
	t.Parallel()
	bud, err := loadBudget(writeBudget(t, budgetJSON(t, 100, nil)))
	require.NoError(t, err)

	t.Run("UnderBudgetPasses", func(t *testing.T) {
		t.Parallel()
		rows := bud.check(measured(99.9))
		require.Len(t, rows, len(costPhases)*len(budgetProcesses))
		require.NoError(t, bud.overBudget(rows))
	})
	t.Run("OverBudgetFailsAndNamesTheFigure", func(t *testing.T) {
		t.Parallel()
		r := measured(50)
		r.CPU["burst"]["worker"] = 0.150 // s per 1,000 jobs: 150 µs per job
		r.StoreCost["steady"][redisCPUKey] = 130
		err := bud.overBudget(bud.check(r))
		require.ErrorIs(t, err, errOverBudget)
		require.ErrorContains(t, err, "burst/worker 150.0 µs > 100 µs (1.50x)")
		require.ErrorContains(t, err, "steady/redis 130.0 µs > 100 µs (1.30x)")
		require.NotContains(t, err.Error(), "burst/redis")
		require.Equal(t, 3, exitCode(err))
	})
	t.Run("AMissingMeasurementIsSkipped", func(t *testing.T) {
		t.Parallel()
		r := measured(50)
		delete(r.StoreCost, "ingest") // Postgres and Redis unreadable
		rows := bud.check(r)
		require.NoError(t, bud.overBudget(rows))
		var out bytes.Buffer
		bud.print(&out, rows)
		require.Regexp(t, `ingest/postgres +- +100 +- +skipped: not measured`, out.String())
		require.Regexp(t, `ingest/dashboard +50\.0 +100 +0\.50 +ok`, out.String())
	})
	t.Run("TheTableMarksWhatIsOver", func(t *testing.T) {
		t.Parallel()
		r := measured(50)
		r.StoreCost["burst"][pgCPUKey] = 250
		var out bytes.Buffer
		bud.print(&out, bud.check(r))
		require.Regexp(t, `burst/postgres +250\.0 +100 +2\.50 +OVER`, out.String())
	})
}

func TestLoadBudget(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		body string
		want []string
	}{
		{"NotJSON", `{"quick": true,`, []string{"unexpected EOF"}},
		{"DataAfterTheObject", budgetJSON(t, 100, nil) + "{}", []string{"data after the JSON object"}},
		{"UnknownField", budgetJSON(t, 100, func(f map[string]any) { f["us_per_jobs"] = 1 }), []string{`unknown field "us_per_jobs"`}},
		{"NoQuick", budgetJSON(t, 100, func(f map[string]any) { delete(f, "quick") }), []string{`no "quick"`}},
		{"UnknownPhase", budgetJSON(t, 100, func(f map[string]any) {
			f["us_per_job"].(map[string]any)["bursts"] = map[string]any{"worker": 1}
		}), []string{`unknown phase "bursts"`}},
		{"UnknownProcess", budgetJSON(t, 100, func(f map[string]any) {
			f["us_per_job"].(map[string]any)["burst"].(map[string]any)["workers"] = 1
		}), []string{`burst: unknown process "workers"`}},
		{"NotPositive", budgetJSON(t, 100, func(f map[string]any) {
			f["us_per_job"].(map[string]any)["steady"].(map[string]any)["redis"] = 0
			f["us_per_job"].(map[string]any)["ingest"].(map[string]any)["worker"] = -5
		}), []string{"steady/redis: 0 µs per job", "ingest/worker: -5 µs per job"}},
		{"MissingFigure", budgetJSON(t, 100, func(f map[string]any) {
			delete(f["us_per_job"].(map[string]any)["burst"].(map[string]any), "postgres")
			delete(f["us_per_job"].(map[string]any), "steady")
		}), []string{"no budget for burst/postgres", "no budget for phase steady"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := writeBudget(t, tc.body)
			_, err := loadBudget(path)
			require.ErrorContains(t, err, fmt.Sprintf("budget %s: ", path))
			for _, w := range tc.want {
				require.ErrorContains(t, err, w)
			}
		})
	}
	t.Run("MissingFile", func(t *testing.T) {
		t.Parallel()
		_, err := loadBudget(filepath.Join(t.TempDir(), "none.json"))
		require.ErrorContains(t, err, "read budget")
	})
	t.Run("TheCheckedInBudgetIsValid", func(t *testing.T) {
		t.Parallel()
		bud, err := loadBudget("../../bench/budget.json")
		require.NoError(t, err)
		require.True(t, bud.quick, "make bench-quick uses it")
	})
}

func TestExitCode(t *testing.T) {
	t.Parallel()
	over := fmt.Errorf("%w: burst/worker", errOverBudget)
	failed := fmt.Errorf("%w: burst: 1 lost", errFailed)
	require.Equal(t, 3, exitCode(over))
	require.Equal(t, 1, exitCode(errors.Join(failed, over)), "a lost job outranks the budget")
	require.Equal(t, 1, exitCode(failed))
}
