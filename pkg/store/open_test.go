package store_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/store"
	"github.com/tockhq/tock/pkg/testenv"
)

func TestOpen(t *testing.T) {
	t.Parallel()
	mode := func(t *testing.T, url string, opts ...store.Option) string {
		t.Helper()
		st, err := store.Open(t.Context(), url, 1, opts...)
		require.NoError(t, err)
		t.Cleanup(st.Close)
		var m string
		require.NoError(t, st.Pool().QueryRow(t.Context(), `SHOW plan_cache_mode`).Scan(&m))
		return m
	}

	t.Run("GenericPlansSetsThePlanCacheMode", func(t *testing.T) {
		t.Parallel()
		require.Equal(t, "auto", mode(t, testenv.DatabaseURL()))
		require.Equal(t, "force_generic_plan", mode(t, testenv.DatabaseURL(), store.GenericPlans()))
	})

	t.Run("TheURLWins", func(t *testing.T) {
		t.Parallel()
		url, sep := testenv.DatabaseURL(), "?"
		if strings.Contains(url, "?") {
			sep = "&"
		}
		url += sep + "plan_cache_mode=force_custom_plan"
		require.Equal(t, "force_custom_plan", mode(t, url, store.GenericPlans()))
	})
}

// TestWarm: the worker warms its pool at start-up by running the hot
// statements (Fetch's and FinishRuns') with empty input; a statement its
// arguments no longer fit would stop every worker from starting.
func TestWarm(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t, store.GenericPlans())
	require.NoError(t, st.Warm(t.Context(), 2))
	require.GreaterOrEqual(t, st.Pool().Stat().IdleConns(), int32(2), "the pool keeps the connections it warmed")
}
