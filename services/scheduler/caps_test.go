package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/tockhq/tock/pkg/queue"
	"github.com/tockhq/tock/pkg/testenv"
)

func TestDeriveCaps(t *testing.T) {
	t.Parallel()
	require.Equal(t, queue.Caps{Owner: 512, Host: 1024, Borrow: 1536}, DeriveCaps(0, 0, 2048), "two workers of 1024 slots")
	require.Equal(t, queue.Caps{Owner: minOwnerCap, Host: minHostCap}, DeriveCaps(0, 0, 0), "no worker heard from: nothing to lend")
	require.Equal(t, queue.Caps{Owner: 100, Host: 1024, Borrow: 1948}, DeriveCaps(100, 0, 2048), "the operator's owner cap")
	require.Equal(t, queue.Caps{Owner: 512, Host: 7, Borrow: 1536}, DeriveCaps(0, 7, 2048), "the operator's host cap")
	require.Equal(t, queue.Caps{Owner: 4096, Host: 1024, Borrow: -1}, DeriveCaps(4096, 0, 2048), "a cap above the slots leaves nothing to lend")
}

func TestCapsWatcher(t *testing.T) {
	t.Parallel()
	b := setupRedis(t)
	ring := queue.New(b.rdb, b.keys.Prefix, 2)
	now := time.Now()
	require.NoError(t, ring.Home().WorkerBeat(b.ctx, "w1", 1024, now))
	require.NoError(t, ring.Home().WorkerBeat(b.ctx, "w2", 1024, now))
	w := NewCapsWatcher(ring, 0, 0, true, zap.NewNop(), func() time.Time { return now })
	require.Equal(t, queue.Caps{Owner: minOwnerCap / 2, Host: minHostCap / 2, Unread: queue.ReadSize}, w.Caps(), "the minimums until it looks")
	stop, done := testenv.GoRun(t, w.Run)
	testenv.WaitUntil(t, 5*time.Second, func() bool { return w.Caps().Owner == 256 }, "the caps did not follow the workers")
	require.Equal(t, queue.Caps{Owner: 256, Host: 512, Borrow: 768, Unread: 2 * queue.ReadSize}, w.Caps(),
		"a quarter and a half of 2048 slots, and all but a quarter to lend, over two shards; a read of each worker unread")
	stop()
	<-done
}
