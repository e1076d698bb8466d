package job_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/job"
)

func TestDebounceJSON(t *testing.T) {
	for window, want := range map[time.Duration]string{
		3 * time.Second: "3s", time.Hour: "1h", 90 * time.Second: "1m30s", 2 * time.Minute: "2m",
		90 * time.Minute: "1h30m", 10 * time.Millisecond: "10ms", 1500 * time.Millisecond: "1.5s", 24 * time.Hour: "24h",
		time.Hour + time.Second: "1h0m1s",
	} {
		d := job.Debounce{Key: "order-7", Window: window}
		raw, err := json.Marshal(d)
		require.NoError(t, err)
		require.JSONEq(t, `{"key": "order-7", "window": "`+want+`"}`, string(raw))
		var back job.Debounce
		require.NoError(t, json.Unmarshal(raw, &back))
		require.Equal(t, d, back)
	}
}
