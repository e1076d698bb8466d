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

// A value out of its field's range names the field and the range, not
// go-cron's "end of range (25) above maximum (23)".
func TestCronRangeErrorNamesTheField(t *testing.T) {
	for expr, want := range map[string]string{
		"0 25 * * *":       "hour 25 is out of range: the hour field goes from 0 to 23",
		"0 9-25 * * *":     `hour 25 (in "9-25") is out of range: the hour field goes from 0 to 23`,
		"61 * * * *":       "minute 61 is out of range: the minute field goes from 0 to 59",
		"0 0 0 * *":        "day of month 0 is out of range: the day of month field goes from 1 to 31",
		"0 0 1 13 *":       "month 13 is out of range: the month field goes from 1 to 12",
		"0 0 * * 1,9":      `day of week 9 (in "1,9") is out of range: the day of week field goes from 0 to 7`,
		"75 0 0 * * *":     "second 75 is out of range: the second field goes from 0 to 59",
		"0 */2 0-40/5 * *": `day of month 0 (in "0-40/5") is out of range: the day of month field goes from 1 to 31`,
	} {
		_, err := parseCron(expr)
		require.Error(t, err, expr)
		require.Equal(t, want, err.Error(), expr)
	}
}
