package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// results is the JSON the benchmark writes. The first block holds the figures
// the issue asks for, always present; the rest is context for reading them.
type results struct {
	IngestBulkJobsPerS     float64 `json:"ingest_bulk_jobs_per_s"`
	IngestSingleJobsPerS   float64 `json:"ingest_single_jobs_per_s"`
	BurstLastStartS        float64 `json:"burst_last_start_s"`
	BurstLastDoneS         float64 `json:"burst_last_done_s"`
	BurstLatenessP99MS     float64 `json:"burst_lateness_p99_ms"`
	SteadyLatenessP50MS    float64 `json:"steady_lateness_p50_ms"`
	SteadyLatenessP99MS    float64 `json:"steady_lateness_p99_ms"`
	SteadyLatenessMaxMS    float64 `json:"steady_lateness_max_ms"`
	SteadyEarlyStarts      int     `json:"steady_early_starts"`
	RedisBytesPerWindowJob float64 `json:"redis_bytes_per_window_job"`
	PGBytesPerPendingJob   float64 `json:"pg_bytes_per_pending_job"`

	BurstLatenessP50MS float64 `json:"burst_lateness_p50_ms"`
	BurstLatenessMaxMS float64 `json:"burst_lateness_max_ms"`
	BurstEarlyStarts   int     `json:"burst_early_starts"`
	BurstJobs          int     `json:"burst_jobs"`
	BurstFlowKeys      int     `json:"burst_flow_keys,omitempty"`
	BurstLost          int     `json:"burst_lost"`
	BurstDuplicates    int     `json:"burst_duplicates"`
	BurstLeadS         float64 `json:"burst_lead_s"`
	// BurstSpreadS is how long the burst's due times span (0: one instant);
	// the last start is also given from the last due time.
	BurstSpreadS                float64 `json:"burst_spread_s"`
	BurstLastStartAfterLastDueS float64 `json:"burst_last_start_after_last_due_s"`

	SteadyJobs       int     `json:"steady_jobs"`
	SteadyRatePerS   int     `json:"steady_rate_per_s"`
	SteadySeconds    float64 `json:"steady_seconds"`
	SteadyLost       int     `json:"steady_lost"`
	SteadyDuplicates int     `json:"steady_duplicates"`
	SteadyLastDoneS  float64 `json:"steady_last_done_after_end_s"`

	IngestBulkJobs        int `json:"ingest_bulk_jobs"`
	IngestBulkBatch       int `json:"ingest_bulk_batch"`
	IngestBulkConcurrency int `json:"ingest_bulk_concurrency"`
	IngestSingleJobs      int `json:"ingest_single_jobs"`
	IngestSingleClients   int `json:"ingest_single_clients"`

	RedisWindowJobs         int64 `json:"redis_window_jobs"`
	RedisDueSetBytes        int64 `json:"redis_due_set_bytes"`
	RedisBytesBeyondHorizon int64 `json:"redis_bytes_beyond_horizon"`
	RedisJobsBeyondHorizon  int64 `json:"redis_jobs_beyond_horizon"`
	PGJobsBytes             int64 `json:"pg_jobs_bytes"`
	PGPendingJobs           int64 `json:"pg_pending_jobs"`
	// PGBytesPerPendingJobBy splits pg_bytes_per_pending_job: heap, TOAST
	// and each index.
	PGBytesPerPendingJobBy map[string]float64 `json:"pg_bytes_per_pending_job_by"`
	PayloadBytes           int                `json:"payload_bytes"`

	// BurstPGCPUUsPerJob is Postgres's CPU per burst job from the due time
	// until every job had run (River's bench measures the same span);
	// Ingest and Steady the same for their phases. StoreCost has these and
	// the WAL bytes and Redis CPU per job, by phase.
	BurstPGCPUUsPerJob  float64                       `json:"burst_pg_cpu_us_per_job"`
	IngestPGCPUUsPerJob float64                       `json:"ingest_pg_cpu_us_per_job"`
	SteadyPGCPUUsPerJob float64                       `json:"steady_pg_cpu_us_per_job"`
	StoreCost           map[string]map[string]float64 `json:"store_cost"`
	// IdleCPUMsPerS is the CPU each service (its processes summed),
	// Postgres and Redis spend a second with nothing due, in ms, and their
	// total: the idle phase.
	IdleCPUMsPerS map[string]float64 `json:"idle_cpu_ms_per_s,omitempty"`

	// CPU is CPU seconds per 1,000 jobs by phase and service (all processes
	// of a service summed); CPUByProcess the same per process.
	CPU          map[string]map[string]float64 `json:"cpu_s_per_1000_jobs"`
	CPUByProcess map[string]map[string]float64 `json:"cpu_s_per_1000_jobs_by_process"`
	PhaseSeconds map[string]float64            `json:"phase_seconds"`
	// PeakMemoryMB is each service process's peak resident memory (VmHWM),
	// Redis's used_memory_peak and the database's size, read after the burst.
	PeakMemoryMB map[string]float64 `json:"peak_memory_mb"`

	Quick      bool     `json:"quick"`
	Workers    int      `json:"workers"`
	Schedulers int      `json:"schedulers"`
	Machine    machine  `json:"machine"`
	StartedAt  string   `json:"started_at"`
	Failures   []string `json:"failures"`
}

