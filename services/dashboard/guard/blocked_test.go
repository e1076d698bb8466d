package guard

import (
	"crypto/sha256"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestBlockedAddrs remembers an address until its block ends, and keeps no
// more than maxBlocked, making room from the blocks that ended.
func TestBlockedAddrs(t *testing.T) {
	t.Parallel()
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	var b blockedAddrs
	_, ok := b.blocked("203.0.113.7", now)
	require.False(t, ok)
	b.block("203.0.113.7", now, now.Add(30*time.Second))
	left, ok := b.blocked("203.0.113.7", now.Add(10*time.Second))
	require.True(t, ok)
	require.Equal(t, 20*time.Second, left)
	_, ok = b.blocked("203.0.113.7", now.Add(30*time.Second))
	require.False(t, ok, "the block ends at its time")
	require.Empty(t, b.until, "and is forgotten")

	for i := range maxBlocked {
		b.block(strconv.Itoa(i), now, now.Add(time.Second))
	}
	b.block("one too many", now, now.Add(time.Second))
	_, ok = b.blocked("one too many", now)
	require.False(t, ok, "not remembered while every block is live")
	b.block("later", now.Add(time.Second), now.Add(time.Minute))
	_, ok = b.blocked("later", now.Add(time.Second))
	require.True(t, ok, "the ended blocks made room")
	require.Len(t, b.until, 1)
}

// TestGoodTokens vouches for a token for goodFor after it was added, and
// keeps no more than maxGood, making room from the stale ones.
func TestGoodTokens(t *testing.T) {
	t.Parallel()
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	var g goodTokens
	sum := sha256.Sum256([]byte("tock_aaaaaaaaaaaaa_secret"))
	require.False(t, g.has(sum, now))
	g.add(sum, now)
	require.True(t, g.has(sum, now.Add(goodFor-time.Nanosecond)))
	require.False(t, g.has(sum, now.Add(goodFor)))

	for i := range maxGood - 1 {
		g.add(sha256.Sum256([]byte(strconv.Itoa(i))), now)
	}
	extra := sha256.Sum256([]byte("one too many"))
	g.add(extra, now)
	require.False(t, g.has(extra, now), "not kept while every token is fresh")
	g.add(sum, now.Add(time.Second))
	require.True(t, g.has(sum, now.Add(time.Second)), "a token already kept is refreshed")
	g.add(extra, now.Add(goodFor))
	require.True(t, g.has(extra, now.Add(goodFor)), "the stale tokens made room")
}
