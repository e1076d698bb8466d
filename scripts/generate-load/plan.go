package main

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/jobspec"
	"github.com/tockhq/tock/pkg/jobtype"
	"github.com/tockhq/tock/pkg/schedule"
)

// Profiles: how the jobs spread over the minutes of the range.
const (
	ProfileUniform = "uniform"
	ProfileHeavy   = "heavy"
)

// The heavy profile: every minute a random count in [heavyLow, heavyHigh],
// and the chosen minutes heavyPeak, as in the load the scheduler was first
// tuned against. uniformPerMinute is the uniform profile's rate when no total
// is given.
const (
	heavyLow         = 1_000
	heavyHigh        = 5_000
	heavyPeak        = 10_000
	uniformPerMinute = 1_000
)

// Profile says how many jobs fall due in each minute of the range.
type Profile struct {
	// Name is ProfileUniform or ProfileHeavy.
	Name string
	// Total is the number of jobs; 0 derives it from the profile (1,000 a
	// minute for uniform; the random counts and peaks as they fall for
	// heavy). With heavy, a Total scales the drawn counts to it, keeping the
	// shape.
	Total int
	// Minutes is the length of the range.
	Minutes int
	// Heavy lists the peak minutes (offsets from the start, from 0) of the
	// heavy profile.
	Heavy []int
}

// PerMinute returns the number of jobs due in each minute of the range. The
// heavy profile draws from rng, so a seed replays it.
func (p Profile) PerMinute(rng *rand.Rand) ([]int, error) {
	if p.Minutes < 1 {
		return nil, fmt.Errorf("minutes must be at least 1, not %d", p.Minutes)
	}
	if p.Total < 0 {
		return nil, fmt.Errorf("the number of jobs must not be negative")
	}
	counts := make([]int, p.Minutes)
	switch p.Name {
	case ProfileUniform:
		total := p.Total
		if total == 0 {
			total = uniformPerMinute * p.Minutes
		}
		for i := range counts {
			counts[i] = total / p.Minutes
			if i < total%p.Minutes {
				counts[i]++
			}
		}
	case ProfileHeavy:
		for i := range counts {
			counts[i] = heavyLow + rng.IntN(heavyHigh-heavyLow+1)
		}
		for _, m := range p.Heavy {
			if m < 0 || m >= p.Minutes {
				return nil, fmt.Errorf("heavy minute %d is outside the %d-minute range (minutes count from 0)", m, p.Minutes)
			}
			counts[m] = heavyPeak
		}
		if p.Total > 0 {
			counts = apportion(counts, p.Total)
		}
	default:
		return nil, fmt.Errorf("profile must be %q or %q, not %q", ProfileUniform, ProfileHeavy, p.Name)
	}
	return counts, nil
}

// apportion scales weights to integers summing to total, by largest
// remainder, so the busiest minutes stay the busiest.
func apportion(weights []int, total int) []int {
	sum := 0
	for _, w := range weights {
		sum += w
	}
	out := make([]int, len(weights))
	rem := make([]float64, len(weights))
	given := 0
	for i, w := range weights {
		exact := float64(w) * float64(total) / float64(sum)
		out[i] = int(math.Floor(exact))
		rem[i] = exact - float64(out[i])
		given += out[i]
	}
	order := make([]int, len(weights))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case rem[a] > rem[b]:
			return -1
		case rem[a] < rem[b]:
			return 1
		}
		return 0
	})
	for k := 0; given < total; k++ {
		out[order[k%len(order)]]++
		given++
	}
	return out
}

// Mix says what the jobs look like.
type Mix struct {
	// Name prefixes every job's name: "<Name>-<sequence>".
	Name string
	// Types are chosen uniformly at random.
	Types []job.Type
	// Priorities are chosen uniformly at random.
	Priorities []int
	// Recurring is the share of recurring jobs, 0..1, spread evenly through
	// the range: each gets a daily cron or an every=day or every=week
	// schedule whose first occurrence falls in its minute.
	Recurring float64
	// URL is the target of webhook and ping jobs and the Slack webhook URL.
	URL string
}

// Spec is one job as generate-load asks for it: the fields of POST
// /api/v1/jobs it sets. The server's rules are not copied here: Build reads
// it as the API reads a body.
type Spec struct {
	Name     string          `json:"name"`
	Type     job.Type        `json:"type"`
	RunAt    *time.Time      `json:"run_at,omitempty"`
	Schedule *schedule.Spec  `json:"schedule,omitempty"`
	Payload  json.RawMessage `json:"payload"`
	Priority *int            `json:"priority,omitempty"`
}

// Build returns the job s describes, owned by owner, as the API would
// build it at now.
func (s Spec) Build(owner [16]byte, now time.Time, lim jobspec.Limits) (*job.Job, error) {
	raw, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("encode job: %w", err)
	}
	r, err := jobspec.Decode(raw, jobspec.Create)
	if err != nil {
		return nil, err
	}
	return r.Build(nil, owner, now, lim)
}

// Item is one job to create, with what the summary counts it by.
type Item struct {
	Spec Spec
	// Minute is the offset from the start of the minute of its first run.
	Minute int
}

