package schedule

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestNextMatchesBruteForce checks Next against the definition in the package
// doc, computed the slow way: resolve every wall time of a window around a
// zone change, collect the instants, sort and deduplicate them; Next(t) must
// be the first of them after t, from any t.
func TestNextMatchesBruteForce(t *testing.T) {
	t.Parallel()

	start := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, z := range []struct {
		name string
		from time.Time // the first two changes after this are checked
	}{
		{"Europe/Berlin", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"America/New_York", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"Australia/Lord_Howe", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}, // 30-minute DST
		{"Pacific/Chatham", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)},     // +12:45/+13:45, change at 02:45
		{"America/Sao_Paulo", time.Date(2018, 10, 1, 0, 0, 0, 0, time.UTC)},  // midnight did not exist on 2018-11-04
		{"Pacific/Apia", time.Date(2011, 12, 1, 0, 0, 0, 0, time.UTC)},       // 2011-12-30 did not exist
		{"Antarctica/Troll", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)},    // +00 <-> +02
	} {
		loc, err := time.LoadLocation(z.name)
		require.NoError(t, err)
		zn := zone{loc: loc}
		var changes []int64
		for p := zn.periodAt(z.from.Unix()); len(changes) < 2; p = zn.periodAt(p.end) {
			changes = append(changes, p.end)
		}

		for _, spec := range []Spec{
			{Cron: "*/20 * * * *"},
			{Cron: "0 * * * *"},
			{Cron: "30 2 * * *"},
			{Cron: "45 2 * * *"},
			{Cron: "0 0 * * *"},
			{Cron: "7/20 * * * * *"},
			{Every: "day", At: "01:30"},
			{RRule: "FREQ=MINUTELY;INTERVAL=7"},
		} {
			for _, dst := range []*DSTPolicy{
				{Gap: GapShift, Overlap: OverlapFirst},
				{Gap: GapSkip, Overlap: OverlapFirst},
				{Gap: GapShift, Overlap: OverlapBoth},
				{Gap: GapSkip, Overlap: OverlapBoth},
			} {
				name := fmt.Sprintf("%s/%s%s%s/%s-%s", z.name, spec.Cron, spec.RRule, spec.Every, dst.Gap, dst.Overlap)
				spec := spec
				spec.Timezone, spec.StartAt, spec.DST = z.name, &start, dst
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					s, err := spec.Compile(start)
					require.NoError(t, err)
					for _, change := range changes {
						lo, hi := change-30*3600, change+30*3600
						// Every wall time that can reach [lo, hi].
						var want []int64
						walls := s.rule.walls(lo-maxOffset, hi+maxOffset, nil)
						for w, ok := walls(); ok; w, ok = walls() {
							want = append(want, zn.resolve(w, s.gapSkip, s.overlapBoth, nil)...)
						}
						slices.Sort(want)
						want = slices.Compact(want)

						check := func(ms int64) {
							i, _ := slices.BinarySearch(want, floorDiv(ms, 1000)+1)
							require.Less(t, i, len(want))
							got, ok := s.next(ms)
							require.True(t, ok)
							require.Equal(t, time.Unix(want[i], 0).UTC(), time.Unix(got, 0).UTC(),
								"after %s", time.UnixMilli(ms).UTC())
						}
						for _, w := range want {
							if w < change-4*3600 || w > change+4*3600 {
								continue // away from the change, the strided checks below suffice
							}
							check(w*1000 - 1)
							check(w * 1000)
							check(w*1000 + 999)
						}
						for ms := (lo + 6*3600) * 1000; ms < (hi-24*3600)*1000; ms += 997_003 {
							check(ms)
						}
					}
				})
			}
		}
	}
}

func TestResolve(t *testing.T) {
	t.Parallel()

	berlin, err := time.LoadLocation("Europe/Berlin")
	require.NoError(t, err)
	z := zone{loc: berlin}
	wall := func(s string) int64 {
		v, err := time.Parse("2006-01-02 15:04", s)
		require.NoError(t, err)
		return v.Unix()
	}
	inst := func(ss ...string) []int64 {
		var out []int64
		for _, s := range ss {
			out = append(out, utcInstant(t, s))
		}
		return out
	}
	for _, tt := range []struct {
		name       string
		wall       string
		skip, both bool
		want       []int64
	}{
		{"Exists", "2026-03-29 01:59", false, false, inst("2026-03-29T00:59:00Z")},
		{"GapShift", "2026-03-29 02:30", false, false, inst("2026-03-29T01:00:00Z")},
		{"GapShiftStart", "2026-03-29 02:00", false, false, inst("2026-03-29T01:00:00Z")},
		{"GapSkip", "2026-03-29 02:30", true, false, nil},
		{"AfterGap", "2026-03-29 03:00", true, false, inst("2026-03-29T01:00:00Z")},
		{"OverlapFirst", "2026-10-25 02:30", false, false, inst("2026-10-25T00:30:00Z")},
		{"OverlapBoth", "2026-10-25 02:30", false, true, inst("2026-10-25T00:30:00Z", "2026-10-25T01:30:00Z")},
		{"OverlapStart", "2026-10-25 02:00", false, true, inst("2026-10-25T00:00:00Z", "2026-10-25T01:00:00Z")},
		{"AfterOverlap", "2026-10-25 03:00", false, true, inst("2026-10-25T02:00:00Z")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, z.resolve(wall(tt.wall), tt.skip, tt.both, nil))
		})
	}
}

func utcInstant(t *testing.T, s string) int64 {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	require.NoError(t, err)
	return v.Unix()
}
