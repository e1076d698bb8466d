package main

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/jobspec"
	"github.com/tockhq/tock/pkg/jobtype"
	"github.com/tockhq/tock/pkg/outbound"
	"github.com/tockhq/tock/pkg/store"
)

var start = time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)

func seeded(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed)) }

func sum(counts []int) int {
	n := 0
	for _, c := range counts {
		n += c
	}
	return n
}

// all drains a generator.
func all(t *testing.T, g *Generator) []Item {
	t.Helper()
	var out []Item
	for items := g.Next(777); len(items) > 0; items = g.Next(777) {
		require.LessOrEqual(t, len(items), 777)
		out = append(out, items...)
	}
	return out
}

func generated(t *testing.T, mix Mix, counts []int, seed uint64) []Item {
	t.Helper()
	g, err := NewGenerator(mix, start, counts, seeded(seed))
	require.NoError(t, err)
	return all(t, g)
}

func TestProfile(t *testing.T) {
	t.Parallel()
	t.Run("UniformSpreadsTheTotalEvenly", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct {
			name           string
			total, minutes int
			want           int
		}{
			{"Exact", 10_000, 10, 10_000},
			{"Remainder", 1_003, 10, 1_003},
			{"FewerJobsThanMinutes", 3, 10, 3},
			{"DerivedFromTheProfile", 0, 7, 7_000},
		} {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				counts, err := Profile{Name: ProfileUniform, Total: tc.total, Minutes: tc.minutes}.PerMinute(seeded(1))
				require.NoError(t, err)
				require.Len(t, counts, tc.minutes)
				require.Equal(t, tc.want, sum(counts))
				require.LessOrEqual(t, slices.Max(counts)-slices.Min(counts), 1)
			})
		}
	})
	t.Run("HeavyPutsTheChosenMinutesAt10k", func(t *testing.T) {
		t.Parallel()
		counts, err := Profile{Name: ProfileHeavy, Minutes: 10, Heavy: []int{3, 7}}.PerMinute(seeded(2))
		require.NoError(t, err)
		for m, n := range counts {
			if m == 3 || m == 7 {
				require.Equal(t, 10_000, n, "minute %d", m)
				continue
			}
			require.GreaterOrEqual(t, n, 1_000, "minute %d", m)
			require.LessOrEqual(t, n, 5_000, "minute %d", m)
		}
	})
	t.Run("HeavyWithATotalKeepsItsShape", func(t *testing.T) {
		t.Parallel()
		p := Profile{Name: ProfileHeavy, Minutes: 10, Heavy: []int{3, 7}}
		shape, err := p.PerMinute(seeded(3))
		require.NoError(t, err)
		p.Total = 4_567
		counts, err := p.PerMinute(seeded(3))
		require.NoError(t, err)
		require.Equal(t, 4_567, sum(counts))
		for m := range counts {
			exact := float64(shape[m]) * 4_567 / float64(sum(shape))
			require.InDelta(t, exact, counts[m], 1, "minute %d", m)
		}
		require.Equal(t, slices.Max(counts), counts[3])
		require.Equal(t, counts[3], counts[7])
	})
	t.Run("HeavyMinuteOutsideTheRange", func(t *testing.T) {
		t.Parallel()
		_, err := Profile{Name: ProfileHeavy, Minutes: 5, Heavy: []int{7}}.PerMinute(seeded(1))
		require.ErrorContains(t, err, "heavy minute 7 is outside the 5-minute range")
	})
	t.Run("UnknownProfile", func(t *testing.T) {
		t.Parallel()
		_, err := Profile{Name: "spiky", Minutes: 5}.PerMinute(seeded(1))
		require.ErrorContains(t, err, `not "spiky"`)
	})
}

func TestSeedReplaysThePlanAndTheJobs(t *testing.T) {
	t.Parallel()
	mix := Mix{Name: "load", Types: []job.Type{jobtype.TypeWebhook, jobtype.TypePing}, Priorities: []int{-10, 0, 10}, Recurring: 0.3, URL: defaultURL}
	plan := func(seed uint64) ([]int, []byte) {
		rng := seeded(seed)
		counts, err := Profile{Name: ProfileHeavy, Minutes: 4, Heavy: []int{1}}.PerMinute(rng)
		require.NoError(t, err)
		g, err := NewGenerator(mix, start, counts, rng)
		require.NoError(t, err)
		raw, err := json.Marshal(all(t, g))
		require.NoError(t, err)
		return counts, raw
	}
	c1, j1 := plan(42)
	c2, j2 := plan(42)
	require.Equal(t, c1, c2)
	require.Equal(t, j1, j2)
	c3, j3 := plan(43)
	require.NotEqual(t, c1, c3)
	require.NotEqual(t, j1, j3)
}

