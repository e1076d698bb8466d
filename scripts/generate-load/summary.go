package main

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/tockhq/tock/pkg/job"
)

// busiest is how many minutes the summary lists.
const busiest = 5

// Tally counts the jobs created, by what the summary reports. It is safe for
// concurrent use.
type Tally struct {
	mu        sync.Mutex
	total     int
	types     map[job.Type]int
	prios     map[int]int
	recurring int
	minutes   []int
}

// NewTally returns an empty tally for a range of minutes.
func NewTally(minutes int) *Tally {
	return &Tally{types: map[job.Type]int{}, prios: map[int]int{}, minutes: make([]int, minutes)}
}

// Add counts created jobs.
func (t *Tally) Add(items []Item) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, it := range items {
		t.total++
		t.types[it.Spec.Type]++
		if it.Spec.Priority != nil {
			t.prios[*it.Spec.Priority]++
		} else {
			t.prios[0]++
		}
		if it.Spec.Schedule != nil {
			t.recurring++
		}
		t.minutes[it.Minute]++
	}
}

// Total is the number of jobs counted.
func (t *Tally) Total() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.total
}

// Report is what a run did, for the summary.
type Report struct {
	Verb    string // "created" or, for a dry run, "planned"
	Name    string // the jobs' name prefix
	Mode    string
	Seed    uint64
	Start   time.Time
	Elapsed time.Duration
}

// Print writes the summary: totals by type, kind and priority, and the
// busiest minutes with the minimum, maximum and total per minute.
func (t *Tally) Print(w io.Writer, r Report) {
	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Fprintf(w, "%s %s jobs", r.Verb, thousands(t.total))
	if r.Mode != "" {
		fmt.Fprintf(w, " (%s mode)", r.Mode)
	}
	if r.Elapsed > 0 {
		rate := float64(t.total) / r.Elapsed.Seconds()
		fmt.Fprintf(w, " in %s: %s jobs/s", r.Elapsed.Round(time.Millisecond), thousands(int(rate)))
	}
	fmt.Fprintf(w, "; seed %d\n", r.Seed)
	if r.Name != "" && t.total > 0 {
		fmt.Fprintf(w, "named %s-1 to %s-%d\n", r.Name, r.Name, t.total)
	}

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	types := slices.Sorted(maps.Keys(t.types))
	var parts []string
	for _, ty := range types {
		parts = append(parts, fmt.Sprintf("%s %s", ty, thousands(t.types[ty])))
	}
	fmt.Fprintf(tw, "by type:\t%s\n", list(parts))
	fmt.Fprintf(tw, "by kind:\tone-off %s, recurring %s\n", thousands(t.total-t.recurring), thousands(t.recurring))
	parts = parts[:0]
	for _, p := range slices.Sorted(maps.Keys(t.prios)) {
		parts = append(parts, fmt.Sprintf("%d: %s", p, thousands(t.prios[p])))
	}
	fmt.Fprintf(tw, "by priority:\t%s\n", list(parts))
	lo, hi := 0, 0
	for i, n := range t.minutes {
		if n < t.minutes[lo] {
			lo = i
		}
		if n > t.minutes[hi] {
			hi = i
		}
	}
	if len(t.minutes) > 0 {
		fmt.Fprintf(tw, "per minute:\t%d minutes from %s; min %s (+%d), max %s (+%d), total %s\n",
			len(t.minutes), r.Start.Format(time.RFC3339), thousands(t.minutes[lo]), lo,
			thousands(t.minutes[hi]), hi, thousands(t.total))
	}
	_ = tw.Flush()

	order := make([]int, len(t.minutes))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(t.minutes[b], t.minutes[a]) })
	if len(order) > busiest {
		order = order[:busiest]
	}
	fmt.Fprintln(w, "busiest minutes:")
	printMinutes(w, r.Start, t.minutes, order)
}

// PrintPlan writes every minute of a plan, for -dry-run.
func PrintPlan(w io.Writer, start time.Time, counts []int) {
	order := make([]int, len(counts))
	for i := range order {
		order[i] = i
	}
	printMinutes(w, start, counts, order)
}

func printMinutes(w io.Writer, start time.Time, counts, order []int) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "minute\tfrom (UTC)\tjobs\t")
	for _, m := range order {
		at := start.Add(time.Duration(m) * time.Minute)
		fmt.Fprintf(tw, "+%d\t%s\t%s\t\n", m, at.Format(time.RFC3339), thousands(counts[m]))
	}
	_ = tw.Flush()
}

func list(parts []string) string {
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// thousands formats n with comma separators: 12345 → "12,345".
func thousands(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
