package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/config"
)

func TestReadConfigCloudWatch(t *testing.T) {
	t.Parallel()

	t.Run("IsOffByDefault", func(t *testing.T) {
		t.Parallel()
		c, err := readConfig(config.FromMap(nil))
		require.NoError(t, err)
		require.Empty(t, c.CloudWatchNamespace)
		require.Equal(t, 10*time.Second, c.CloudWatchInterval)
	})

	t.Run("ReadsSettings", func(t *testing.T) {
		t.Parallel()
		c, err := readConfig(config.FromMap(map[string]string{
			"TOCK_CLOUDWATCH_NAMESPACE": "Tock",
			"TOCK_CLOUDWATCH_INTERVAL":  "1m",
		}))
		require.NoError(t, err)
		require.Equal(t, "Tock", c.CloudWatchNamespace)
		require.Equal(t, time.Minute, c.CloudWatchInterval)
	})

	for _, interval := range []string{"500ms", "0s", "soon"} {
		t.Run("RejectsInterval/"+interval, func(t *testing.T) {
			t.Parallel()
			_, err := readConfig(config.FromMap(map[string]string{"TOCK_CLOUDWATCH_INTERVAL": interval}))
			require.ErrorContains(t, err, "TOCK_CLOUDWATCH_INTERVAL")
		})
	}
}
