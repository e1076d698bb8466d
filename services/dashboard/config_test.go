package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/config"
)

func TestReadConfig(t *testing.T) {
	t.Parallel()

	t.Run("AppliesDefaults", func(t *testing.T) {
		t.Parallel()
		c, err := readConfig(config.FromMap(map[string]string{"TOCK_ADMIN_TOKEN": "0123456789abcdef"}))
		require.NoError(t, err)
		require.Equal(t, "127.0.0.1:8080", c.HTTPAddr)
		require.Equal(t, "127.0.0.1:9090", c.MetricsAddr)
		require.Equal(t, 10*time.Minute, c.Horizon)
		require.Equal(t, time.Minute, c.MisfireThreshold)
		require.Equal(t, 65536, c.MaxPayloadBytes)
		require.Equal(t, 1<<20, c.MaxBodyBytes)
		require.Equal(t, "tock", c.RedisPrefix)
		require.Equal(t, "info", c.LogLevel)
		require.Equal(t, 600, c.Quotas.OccurrencesPerMinute)
		require.Equal(t, 100, c.Quotas.OccurrencesPerSecond)
	})

	t.Run("ReadsEverySetting", func(t *testing.T) {
		t.Parallel()
		c, err := readConfig(config.FromMap(map[string]string{
			"TOCK_ADMIN_TOKEN":                  "0123456789abcdef-longer",
			"TOCK_HTTP_ADDR":                    "0.0.0.0:9000",
			"TOCK_METRICS_ADDR":                 "0.0.0.0:9100",
			"TOCK_LOAD_HORIZON":                 "5m",
			"TOCK_MISFIRE_THRESHOLD":            "30s",
			"TOCK_MAX_PAYLOAD_BYTES":            "1024",
			"TOCK_MAX_BODY_BYTES":               "2048",
			"TOCK_REDIS_PREFIX":                 "blue",
			"TOCK_LOG_LEVEL":                    "debug",
			"TOCK_LIMIT_OCCURRENCES_PER_MINUTE": "1200",
			"TOCK_LIMIT_OCCURRENCES_PER_SECOND": "0",
		}))
		require.NoError(t, err)
		require.Equal(t, "0.0.0.0:9000", c.HTTPAddr)
		require.Equal(t, "0.0.0.0:9100", c.MetricsAddr)
		require.Equal(t, 5*time.Minute, c.Horizon)
		require.Equal(t, 30*time.Second, c.MisfireThreshold)
		require.Equal(t, 1024, c.MaxPayloadBytes)
		require.Equal(t, 2048, c.MaxBodyBytes)
		require.Equal(t, "blue", c.RedisPrefix)
		require.Equal(t, "debug", c.LogLevel)
		require.Equal(t, 1200, c.Quotas.OccurrencesPerMinute)
		require.Equal(t, 0, c.Quotas.OccurrencesPerSecond, "0 is no cap")
	})

	t.Run("ReportsEveryProblemWithoutTheToken", func(t *testing.T) {
		t.Parallel()
		_, err := readConfig(config.FromMap(map[string]string{
			"TOCK_ADMIN_TOKEN":       "s3cret-short",
			"TOCK_HTTP_ADDR":         "8080",
			"TOCK_METRICS_ADDR":      "9090",
			"TOCK_LOAD_HORIZON":      "soon",
			"TOCK_MISFIRE_THRESHOLD": "0s",
			"TOCK_MAX_BODY_BYTES":    "100",
			"TOCK_LOG_LEVEL":         "loud",
		}))
		require.Error(t, err)
		msg := err.Error()
		for _, want := range []string{"TOCK_ADMIN_TOKEN must be at least 16 characters", "TOCK_HTTP_ADDR", "TOCK_METRICS_ADDR", "TOCK_LOAD_HORIZON",
			"TOCK_MISFIRE_THRESHOLD", "TOCK_MAX_BODY_BYTES", "TOCK_LOG_LEVEL"} {
			require.Contains(t, msg, want)
		}
		require.NotContains(t, msg, "s3cret")
	})

	t.Run("KeepsMetricsOffThePublicPort", func(t *testing.T) {
		t.Parallel()
		_, err := readConfig(config.FromMap(map[string]string{
			"TOCK_ADMIN_TOKEN":  "0123456789abcdef",
			"TOCK_HTTP_ADDR":    "127.0.0.1:8080",
			"TOCK_METRICS_ADDR": "127.0.0.1:8080",
		}))
		require.ErrorContains(t, err, "TOCK_METRICS_ADDR")
	})

	t.Run("RequiresAdminToken", func(t *testing.T) {
		t.Parallel()
		_, err := readConfig(config.FromMap(nil))
		require.ErrorContains(t, err, "TOCK_ADMIN_TOKEN must be set")
		require.ErrorContains(t, err, "at least 16 characters")
	})
}
