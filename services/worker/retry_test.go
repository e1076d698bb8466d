package main

import (
	"context"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
)

func TestBisect(t *testing.T) {
	t.Parallel()

	// refusing returns a call that Postgres would refuse whenever its batch
	// holds one of bad, and counts the calls.
	refusing := func(calls *int, bad ...int) func([]int) ([]int, error) {
		return func(part []int) ([]int, error) {
			*calls++
			for _, v := range part {
				if slices.Contains(bad, v) {
					return nil, &pgconn.PgError{Code: "22023", Message: "refused"}
				}
			}
			return slices.Clone(part), nil
		}
	}
	items := make([]int, 256)
	for i := range items {
		items[i] = i
	}

	t.Run("LeavesOutOnlyTheRefusedItems", func(t *testing.T) {
		t.Parallel()
		calls := 0
		var refused []int
		done, ok := bisect(t.Context(), zap.NewNop(), items, refusing(&calls, 7, 200), func(v int, err error) {
			require.Equal(t, "22023", pgCode(err))
			refused = append(refused, v)
		})
		require.True(t, ok)
		require.Equal(t, []int{7, 200}, refused)
		want := slices.DeleteFunc(slices.Clone(items), func(v int) bool { return v == 7 || v == 200 })
		require.Equal(t, want, done)
		require.LessOrEqual(t, calls, 1+2*2*8, "about 2·log2(256) more calls per refused item")
	})

	t.Run("OneCallWhenNothingIsRefused", func(t *testing.T) {
		t.Parallel()
		calls := 0
		done, ok := bisect(t.Context(), zap.NewNop(), items, refusing(&calls), func(int, error) { t.Fatal("nothing is refused") })
		require.True(t, ok)
		require.Equal(t, items, done)
		require.Equal(t, 1, calls)
	})

	t.Run("StopsWhenTheContextEnds", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(t.Context())
		calls := 0
		call := func(part []int) ([]int, error) {
			calls++
			if calls == 2 {
				cancel() // as if shutdown began during this call
				return nil, ctx.Err()
			}
			return nil, &pgconn.PgError{Code: "23514"}
		}
		done, ok := bisect(ctx, zap.NewNop(), items, call, func(int, error) { t.Fatal("an untried item is not refused") })
		require.False(t, ok, "the rest is untried")
		require.Empty(t, done)
		require.Equal(t, 2, calls)
	})
}
