package job_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/job"
)

func TestLoad(t *testing.T) {
	t.Parallel()
	var daily job.Load
	daily.Add(9, 0, 0)
	evenSeconds := job.Load{Hours: job.AllHours, Minutes: 1 << 51, Seconds: 0x555555555555555}
	minute51 := job.Load{Hours: job.AllHours, Minutes: 1 << 51, Seconds: job.AllSeconds}

	require.Equal(t, job.Load{Hours: 1 << 9, Minutes: 1, Seconds: 1}, daily)
	require.Equal(t, 1, daily.PerMinute())
	require.Equal(t, 30, evenSeconds.PerMinute())
	require.Equal(t, 60, minute51.PerMinute())
	require.Equal(t, 0, job.Load{Hours: job.AllHours, Minutes: job.AllMinutes}.PerMinute(), "no second: it never fires")

	for _, tt := range []struct {
		name string
		l, o job.Load
		want bool
	}{
		{"Itself", minute51, minute51, true},
		{"FewerSeconds", evenSeconds, minute51, true},
		{"MoreSeconds", minute51, evenSeconds, false},
		{"AnotherHour", daily, job.Load{Hours: 1 << 10, Minutes: 1, Seconds: 1}, false},
		{"Nothing", job.Load{}, daily, true},
		{"IntoNothing", daily, job.Load{}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, tt.l.Within(tt.o))
		})
	}
}