// machine says where the figures were taken.
type machine struct {
	Cores     int    `json:"cores"`
	GoVersion string `json:"go_version"`
	OS        string `json:"os"`
	Commit    string `json:"git_commit"`
}

func (r *results) fail(format string, args ...any) {
	r.Failures = append(r.Failures, fmt.Sprintf(format, args...))
}

// write stores the figures as indented JSON, creating the directory.
func (r *results) write(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	return nil
}

// print writes the human table.
func (r *results) print(out io.Writer) {
	mode := "full"
	if r.Quick {
		mode = "quick"
	}
	fmt.Fprintf(out, "\ntock bench (%s): %d scheduler(s), %d worker(s); %d cores, %s, %s, commit %s\n\n",
		mode, r.Schedulers, r.Workers, r.Machine.Cores, r.Machine.OS, r.Machine.GoVersion, r.Machine.Commit)
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	row := func(name, value, note string) { fmt.Fprintf(w, "%s\t%s\t%s\n", name, value, note) }
	row("figure", "value", "")
	row("------", "-----", "")
	row("ingest, bulk API", fmt.Sprintf("%.0f jobs/s", r.IngestBulkJobsPerS),
		fmt.Sprintf("%d jobs in requests of %d, %d at a time", r.IngestBulkJobs, r.IngestBulkBatch, r.IngestBulkConcurrency))
	row("ingest, single POSTs", fmt.Sprintf("%.0f jobs/s", r.IngestSingleJobsPerS),
		fmt.Sprintf("%d jobs from %d clients", r.IngestSingleJobs, r.IngestSingleClients))
	when := "at one instant"
	if r.BurstSpreadS > 0 {
		when = fmt.Sprintf("over %.0f s; last start %.2f s after the last due", r.BurstSpreadS, r.BurstLastStartAfterLastDueS)
	}
	row("burst: due to last start", fmt.Sprintf("%.2f s", r.BurstLastStartS), fmt.Sprintf("%d jobs due %s", r.BurstJobs, when))
	row("burst: due to last completion", fmt.Sprintf("%.2f s", r.BurstLastDoneS), "")
	row("burst: lateness p50/p99/max", fmt.Sprintf("%.0f / %.0f / %.0f ms", r.BurstLatenessP50MS, r.BurstLatenessP99MS, r.BurstLatenessMaxMS),
		fmt.Sprintf("lost %d, duplicates %d, early %d", r.BurstLost, r.BurstDuplicates, r.BurstEarlyStarts))
	row("steady: lateness p50/p99/max", fmt.Sprintf("%.1f / %.1f / %.1f ms", r.SteadyLatenessP50MS, r.SteadyLatenessP99MS, r.SteadyLatenessMaxMS),
		fmt.Sprintf("%d jobs/s for %.0f s (%d jobs)", r.SteadyRatePerS, r.SteadySeconds, r.SteadyJobs))
	row("steady: early starts", fmt.Sprint(r.SteadyEarlyStarts), fmt.Sprintf("lost %d, duplicates %d; must be 0", r.SteadyLost, r.SteadyDuplicates))
	row("Redis bytes per window job", fmt.Sprintf("%.1f", r.RedisBytesPerWindowJob),
		fmt.Sprintf("due set of %d jobs: %d bytes", r.RedisWindowJobs, r.RedisDueSetBytes))
	row("Redis bytes beyond horizon", fmt.Sprint(r.RedisBytesBeyondHorizon),
		fmt.Sprintf("%d jobs due in a day; %d of them in Redis", r.PGPendingJobs, r.RedisJobsBeyondHorizon))
	row("Postgres bytes per pending job", fmt.Sprintf("%.0f", r.PGBytesPerPendingJob),
		fmt.Sprintf("jobs partitions with indexes: %d bytes for %d jobs; payload %d bytes", r.PGJobsBytes, r.PGPendingJobs, r.PayloadBytes))
	_ = w.Flush()

	phaseTable(out, "CPU s per 1,000 jobs\tdashboard\tscheduler\tworker", cpuPhases, r.CPU, "%.3f", "dashboard", "scheduler", "worker")
	fmt.Fprintln(out, "(user+system CPU, each service's processes summed; burst and steady: from just before the first due time")
	fmt.Fprintln(out, " until every job had run, as River's bench measures; *_create: from the first create until then)")
	if len(r.StoreCost) > 0 {
		phaseTable(out, "stores per job\tPostgres CPU µs\tWAL bytes\tRedis CPU µs", costPhases, r.StoreCost, "%.1f",
			pgCPUKey, walKey, redisCPUKey)
		fmt.Fprintln(out, "(ingest: both ingest phases; burst and steady: from just before the first due time until every job")
		fmt.Fprintln(out, " had run)")
	}
	byName(out, "idle, CPU ms a second (nothing due)", r.IdleCPUMsPerS, "%s %.1f")
	byName(out, "Postgres bytes per pending job", r.PGBytesPerPendingJobBy, "%s %.0f")
	byName(out, "peak memory, MB", r.PeakMemoryMB, "%s %.0f")
	byName(out, "phases", r.PhaseSeconds, "%s %.1fs")
	if len(r.Failures) > 0 {
		fmt.Fprintf(out, "\nFAILED:\n  %s\n", strings.Join(r.Failures, "\n  "))
	}
}

