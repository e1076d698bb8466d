package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/config"
)

func TestReadConfig(t *testing.T) {
	t.Parallel()

	t.Run("Defaults", func(t *testing.T) {
		t.Parallel()
		c, err := readConfig(config.FromMap(nil))
		require.NoError(t, err)
		require.Equal(t, DefaultConcurrency, c.Concurrency)
		require.Equal(t, time.Second, c.Block)
		require.Equal(t, 10, c.MaxDeliveries)
	})

	t.Run("RefusesMaxDeliveriesBelowOne", func(t *testing.T) {
		t.Parallel()
		for _, v := range []string{"0", "-1", "ten"} {
			_, err := readConfig(config.FromMap(map[string]string{"TOCK_MAX_DELIVERIES": v}))
			require.ErrorContains(t, err, `TOCK_MAX_DELIVERIES="`+v+`" must be an integer from 1 to 1000000`)
		}
		c, err := readConfig(config.FromMap(map[string]string{"TOCK_MAX_DELIVERIES": "3"}))
		require.NoError(t, err)
		require.Equal(t, 3, c.MaxDeliveries)
	})

	t.Run("RefusesABlockRedisWouldReadAsForever", func(t *testing.T) {
		t.Parallel()
		for _, v := range []string{"0s", "500us", "2m"} {
			_, err := readConfig(config.FromMap(map[string]string{"TOCK_WORKER_BLOCK": v}))
			require.ErrorContains(t, err, "TOCK_WORKER_BLOCK=", v)
			require.ErrorContains(t, err, "must be from 1ms to 1m", v)
		}
		c, err := readConfig(config.FromMap(map[string]string{"TOCK_WORKER_BLOCK": "5ms"}))
		require.NoError(t, err)
		require.Equal(t, 5*time.Millisecond, c.Block)
	})

	t.Run("WantsTwoSlotsPerShard", func(t *testing.T) {
		t.Parallel()
		_, err := readConfig(config.FromMap(map[string]string{"TOCK_REDIS_SHARDS": "8", "TOCK_WORKER_CONCURRENCY": "15"}))
		require.ErrorContains(t, err, "TOCK_WORKER_CONCURRENCY=15 must be at least twice TOCK_REDIS_SHARDS=8")
		_, err = readConfig(config.FromMap(map[string]string{"TOCK_REDIS_SHARDS": "8", "TOCK_WORKER_CONCURRENCY": "16"}))
		require.NoError(t, err)
	})
}