// Generator yields the jobs of a plan in the order of their minutes. It is
// deterministic for a given rng.
type Generator struct {
	mix    Mix
	start  time.Time
	counts []int
	rng    *rand.Rand

	minute int // current minute
	left   int // jobs left in it
	seq    int // jobs yielded so far
}

// NewGenerator returns a Generator of counts[m] jobs in minute m after start.
func NewGenerator(mix Mix, start time.Time, counts []int, rng *rand.Rand) (*Generator, error) {
	if len(mix.Types) == 0 {
		return nil, fmt.Errorf("give at least one job type")
	}
	if len(mix.Priorities) == 0 {
		mix.Priorities = []int{0}
	}
	if mix.Recurring < 0 || mix.Recurring > 1 || math.IsNaN(mix.Recurring) {
		return nil, fmt.Errorf("the recurring share must be between 0 and 1, not %v", mix.Recurring)
	}
	g := &Generator{mix: mix, start: start.UTC(), counts: counts, rng: rng}
	if len(counts) > 0 {
		g.left = counts[0]
	}
	return g, nil
}

// Next returns up to n more jobs, or none when every job has been yielded.
func (g *Generator) Next(n int) []Item {
	var out []Item
	for len(out) < n {
		for g.left == 0 {
			g.minute++
			if g.minute >= len(g.counts) {
				return out
			}
			g.left = g.counts[g.minute]
		}
		out = append(out, g.item())
		g.left--
		g.seq++
	}
	return out
}

// recurring says whether job i is recurring: floor(i*share) steps up at
// evenly spaced i, so the first k jobs hold floor(k*share) recurring ones.
func (g *Generator) recurring(i int) bool {
	r := g.mix.Recurring
	return math.Floor(float64(i+1)*r) > math.Floor(float64(i)*r)
}

func (g *Generator) item() Item {
	typ := g.mix.Types[g.rng.IntN(len(g.mix.Types))]
	prio := g.mix.Priorities[g.rng.IntN(len(g.mix.Priorities))]
	from := g.start.Add(time.Duration(g.minute) * time.Minute)
	s := Spec{
		Name:     g.mix.Name + "-" + strconv.Itoa(g.seq+1),
		Type:     typ,
		Payload:  payload(typ, g.mix.URL, g.seq+1),
		Priority: &prio,
	}
	if g.recurring(g.seq) {
		// Occurrences fall on whole seconds.
		at := from.Add(time.Duration(g.rng.IntN(60)) * time.Second).Truncate(time.Second)
		if at.Before(from) {
			at = at.Add(time.Second)
		}
		s.Schedule = g.schedule(at)
	} else {
		at := from.Add(time.Duration(g.rng.Int64N(int64(time.Minute/time.Millisecond))) * time.Millisecond)
		s.RunAt = &at
	}
	return Item{Spec: s, Minute: g.minute}
}

// schedule returns a recurrence whose first occurrence is at (a whole
// second, UTC): daily by cron, or every day or every week.
func (g *Generator) schedule(at time.Time) *schedule.Spec {
	sc := &schedule.Spec{StartAt: &at}
	switch g.rng.IntN(3) {
	case 0:
		sc.Cron = fmt.Sprintf("%d %d %d * * *", at.Second(), at.Minute(), at.Hour())
	case 1:
		sc.Every, sc.At = "day", at.Format(time.TimeOnly)
	default:
		day := strings.ToLower(at.Weekday().String()[:3])
		sc.Every, sc.At, sc.On = "week", at.Format(time.TimeOnly), json.RawMessage(`"`+day+`"`)
	}
	return sc
}

// payload returns a small valid payload of type t aimed at url.
func payload(t job.Type, url string, seq int) json.RawMessage {
	k, _ := jobtype.Lookup(t)
	raw, _ := json.Marshal(k.Load(url, seq)) // payload structs always encode
	return raw
}

// loadable are the job types generate-load can aim at a URL.
func loadable() []string {
	var out []string
	for _, k := range jobtype.All() {
		if k.Load != nil {
			out = append(out, string(k.Type))
		}
	}
	return out
}

// ParseTypes reads a comma-separated list of job types.
func ParseTypes(s string) ([]job.Type, error) {
	var out []job.Type
	for f := range strings.SplitSeq(s, ",") {
		t := job.Type(strings.TrimSpace(f))
		if k, ok := jobtype.Lookup(t); !ok || k.Load == nil {
			return nil, fmt.Errorf("type %q is not one of %s", t, strings.Join(loadable(), ", "))
		}
		out = append(out, t)
	}
	return out, nil
}

// ParseInts reads a comma-separated list of integers; an empty string is none.
func ParseInts(s string) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("%q is not an integer", strings.TrimSpace(f))
		}
		out = append(out, n)
	}
	return out, nil
}

// ParseStart reads -start: an RFC 3339 time, used as given, or a delay from
// now ("1m", "90s"), rounded up to the next whole minute so that the plan's
// minutes are the clock minutes the dashboard charts.
func ParseStart(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UTC(), nil
	}
	d, err := jobspec.ParseDelay(s)
	if err != nil {
		return time.Time{}, fmt.Errorf("start %q is neither an RFC 3339 time nor a delay such as 1m", s)
	}
	t := now.Add(d).UTC()
	if r := t.Truncate(time.Minute); !r.Equal(t) {
		t = r.Add(time.Minute)
	}
	return t, nil
}
