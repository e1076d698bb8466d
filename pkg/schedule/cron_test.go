package schedule

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestCronWalls holds the cron iterator, which jumps past the rest of a
// minute or an hour that has no match left (cronRule.rest), to what go-cron
// finds one step at a time.
func TestCronWalls(t *testing.T) {
	t.Parallel()
	from := time.Date(2026, 2, 27, 22, 58, 30, 0, time.UTC)
	for _, expr := range []string{
		"* * * * * *", "0 * * * * *", "59 * * * * *", "*/7 * * * * *", "0,30 * * * * *",
		"* * * * *", "*/13 * * * *", "0 0 * * * *", "59 59 * * * *", "10-20 58,59 * * * *",
		"0 0 * * 1", "30 2 29 2 *", "15 4 L * *",
	} {
		t.Run(expr, func(t *testing.T) {
			t.Parallel()
			r, err := parseCron(expr)
			require.NoError(t, err)
			limit := from.Add(8 * 24 * time.Hour).Unix()
			walls := r.walls(from.Unix(), limit, nil)
			cur := from
			for range 5000 {
				want := r.spec.Next(cur)
				w, ok := walls()
				if want.IsZero() || want.Unix() > limit {
					require.False(t, ok)
					return
				}
				require.True(t, ok)
				require.Equal(t, want.Unix(), w, "after %s", cur)
				cur = want
			}
		})
	}
}