func TestGenerator(t *testing.T) {
	t.Parallel()
	t.Run("RecurringShareIsExact", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct {
			share float64
			want  int
		}{{0, 0}, {0.1, 1_000}, {0.25, 2_500}, {0.333, 3_330}, {1, 10_000}} {
			items := generated(t, Mix{Name: "x", Types: []job.Type{jobtype.TypePing}, Recurring: tc.share, URL: defaultURL}, []int{4_000, 6_000}, 1)
			recurring := 0
			for _, it := range items {
				if it.Spec.Schedule != nil {
					recurring++
					require.Nil(t, it.Spec.RunAt)
				} else {
					require.NotNil(t, it.Spec.RunAt)
				}
			}
			require.Equal(t, tc.want, recurring, "share %v", tc.share)
		}
	})
	t.Run("TypesAndPrioritiesAreChosenUniformly", func(t *testing.T) {
		t.Parallel()
		types := []job.Type{jobtype.TypeWebhook, jobtype.TypePing, jobtype.TypeSlack, jobtype.TypeEmail}
		prios := []int{-10, 0, 10}
		items := generated(t, Mix{Name: "x", Types: types, Priorities: prios, URL: defaultURL}, []int{12_000, 12_000}, 5)
		byType, byPrio := map[job.Type]int{}, map[int]int{}
		for _, it := range items {
			byType[it.Spec.Type]++
			byPrio[*it.Spec.Priority]++
		}
		require.Len(t, byType, len(types))
		for _, ty := range types {
			require.InDelta(t, 24_000/len(types), byType[ty], 400, ty)
		}
		require.Len(t, byPrio, len(prios))
		for _, p := range prios {
			require.InDelta(t, 24_000/len(prios), byPrio[p], 400, p)
		}
	})
	t.Run("FollowsThePlanMinuteByMinute", func(t *testing.T) {
		t.Parallel()
		counts := []int{3, 0, 5, 1}
		items := generated(t, Mix{Name: "x", Types: []job.Type{jobtype.TypeWebhook}, Recurring: 0.5, URL: defaultURL}, counts, 9)
		got := make([]int, len(counts))
		for i, it := range items {
			got[it.Minute]++
			require.Equal(t, "x-"+strconv.Itoa(i+1), it.Spec.Name)
			if i > 0 {
				require.GreaterOrEqual(t, it.Minute, items[i-1].Minute, "in minute order")
			}
		}
		require.Equal(t, counts, got)
	})
	t.Run("RefusesABadMix", func(t *testing.T) {
		t.Parallel()
		_, err := NewGenerator(Mix{Name: "x"}, start, []int{1}, seeded(1))
		require.ErrorContains(t, err, "at least one job type")
		_, err = NewGenerator(Mix{Name: "x", Types: []job.Type{jobtype.TypePing}, Recurring: 1.5}, start, []int{1}, seeded(1))
		require.ErrorContains(t, err, "between 0 and 1")
	})
}

// TestEverySpecBuilds builds every generated job as the API would, and checks
// that it first runs within its planned minute.
func TestEverySpecBuilds(t *testing.T) {
	t.Parallel()
	lim := jobspec.DefaultLimits
	lim.Targets = outbound.Options{AllowPrivate: true}
	mix := Mix{
		Name:       "load",
		Types:      []job.Type{jobtype.TypeWebhook, jobtype.TypePing, jobtype.TypeSlack, jobtype.TypeEmail},
		Priorities: []int{job.MinPriority, -10, 0, 10, job.MaxPriority},
		Recurring:  0.5,
		URL:        defaultURL,
	}
	counts := []int{500, 700, 300, 500}
	items := generated(t, mix, counts, 11)
	require.Len(t, items, sum(counts))
	now := start.Add(-time.Second)
	kinds := map[string]int{}
	for _, it := range items {
		// The spec goes over the wire as JSON: Build reads what the API
		// decodes.
		j, err := it.Spec.Build(store.BootstrapAdmin, now, lim)
		require.NoError(t, err, "%+v", it.Spec)
		from := start.Add(time.Duration(it.Minute) * time.Minute)
		require.False(t, j.DueAt.Before(from), "%s first runs at %s, before its minute %s", j.Name, j.DueAt, from)
		require.True(t, j.DueAt.Before(from.Add(time.Minute)), "%s first runs at %s, after its minute %s", j.Name, j.DueAt, from)
		require.Equal(t, it.Spec.Schedule != nil, j.Recurring())
		if s := it.Spec.Schedule; s != nil {
			switch {
			case s.Cron != "":
				kinds["cron"]++
			default:
				kinds["every="+s.Every]++
			}
		}
	}
	require.Len(t, kinds, 3, "cron, every=day and every=week: %v", kinds)
}

func TestParseStart(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 22, 9, 0, 20, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Time
	}{
		{"1m", time.Date(2026, 11, 22, 9, 2, 0, 0, time.UTC)},
		{"40s", time.Date(2026, 11, 22, 9, 1, 0, 0, time.UTC)},
		{"41s", time.Date(2026, 11, 22, 9, 2, 0, 0, time.UTC)},
		{"0s", time.Date(2026, 11, 22, 9, 1, 0, 0, time.UTC)},
		{"1d", time.Date(2026, 11, 23, 9, 1, 0, 0, time.UTC)},
		{"2026-12-01T10:30:15+01:00", time.Date(2026, 12, 1, 9, 30, 15, 0, time.UTC)},
	} {
		got, err := ParseStart(tc.in, now)
		require.NoError(t, err, tc.in)
		require.Equal(t, tc.want, got, tc.in)
	}
	_, err := ParseStart("soon", now)
	require.Error(t, err)
}

func TestParseLists(t *testing.T) {
	t.Parallel()
	types, err := ParseTypes("webhook, ping")
	require.NoError(t, err)
	require.Equal(t, []job.Type{jobtype.TypeWebhook, jobtype.TypePing}, types)
	_, err = ParseTypes("webhook,fax")
	require.ErrorContains(t, err, `"fax"`)
	ints, err := ParseInts("-10,0, 10")
	require.NoError(t, err)
	require.Equal(t, []int{-10, 0, 10}, ints)
	ints, err = ParseInts("")
	require.NoError(t, err)
	require.Empty(t, ints)
	_, err = ParseInts("1,x")
	require.Error(t, err)
}

func TestThousands(t *testing.T) {
	t.Parallel()
	for in, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 45696: "45,696", 1234567: "1,234,567", -1234: "-1,234"} {
		require.Equal(t, want, thousands(in))
	}
}