// costPhases are the phases whose CPU per job the results hold, in the order
// the run measures them: the keys of CPU and StoreCost.
var costPhases = []string{"ingest", "burst", "steady"}

// cpuPhases are the rows of the services' CPU table: the cost phases and the
// creates before each drain, which are not budgeted (ingest measures creating).
var cpuPhases = []string{"ingest", "burst_create", "burst", "steady_create", "steady"}

// phaseTable prints, after a blank line, a table with header and a row per
// phase of phases that by holds, each of columns formatted with format.
func phaseTable(out io.Writer, header string, phases []string, by map[string]map[string]float64, format string, columns ...string) {
	fmt.Fprintln(out)
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, header+"\t")
	for _, phase := range phases {
		if c := by[phase]; c != nil {
			fmt.Fprint(w, phase)
			for _, col := range columns {
				fmt.Fprintf(w, "\t"+format, c[col])
			}
			fmt.Fprintln(w, "\t")
		}
	}
	_ = w.Flush()
}

// byName prints a line of figures by name, in name order, each formatted with
// format (name, value); an empty map prints nothing.
func byName(out io.Writer, title string, figures map[string]float64, format string) {
	if len(figures) == 0 {
		return
	}
	names := slices.Sorted(maps.Keys(figures))
	parts := make([]string, len(names))
	for i, k := range names {
		parts[i] = fmt.Sprintf(format, k, figures[k])
	}
	fmt.Fprintf(out, "\n%s: %s\n", title, strings.Join(parts, ", "))
}

// latencies holds sorted lateness figures.
type latencies []time.Duration

// quantile is the nearest-rank quantile q (0..1) in milliseconds; 0 when empty.
func (l latencies) quantile(q float64) float64 {
	if len(l) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(l)))) - 1
	i = max(0, min(i, len(l)-1))
	return ms(l[i])
}

func ms(d time.Duration) float64 { return math.Round(float64(d)/float64(time.Millisecond)*10) / 10 }

func round(v float64, places int) float64 {
	p := math.Pow(10, float64(places))
	return math.Round(v*p) / p
}
