package queue_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSchedulers(t *testing.T) {
	t.Parallel()
	t.Run("ListsHeartbeatsNewestFirstWithTheLeaderMarked", func(t *testing.T) {
		t.Parallel()
		onBothRedis(t, func(t *testing.T, b *bundle) {
			none, err := b.q.Schedulers(b.ctx)
			require.NoError(t, err)
			require.Empty(t, none)

			require.NoError(t, b.q.Heartbeat(b.ctx, "a", base, false, 10*time.Second))
			require.NoError(t, b.q.Heartbeat(b.ctx, "b", base.Add(time.Second), true, 10*time.Second))
			got, err := b.q.Schedulers(b.ctx)
			require.NoError(t, err)
			require.Len(t, got, 2)
			require.Equal(t, "b", got[0].Name)
			require.True(t, got[0].Leader)
			require.True(t, got[0].LastSeen.Equal(base.Add(time.Second)))
			require.Equal(t, "a", got[1].Name)
			require.False(t, got[1].Leader)
		})
	})

	t.Run("ForgetsInstancesSilentForAnHour", func(t *testing.T) {
		t.Parallel()
		onBothRedis(t, func(t *testing.T, b *bundle) {
			require.NoError(t, b.q.Heartbeat(b.ctx, "old", base, false, time.Second))
			require.NoError(t, b.q.Heartbeat(b.ctx, "new", base.Add(61*time.Minute), false, time.Second))
			got, err := b.q.Schedulers(b.ctx)
			require.NoError(t, err)
			require.Len(t, got, 1)
			require.Equal(t, "new", got[0].Name)
		})
	})

	t.Run("KeysShareTheShardsHashTag", func(t *testing.T) {
		t.Parallel()
		b := setup(t, nil, "tock")
		require.Equal(t, "tock:{s3}:schedulers", b.keys.Schedulers())
		require.Equal(t, "tock:{s3}:loader-holder", b.keys.LoaderHolder())
	})
}
